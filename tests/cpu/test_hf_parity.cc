// CpuModel against Hugging Face transformers (the correctness oracle of DESIGN.md §6).
//
// Each folder tests/data/hf_parity/<name>/ holds a tiny random fp32 checkpoint (config.json,
// model.safetensors) and expected.json written by transformers on the GPU machine:
//   {"transformers_version", "torch_version",
//    "sequences": [{"input_ids": [...], "logits": [[V floats] per position]}],  (batch 1, eager)
//    "greedy":    [{"prompt_ids": [...], "generated_ids": [...], "margins": [top1 - top2]}]}
// The logits must match within 1e-4 relative error per sequence (‖got - ref‖ / ‖ref‖) when each
// sequence runs alone, when all run as one ragged batch, and when the first half is prefilled
// and the rest decoded token by token; greedy ids must be identical.
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/checkpoint.h"
#include "core/cpu_model.h"
#include "core/generate.h"

namespace dak {
namespace {

namespace fs = std::filesystem;

// fp32 against fp32 eager torch; the differences are summation order only (~1e-6).
constexpr double kRelTol = 1e-4;

// The fixtures tools generate (see the lead's generator script); all must be present.
const std::vector<std::string> kExpectedFixtures = {
    "opt",        "opt350m_style",     "llama_gqa", "llama_mqa_tied",
    "llama3_rope", "llama_linear_rope", "qwen2",     "mistral_swa", "qwen2_yarn", "llama3_rope_band"};

fs::path fixture_root() { return fs::path(DAK_TEST_DATA_DIR) / "hf_parity"; }

std::vector<std::string> fixture_names() {
  std::set<std::string> names(kExpectedFixtures.begin(), kExpectedFixtures.end());
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fixture_root(), ec))
    if (e.is_directory() && fs::exists(e.path() / "expected.json")) names.insert(e.path().filename().string());
  return {names.begin(), names.end()};
}

struct Sequence {
  std::vector<int32_t> ids;
  std::vector<std::vector<float>> logits;  // [n][V]
};

struct Greedy {
  std::vector<int32_t> prompt, generated;
  std::vector<double> margins;
};

struct Fixture {
  std::unique_ptr<Checkpoint> ckpt;
  std::unique_ptr<CpuModel> model;
  std::vector<Sequence> seqs;
  std::vector<Greedy> greedy;
  std::string versions;
};

/// The fixture `name`'s expected values, with the model read from `checkpoint` (default: the
/// fixture's own folder).
Fixture load_fixture(const std::string& name, const fs::path& checkpoint = {}) {
  const fs::path dir = fixture_root() / name;
  Fixture f;
  f.ckpt = Checkpoint::open(checkpoint.empty() ? dir : checkpoint);
  f.model = std::make_unique<CpuModel>(*f.ckpt);
  std::ifstream in(dir / "expected.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  f.versions = fmt::format("transformers {}, torch {}", j.value("transformers_version", "?"),
                           j.value("torch_version", "?"));
  for (const auto& s : j.at("sequences"))
    f.seqs.push_back({s.at("input_ids").get<std::vector<int32_t>>(),
                      s.at("logits").get<std::vector<std::vector<float>>>()});
  for (const auto& g : j.at("greedy"))
    f.greedy.push_back({g.at("prompt_ids").get<std::vector<int32_t>>(),
                        g.at("generated_ids").get<std::vector<int32_t>>(),
                        g.at("margins").get<std::vector<double>>()});
  return f;
}

/// Accumulates ‖got - ref‖² and ‖ref‖² of one sequence, and the largest |got - ref|.
struct ErrorAcc {
  double num = 0, den = 0, max_abs = 0;
  void add(const float* got, const std::vector<float>& ref) {
    for (size_t i = 0; i < ref.size(); ++i) {
      const double d = double(got[i]) - double(ref[i]);
      num += d * d;
      den += double(ref[i]) * double(ref[i]);
      max_abs = std::max(max_abs, std::abs(d));
    }
  }
  double rel() const { return std::sqrt(num / den); }
};

