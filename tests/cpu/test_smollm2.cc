// End-to-end on the default real model (SmolLM2-135M-Instruct, Q4_1 GGUF, installed by
// tools/setup.sh): GGUF loading + tokenizer + CpuModel + generate/perplexity.
//   - perplexity of a plain English paragraph (tests/data/smollm2/paragraph.txt) is below 40
//     (a broken forward pass gives hundreds to thousands; the model gives about 19);
//   - the greedy continuation of a fixed prompt equals tests/data/smollm2/greedy.json, whose
//     ids were produced by this engine and checked by reading the decoded text.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/checkpoint.h"
#include "core/cpu_model.h"
#include "core/generate.h"
#include "core/tokenizer.h"

namespace dak {
namespace {

namespace fs = std::filesystem;

const fs::path kModel = fs::path(DAK_DEFAULT_MODELS_DIR) / "SmolLM2-135M-Instruct.Q4_1.gguf";
const fs::path kData = fs::path(DAK_TEST_DATA_DIR) / "smollm2";

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class SmolLM2 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(kModel)) return;
    const auto t0 = std::chrono::steady_clock::now();
    ckpt_ = Checkpoint::open(kModel).release();
    model_ = new CpuModel(*ckpt_);
    load_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    tokenizer_ = load_tokenizer(*ckpt_).release();
    std::cout << fmt::format("[smollm2] model load (open + decode to fp32): {:.2f} s, {:.0f} MB of fp32 weights\n",
                             load_s_, model_->weight_bytes() / 1e6);
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete model_;
    delete ckpt_;
    tokenizer_ = nullptr;
    model_ = nullptr;
    ckpt_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kModel)) << kModel << " is missing: run tools/setup.sh to download the default model";
    ASSERT_NE(model_, nullptr);
  }

  static inline Checkpoint* ckpt_ = nullptr;
  static inline CpuModel* model_ = nullptr;
  static inline Tokenizer* tokenizer_ = nullptr;
  static inline double load_s_ = 0;
};

TEST_F(SmolLM2, EnglishParagraphPerplexityIsBelow40) {
  const std::vector<int32_t> ids = tokenizer_->encode(read_text(kData / "paragraph.txt"));
  ASSERT_GT(ids.size(), 100u);
  const PerplexityResult r = perplexity(*model_, ids);
  std::cout << fmt::format("[smollm2] paragraph: {} tokens, perplexity {:.3f}, {:.2f} s ({:.1f} tokens/s prefill)\n",
                           ids.size(), r.perplexity, r.seconds, double(ids.size()) / r.seconds);
  EXPECT_EQ(r.tokens_scored, int64_t(ids.size()) - 1);
  EXPECT_LT(r.perplexity, 40.0);
  EXPECT_GT(r.perplexity, 1.0);
}

TEST_F(SmolLM2, GreedyContinuationMatchesCommittedIds) {
  const nlohmann::json j = nlohmann::json::parse(read_text(kData / "greedy.json"));
  const auto prompt_ids = j.at("prompt_ids").get<std::vector<int32_t>>();
  const auto want = j.at("generated_ids").get<std::vector<int32_t>>();
  EXPECT_EQ(tokenizer_->encode(j.at("prompt").get<std::string>()), prompt_ids);

  GenerateOptions opts;
  opts.max_new_tokens = int64_t(want.size());
  const GenerateResult r = generate(*model_, {prompt_ids}, opts);
  const auto& got = r.sequences[0].generated_ids;
  EXPECT_EQ(got, want);
  EXPECT_EQ(tokenizer_->decode(got), j.at("text").get<std::string>());
  std::cout << fmt::format("[smollm2] greedy: \"{}\" | prefill {:.3f} s, decode {:.2f} tokens/s ({} steps)\n",
                           tokenizer_->decode(got), r.prefill_s, double(r.decode_steps) / r.decode_s,
                           r.decode_steps);
}

TEST_F(SmolLM2, RaggedBatchGivesTheSameGreedyIds) {
  // The committed prompt next to a longer one, as one ragged batch.
  const nlohmann::json j = nlohmann::json::parse(read_text(kData / "greedy.json"));
  const auto prompt_ids = j.at("prompt_ids").get<std::vector<int32_t>>();
  const auto want = j.at("generated_ids").get<std::vector<int32_t>>();
  const std::vector<int32_t> other = tokenizer_->encode("Every Saturday morning, my grandmother walked to the market");
  GenerateOptions opts;
  opts.max_new_tokens = int64_t(want.size());
  const GenerateResult r = generate(*model_, {other, prompt_ids}, opts);
  EXPECT_EQ(r.sequences[1].generated_ids, want);
  EXPECT_EQ(r.sequences[0].generated_ids.size(), want.size());
}

}  // namespace
}  // namespace dak
