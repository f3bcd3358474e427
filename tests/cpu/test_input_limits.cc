// Implausible inputs found by a new-user trial: each must fail fast with a clear dak::Error
// instead of exhausting memory or silently producing garbage.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <unistd.h>
#include <string>

#include "core/checkpoint.h"
#include "core/error.h"
#include "error_test_util.h"
#include "core/model_config.h"
#include "core/op_graph.h"

namespace dak {
namespace {

namespace fs = std::filesystem;
const fs::path kFixture = fs::path(DAK_TEST_DATA_DIR) / "hf_parity" / "llama_gqa";

nlohmann::json fixture_config() {
  std::ifstream f(kFixture / "config.json");
  return nlohmann::json::parse(f);
}

using testing::expect_error;

TEST(InputLimits, HugeLayerCountIsRejectedBeforeAnyAllocation) {
  nlohmann::json j = fixture_config();
  j["num_hidden_layers"] = 2147483648LL;
  expect_error([&] { ModelConfig::from_hf_json(j, "config.json"); }, {"num_hidden_layers"});
}

TEST(InputLimits, SpecialTokenIdsOutsideTheVocabularyAreRejected) {
  nlohmann::json j = fixture_config();
  j["eos_token_id"] = 999999;
  expect_error([&] { ModelConfig::from_hf_json(j, "config.json"); }, {"eos_token_id"});
  j = fixture_config();
  j["bos_token_id"] = 1000000;
  expect_error([&] { ModelConfig::from_hf_json(j, "config.json"); }, {"bos_token_id"});
}

TEST(InputLimits, PlannerRejectsAnImplausibleBatch) {
  const ModelConfig c = ModelConfig::from_hf_json(fixture_config(), "config.json");
  StepShape s;
  s.batch = 100000000;
  expect_error([&] { build_op_graph(c, s); }, {"batch"});
}

TEST(InputLimits, ConfigWithFewerLayersThanTheCheckpointIsRejected) {
  const fs::path dir = fs::temp_directory_path() / ("dak_fewer_layers_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(kFixture / "model.safetensors", dir / "model.safetensors", fs::copy_options::overwrite_existing);
  nlohmann::json j = fixture_config();
  j["num_hidden_layers"] = 1;  // the checkpoint has 2
  std::ofstream(dir / "config.json") << j.dump();
  expect_error([&] { Checkpoint::open(dir); }, {"layer 1"});
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dak