/// The error of `model`'s logits for sequence `sq` run alone (batch 1, teacher-forced).
ErrorAcc alone_error(CpuModel& model, const Sequence& sq) {
  const int64_t vocab = model.config().vocab_size;
  model.start(1, int64_t(sq.ids.size()));
  const std::vector<std::vector<int32_t>> batch{sq.ids};
  const std::vector<float> got = model.step(batch, true);
  ErrorAcc e;
  EXPECT_EQ(got.size(), sq.ids.size() * size_t(vocab));
  if (got.size() != sq.ids.size() * size_t(vocab)) {
    e.num = e.den = 1;  // rel() 1: fails the check
    return e;
  }
  for (size_t i = 0; i < sq.ids.size(); ++i) e.add(got.data() + i * vocab, sq.logits[i]);
  return e;
}

class HfParity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const fs::path dir = fixture_root() / GetParam();
    if (!fs::exists(dir / "expected.json") || !fs::exists(dir / "config.json")) {
      GTEST_FAIL() << "HF parity fixture '" << GetParam() << "' is missing under " << fixture_root()
                   << "; expected fixtures: " << fmt::format("{}", fmt::join(kExpectedFixtures, ", "))
                   << ". Generate them with transformers on the GPU machine (see the header of "
                      "this test for the format).";
    }
    f_ = load_fixture(GetParam());
    ASSERT_FALSE(f_.seqs.empty());
    vocab_ = f_.model->config().vocab_size;
  }

  void check(const char* mode, size_t s, const ErrorAcc& e) {
    std::cout << fmt::format("[hf_parity] {:<18} {:<16} seq {}: rel {:.2e}  max abs {:.2e}  ({})\n",
                             GetParam(), mode, s, e.rel(), e.max_abs, f_.versions);
    EXPECT_LT(e.rel(), kRelTol) << GetParam() << " " << mode << " sequence " << s << ", max abs error " << e.max_abs;
  }

  Fixture f_;
  int64_t vocab_ = 0;
};

TEST_P(HfParity, TeacherForcedLogits) {
  for (size_t s = 0; s < f_.seqs.size(); ++s) check("alone", s, alone_error(*f_.model, f_.seqs[s]));
}

TEST_P(HfParity, RaggedBatchLogits) {
  std::vector<std::vector<int32_t>> batch;
  size_t longest = 0;
  for (const Sequence& sq : f_.seqs) {
    batch.push_back(sq.ids);
    longest = std::max(longest, sq.ids.size());
  }
  f_.model->start(int64_t(batch.size()), int64_t(longest));
  const std::vector<float> got = f_.model->step(batch, true);
  size_t row = 0;
  for (size_t s = 0; s < f_.seqs.size(); ++s) {
    ErrorAcc e;
    for (size_t i = 0; i < f_.seqs[s].ids.size(); ++i, ++row) e.add(got.data() + row * vocab_, f_.seqs[s].logits[i]);
    check("ragged batch", s, e);
  }
  EXPECT_EQ(row * vocab_, got.size());
}

