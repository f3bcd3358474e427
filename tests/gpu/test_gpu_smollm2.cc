// The default real model (SmolLM2-135M-Instruct, Q4_1 GGUF) on the GPU engine vs the CPU
// reference: perplexity of tests/data/smollm2/paragraph.txt within 1 % of the CPU value
// (issue 3, item 5), and the greedy continuation of the committed prompt.
// The model (98 MB) is installed by tools/setup.sh; it is skipped when absent unless
// DAK_REQUIRE_MODEL=1 (the device script sets it once the model has been carried there).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/checkpoint.h"
#include "core/cpu_model.h"
#include "core/generate.h"
#include "core/tokenizer.h"
#include "gpu/gpu_engine.h"
#include "gpu_test_util.h"

namespace {

namespace fs = std::filesystem;
const fs::path kModel = fs::path(DAK_DEFAULT_MODELS_DIR) / "SmolLM2-135M-Instruct.Q4_1.gguf";
const fs::path kData = fs::path(DAK_TEST_DATA_DIR) / "smollm2";

TEST(GpuSmolLM2, PerplexityWithinOnePercentOfCpuAndGreedyMatches) {
  DAK_REQUIRE_GPU_OR_SKIP();
  if (!fs::exists(kModel)) {
    const char* req = std::getenv("DAK_REQUIRE_MODEL");
    if (req && std::string(req) == "1") FAIL() << kModel << " is missing";
    GTEST_SKIP() << kModel << " is missing (run tools/setup.sh)";
  }
  auto ckpt = dak::Checkpoint::open(kModel);
  auto tok = dak::load_tokenizer(*ckpt);
  std::ifstream in(kData / "paragraph.txt", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::vector<int32_t> ids = tok->encode(ss.str(), true);
  ASSERT_GT(ids.size(), 100u);

  dak::CpuModel cpu(*ckpt);
  auto gpu = dak::gpu::make_gpu_engine(*ckpt, 0);
  const dak::PerplexityResult pc = dak::perplexity(cpu, ids);
  const dak::PerplexityResult pg = dak::perplexity(*gpu, ids);
  std::printf("[smollm2] perplexity cpu %.4f gpu %.4f (rel diff %.3f %%, %lld tokens)\n", pc.perplexity,
              pg.perplexity, 100.0 * std::abs(pg.perplexity / pc.perplexity - 1.0),
              static_cast<long long>(pc.tokens_scored));
  EXPECT_EQ(pc.tokens_scored, pg.tokens_scored);
  EXPECT_LT(std::abs(pg.perplexity / pc.perplexity - 1.0), 0.01);

  std::ifstream gj(kData / "greedy.json");
  ASSERT_TRUE(gj);
  const nlohmann::json g = nlohmann::json::parse(gj);
  const std::vector<int32_t> prompt = g["prompt_ids"].get<std::vector<int32_t>>();
  const std::vector<int32_t> want = g["generated_ids"].get<std::vector<int32_t>>();
  dak::GenerateOptions opts;
  opts.max_new_tokens = int64_t(want.size());
  const dak::GenerateResult r = dak::generate(*gpu, {prompt}, opts);
  ASSERT_EQ(r.sequences.size(), 1u);
  std::printf("[smollm2] gpu greedy: %s\n", tok->decode(r.sequences[0].generated_ids, true).c_str());
  // NOTE: bf16 weights/activations may flip a near-tie; the committed continuation's smallest
  // top-1/top-2 margin (CPU fp32) is 0.065, so identical ids are expected, and a mismatch is
  // reported with the text for inspection.
  EXPECT_EQ(r.sequences[0].generated_ids, want) << tok->decode(r.sequences[0].generated_ids, true);
}

}  // namespace
