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

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(InputLimits, HugeLayerCountIsRejectedBeforeAnyAllocation) {
  nlohmann::json j = fixture_config();
  j["num_hidden_layers"] = 2147483648LL;
  const std::string msg = error_of([&] { ModelConfig::from_hf_json(j, "config.json"); });
  EXPECT_NE(msg.find("num_hidden_layers"), std::string::npos) << msg;
}

TEST(InputLimits, SpecialTokenIdsOutsideTheVocabularyAreRejected) {
  nlohmann::json j = fixture_config();
  j["eos_token_id"] = 999999;
  EXPECT_NE(error_of([&] { ModelConfig::from_hf_json(j, "config.json"); }).find("eos_token_id"), std::string::npos);
  j = fixture_config();
  j["bos_token_id"] = 1000000;
  EXPECT_NE(error_of([&] { ModelConfig::from_hf_json(j, "config.json"); }).find("bos_token_id"), std::string::npos);
}

TEST(InputLimits, PlannerRejectsAnImplausibleBatch) {
  const ModelConfig c = ModelConfig::from_hf_json(fixture_config(), "config.json");
  StepShape s;
  s.batch = 100000000;
  const std::string msg = error_of([&] { build_op_graph(c, s); });
  EXPECT_NE(msg.find("batch"), std::string::npos) << msg;
}

TEST(InputLimits, ConfigWithFewerLayersThanTheCheckpointIsRejected) {
  const fs::path dir = fs::temp_directory_path() / ("dak_fewer_layers_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(kFixture / "model.safetensors", dir / "model.safetensors", fs::copy_options::overwrite_existing);
  nlohmann::json j = fixture_config();
  j["num_hidden_layers"] = 1;  // the checkpoint has 2
  std::ofstream(dir / "config.json") << j.dump();
  const std::string msg = error_of([&] { Checkpoint::open(dir); });
  fs::remove_all(dir);
  EXPECT_NE(msg.find("layer 1"), std::string::npos) << msg;
}

}  // namespace
}  // namespace dak