TEST_P(HfParity, PrefillThenDecodeLogits) {
  const size_t n_seq = f_.seqs.size();
  size_t longest = 0;
  for (const Sequence& sq : f_.seqs) longest = std::max(longest, sq.ids.size());
  f_.model->start(int64_t(n_seq), int64_t(longest));
  std::vector<size_t> half(n_seq);
  std::vector<std::vector<int32_t>> prefill(n_seq);
  std::vector<ErrorAcc> err(n_seq);
  for (size_t s = 0; s < n_seq; ++s) {
    half[s] = std::max<size_t>(1, f_.seqs[s].ids.size() / 2);
    prefill[s].assign(f_.seqs[s].ids.begin(), f_.seqs[s].ids.begin() + half[s]);
  }
  std::vector<float> got = f_.model->step(prefill, false);
  for (size_t s = 0; s < n_seq; ++s) err[s].add(got.data() + s * vocab_, f_.seqs[s].logits[half[s] - 1]);
  for (size_t i = 0;; ++i) {
    std::vector<std::vector<int32_t>> step(n_seq);
    bool any = false;
    for (size_t s = 0; s < n_seq; ++s) {
      if (half[s] + i < f_.seqs[s].ids.size()) {
        step[s] = {f_.seqs[s].ids[half[s] + i]};
        any = true;
      }
    }
    if (!any) break;
    got = f_.model->step(step, false);
    for (size_t s = 0; s < n_seq; ++s)
      if (!step[s].empty()) err[s].add(got.data() + s * vocab_, f_.seqs[s].logits[half[s] + i]);
  }
  for (size_t s = 0; s < n_seq; ++s) {
    check("prefill+decode", s, err[s]);
    EXPECT_EQ(f_.model->position(int64_t(s)), int64_t(f_.seqs[s].ids.size()));
  }
}

TEST_P(HfParity, GreedyIdsMatch) {
  ASSERT_FALSE(f_.greedy.empty());
  std::vector<std::vector<int32_t>> prompts;
  int64_t max_new = 0;
  for (const Greedy& g : f_.greedy) {
    // Each prompt alone, as HF ran it (no EOS stop: HF's ids are compared as produced).
    GenerateOptions opts;
    opts.max_new_tokens = int64_t(g.generated.size());
    const GenerateResult r = generate(*f_.model, {g.prompt}, opts);
    const double min_margin = g.margins.empty() ? 0 : *std::min_element(g.margins.begin(), g.margins.end());
    EXPECT_EQ(r.sequences[0].generated_ids, g.generated)
        << GetParam() << ": prompt of " << g.prompt.size() << " tokens (smallest HF top1-top2 margin "
        << min_margin << ")";
    prompts.push_back(g.prompt);
    max_new = std::max(max_new, int64_t(g.generated.size()));
  }
  // All prompts as one ragged batch.
  GenerateOptions opts;
  opts.max_new_tokens = max_new;
  const GenerateResult r = generate(*f_.model, prompts, opts);
  for (size_t i = 0; i < f_.greedy.size(); ++i) {
    const auto& want = f_.greedy[i].generated;
    const auto& got = r.sequences[i].generated_ids;
    ASSERT_GE(got.size(), want.size());
    EXPECT_EQ(std::vector<int32_t>(got.begin(), got.begin() + want.size()), want) << "batched prompt " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfParity, ::testing::ValuesIn(fixture_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// The llama3_rope_band fixture in the GGUF layout convert_hf_to_gguf.py gives Llama 3.1
// (tests/data/gguf/llama3_rope_band.gguf, by tools/make_gguf_fixtures.py, whose docstring says where
// it differs): q/k rows permuted, no scaling type, the per-frequency factors in rope_freqs.weight
// (one of them in the smooth band).
// dak reads them as ggml applies them, and must give transformers' logits and greedy ids.
TEST(HfParityGguf, Llama31RopeFreqsGgufGivesTransformersLogits) {
  Fixture f = load_fixture("llama3_rope_band", fs::path(DAK_TEST_DATA_DIR) / "gguf" / "llama3_rope_band.gguf");
  ASSERT_EQ(f.model->config().rope_freq_factors.size(), 8u);
  for (size_t s = 0; s < f.seqs.size(); ++s) {
    const ErrorAcc e = alone_error(*f.model, f.seqs[s]);
    EXPECT_LT(e.rel(), kRelTol) << "sequence " << s << ", max abs error " << e.max_abs << " (" << f.versions << ")";
  }
  for (const Greedy& g : f.greedy) {
    GenerateOptions opts;
    opts.max_new_tokens = int64_t(g.generated.size());
    EXPECT_EQ(generate(*f.model, {g.prompt}, opts).sequences[0].generated_ids, g.generated);
  }
}

}  // namespace
}  // namespace dak
