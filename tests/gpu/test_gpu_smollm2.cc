// The default real model (SmolLM2-135M-Instruct, Q4_1 GGUF) on the GPU engine vs the CPU
// reference: perplexity of tests/data/smollm2/paragraph.txt within 1 % of the CPU value
// (issue 3, item 5), and the greedy continuation of the committed prompt; with the planner's
// offload forcing >= 50 % of the weights into host memory (the end-to-end issue, item 6): bitwise
// the same perplexity and greedy ids as the all-HBM engine on the same kernels (direct path), and
// zero-copy within 1 % of the CPU perplexity.
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
#include "core/placement.h"
#include "core/planner.h"
#include "core/tokenizer.h"
#include "gpu/gpu_engine.h"
#include "gpu/gpu_weights.h"
#include "gpu_test_util.h"

namespace {

namespace fs = std::filesystem;
const fs::path kModel = fs::path(DAK_DEFAULT_MODELS_DIR) / "SmolLM2-135M-Instruct.Q4_1.gguf";
const fs::path kData = fs::path(DAK_TEST_DATA_DIR) / "smollm2";

/// Skips the calling test when the model is absent (fails when DAK_REQUIRE_MODEL=1).
#define DAK_REQUIRE_MODEL_OR_SKIP()                                                 \
  do {                                                                              \
    if (!fs::exists(kModel)) {                                                      \
      const char* req = std::getenv("DAK_REQUIRE_MODEL");                           \
      if (req && std::string(req) == "1") FAIL() << kModel << " is missing";        \
      GTEST_SKIP() << kModel << " is missing (run tools/setup.sh)";                 \
    }                                                                               \
  } while (0)

/// Token ids of the committed paragraph (BOS first).
std::vector<int32_t> paragraph_ids(const dak::Tokenizer& tok) {
  std::ifstream in(kData / "paragraph.txt", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return tok.encode(ss.str(), true);
}

TEST(GpuSmolLM2, PerplexityWithinOnePercentOfCpuAndGreedyMatches) {
  DAK_REQUIRE_GPU_OR_SKIP();
  DAK_REQUIRE_MODEL_OR_SKIP();
  auto ckpt = dak::Checkpoint::open(kModel);
  auto tok = dak::load_tokenizer(*ckpt);
  const std::vector<int32_t> ids = paragraph_ids(*tok);
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

TEST(GpuSmolLM2, HalfTheWeightsInHostMemoryGiveTheSameResults) {
  DAK_REQUIRE_GPU_OR_SKIP();
  DAK_REQUIRE_MODEL_OR_SKIP();
  auto ckpt = dak::Checkpoint::open(kModel);
  auto tok = dak::load_tokenizer(*ckpt);
  const std::vector<int32_t> ids = paragraph_ids(*tok);
  std::ifstream gj(kData / "greedy.json");
  ASSERT_TRUE(gj);
  const nlohmann::json g = nlohmann::json::parse(gj);
  const std::vector<int32_t> prompt = g["prompt_ids"].get<std::vector<int32_t>>();
  const std::vector<int32_t> want = g["generated_ids"].get<std::vector<int32_t>>();
  ASSERT_LE(prompt.size() + want.size(), ids.size());

  // The planner's plan for the perplexity run (batch 1, the paragraph's length) at 60 % of the
  // weight + KV bytes on the host, direct path.
  dak::PlanRequest req;
  req.model_name = "SmolLM2-135M-Instruct";
  req.shape.batch = 1;
  req.shape.prompt_len = int64_t(ids.size()) - 1;
  req.shape.gen_len = 1;
  req.offload_ratio = 0.6;
  req.allow_staged = false;
  const dak::Plan plan = dak::make_plan(ckpt->config(), dak::HardwareProfile::h200_default(), req);
  dak::gpu::GpuEngineOptions opts{1024, dak::gpu::GemmBackend::kAuto};
  opts.placement = dak::placement_from_plan(plan, ckpt->config(), "SmolLM2 plan");
  const auto weights = dak::gpu::GpuWeights::plan_bytes(ckpt->config(), nullptr);
  ASSERT_GE(double(opts.placement->host_weight_bytes()), 0.5 * double(weights.hbm)) << "the plan offloads too little";

  dak::CpuModel cpu(*ckpt);
  dak::gpu::GpuEngine base(*ckpt, 0, dak::gpu::GpuEngineOptions{1024, dak::gpu::GemmBackend::kTiered});
  dak::gpu::GpuEngine direct(*ckpt, 0, opts);
  opts.offload_mode = dak::gpu::OffloadMode::kZeroCopy;
  dak::gpu::GpuEngine zero_copy(*ckpt, 0, opts);
  EXPECT_GE(double(direct.host_weight_bytes()), 0.5 * double(weights.hbm));
  const dak::PerplexityResult pc = dak::perplexity(cpu, ids);
  const dak::PerplexityResult pb = dak::perplexity(base, ids);
  const dak::PerplexityResult pd = dak::perplexity(direct, ids);
  const dak::PerplexityResult pz = dak::perplexity(zero_copy, ids);
  std::printf("[smollm2] offload %.1f %% of weights (%.1f MiB on the host): perplexity cpu %.4f, all-HBM %.6f, "
              "direct %.6f, zero-copy %.6f\n",
              100.0 * double(direct.host_weight_bytes()) / double(weights.hbm),
              double(direct.host_weight_bytes()) / (1 << 20), pc.perplexity, pb.perplexity, pd.perplexity,
              pz.perplexity);
  EXPECT_GT(direct.host_kv_bytes(), 0u) << "the plan's KV placement was not applied";
  EXPECT_EQ(pd.mean_nll, pb.mean_nll) << "direct offload changed the logits";
  EXPECT_LT(std::abs(pd.perplexity / pc.perplexity - 1.0), 0.01);
  EXPECT_LT(std::abs(pz.perplexity / pc.perplexity - 1.0), 0.01);

  dak::GenerateOptions gen;
  gen.max_new_tokens = int64_t(want.size());
  const dak::GenerateResult rb = dak::generate(base, {prompt}, gen);
  const dak::GenerateResult rd = dak::generate(direct, {prompt}, gen);
  EXPECT_EQ(rd.sequences[0].generated_ids, rb.sequences[0].generated_ids);
  EXPECT_EQ(rd.sequences[0].generated_ids, want) << tok->decode(rd.sequences[0].generated_ids, true);
}

}  // namespace
