// Sampling against closed-form softmax probabilities, and generate() / perplexity() over a
// scripted Engine whose next-token distribution is known exactly.
#include <algorithm>
#include <array>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>

#include <gtest/gtest.h>

#include "core/error.h"
#include "error_test_util.h"
#include "core/generate.h"
#include "core/interrupt.h"

namespace dak {
namespace {

/// An Engine whose logits depend only on the last token: logit `peak` for (last + 1) % V,
/// 0 elsewhere (so p(next) = e^peak / (e^peak + V - 1)); peak 0 gives a uniform distribution.
class ScriptedEngine : public Engine {
 public:
  ScriptedEngine(int64_t vocab, int64_t context, float peak) : peak_(peak) {
    cfg_.vocab_size = vocab;
    cfg_.max_position_embeddings = context;
  }
  const ModelConfig& config() const override { return cfg_; }
  std::string device_name() const override { return "scripted"; }
  void start(int64_t batch, int64_t max_context) override {
    if (max_context > cfg_.max_position_embeddings) fail("context too long", "ScriptedEngine", "");
    starts.push_back({batch, max_context});
    pos_.assign(size_t(batch), 0);
    max_context_ = max_context;
  }
  std::vector<float> step(std::span<const std::vector<int32_t>> tokens, bool all_logits) override {
    if (int64_t(steps.size()) == interrupt_in_step) {  // as the CPU engine between its layers
      std::raise(SIGINT);
      throw_if_interrupted();
    }
    steps.emplace_back(tokens.begin(), tokens.end());
    const int64_t v = cfg_.vocab_size;
    std::vector<float> out;
    auto row = [&](int32_t last) {
      for (int64_t j = 0; j < v; ++j) out.push_back(j == (last + 1) % v ? peak_ : 0.0f);
    };
    for (size_t b = 0; b < tokens.size(); ++b) {
      pos_[b] += int64_t(tokens[b].size());
      if (pos_[b] > max_context_) fail("past max_context", "ScriptedEngine", "");
      if (all_logits) {
        for (int32_t id : tokens[b]) row(id);
      } else {
        row(tokens[b].empty() ? 0 : tokens[b].back());
      }
    }
    return out;
  }
  int64_t position(int64_t b) const override { return pos_[b]; }
  void reset(int64_t b) override {
    dak::check_sequence_index(b, int64_t(pos_.size()), "ScriptedEngine::reset");
    pos_[b] = 0;
    ++resets;
  }
  bool prefers_full_decode_steps() const override { return full_steps; }

  int64_t resets = 0;

  bool full_steps = false;                                 // as the GPU engine (its decode graph)
  int64_t interrupt_in_step = -1;                          // SIGINT inside that step (0-based), -1 none
  std::vector<std::pair<int64_t, int64_t>> starts;        // (batch, max_context)
  std::vector<std::vector<std::vector<int32_t>>> steps;   // tokens of every step

 private:
  ModelConfig cfg_;
  float peak_;
  std::vector<int64_t> pos_;
  int64_t max_context_ = 0;
};

using testing::expect_error;

// Draws n samples and returns the count per id.
std::map<int32_t, int> histogram(const std::vector<float>& logits, const SamplingParams& p, int n) {
  std::mt19937_64 rng = sequence_rng(p.seed, 0);
  std::map<int32_t, int> h;
  for (int i = 0; i < n; ++i) ++h[sample_token(logits, p, rng)];
  return h;
}

// Each count within 5 standard deviations of n * p (binomial).
void expect_frequencies(const std::map<int32_t, int>& h, const std::vector<double>& p, int n) {
  for (size_t i = 0; i < p.size(); ++i) {
    const double want = n * p[i], sd = std::sqrt(n * p[i] * (1 - p[i]));
    const int got = h.count(int32_t(i)) ? h.at(int32_t(i)) : 0;
    EXPECT_LE(std::abs(got - want), 5 * sd + 1e-9) << "id " << i << ": " << got << " draws, expected " << want;
  }
}

TEST(Engine, ASequenceIndexOutsideTheBatchIsRefusedWithItsPlace) {
  // The check of every engine's position() and reset() (CpuModel, GpuEngine, the scripted engine).
  dak::check_sequence_index(0, 1, "here");
  dak::check_sequence_index(7, 8, "here");
  for (const int64_t b : {int64_t(-1), int64_t(8), int64_t(9)}) {
    dak::testing::expect_error([&] { dak::check_sequence_index(b, 8, "CpuModel::reset"); },
                               {"sequence " + std::to_string(b) + " is outside the batch of 8", "where: CpuModel::reset",
                                "call start() with a larger batch"});
  }
}

TEST(SampleToken, GreedyPicksLowestIdOnTies) {
  std::mt19937_64 rng(1);
  SamplingParams greedy;
  EXPECT_EQ(sample_token(std::vector<float>{1, 3, 3, 2}, greedy, rng), 1);
  EXPECT_EQ(sample_token(std::vector<float>{-INFINITY, 1, 2}, greedy, rng), 2);
  EXPECT_EQ(sample_token(std::vector<float>{-INFINITY, -5}, greedy, rng), 1);
  EXPECT_EQ(sample_token(std::vector<float>{7}, greedy, rng), 0);
}

TEST(SampleToken, GreedyRejectsNonFiniteLogits) {
  // A broken checkpoint gives NaN logits; greedy decoding must say so, not emit id 0 forever.
  std::mt19937_64 rng(1);
  SamplingParams greedy;
  EXPECT_THROW(sample_token(std::vector<float>{NAN, 1, 2}, greedy, rng), Error);
  EXPECT_THROW(sample_token(std::vector<float>{-INFINITY, -INFINITY}, greedy, rng), Error);
}

TEST(SampleToken, TemperatureFollowsSoftmax) {
  // logits ln(1..4): p = k / 10 at T = 1; at T = 2, p ∝ sqrt(k).
  const std::vector<float> logits = {0.0f, std::log(2.0f), std::log(3.0f), std::log(4.0f)};
  const int n = 40000;
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 123;
  expect_frequencies(histogram(logits, p, n), {0.1, 0.2, 0.3, 0.4}, n);
  p.temperature = 2.0f;
  const double z = 1 + std::sqrt(2.0) + std::sqrt(3.0) + 2;
  expect_frequencies(histogram(logits, p, n), {1 / z, std::sqrt(2.0) / z, std::sqrt(3.0) / z, 2 / z}, n);
}

TEST(SampleToken, TopKAndTopPRestrictTheSupport) {
  // p = {0.05, 0.5, 0.15, 0.3} at T = 1.
  const std::vector<float> logits = {std::log(0.05f), std::log(0.5f), std::log(0.15f), std::log(0.3f)};
  const int n = 20000;
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 9;
  p.top_k = 2;  // {1, 3} renormalized: 0.625, 0.375
  expect_frequencies(histogram(logits, p, n), {0.0, 0.625, 0.0, 0.375}, n);
  p.top_k = 0;
  p.top_p = 0.75f;  // smallest prefix reaching 0.75: {0.5, 0.3}
  expect_frequencies(histogram(logits, p, n), {0.0, 0.625, 0.0, 0.375}, n);
  p.top_p = 0.9f;  // {0.5, 0.3, 0.15}
  expect_frequencies(histogram(logits, p, n), {0.0, 0.5 / 0.95, 0.15 / 0.95, 0.3 / 0.95}, n);
  // top_k = 1 and a tiny top_p are greedy.
  p.top_p = 1.0f;
  p.top_k = 1;
  expect_frequencies(histogram(logits, p, 100), {0, 1, 0, 0}, 100);
  p.top_k = 0;
  p.top_p = 1e-6f;
  expect_frequencies(histogram(logits, p, 100), {0, 1, 0, 0}, 100);
}

TEST(SampleToken, SameSeedSameIds) {
  std::vector<float> logits(50);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(float(i));
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 20;
  p.top_p = 0.95f;
  auto draw = [&](uint64_t seed, int64_t seq) {
    std::mt19937_64 rng = sequence_rng(seed, seq);
    std::vector<int32_t> ids;
    for (int i = 0; i < 64; ++i) ids.push_back(sample_token(logits, p, rng));
    return ids;
  };
  EXPECT_EQ(draw(5, 0), draw(5, 0));
  EXPECT_NE(draw(5, 0), draw(6, 0));
  EXPECT_NE(draw(5, 0), draw(5, 1));
}

TEST(SampleToken, RejectsInvalidParameters) {
  std::mt19937_64 rng(1);
  const std::vector<float> logits = {1, 2};
  auto with = [&](float t, int32_t k, float tp) {
    SamplingParams p;
    p.temperature = t;
    p.top_k = k;
    p.top_p = tp;
    return [&, p] { sample_token(logits, p, rng); };
  };
  expect_error(with(-1.0f, 0, 1.0f), {"temperature", "-1"});
  expect_error(with(NAN, 0, 1.0f), {"temperature"});
  expect_error(with(1.0f, -3, 1.0f), {"top_k", "-3"});
  expect_error(with(1.0f, 0, 0.0f), {"top_p"});
  expect_error(with(1.0f, 0, 1.5f), {"top_p", "1.5"});
  expect_error([&] { sample_token(std::vector<float>{}, SamplingParams{}, rng); }, {"logits"});
}

TEST(Generate, BatchedPrefillThenDecodeStopsAtEosPerSequence) {
  ScriptedEngine engine(10, 64, 5.0f);
  GenerateOptions opts;
  opts.max_new_tokens = 6;
  opts.eos_ids = {7};
  std::vector<std::pair<int64_t, int32_t>> seen;
  // Greedy continuation of each prompt counts up by one (mod 10).
  const GenerateResult r = generate(engine, {{1, 2, 3}, {5}, {8, 9}}, opts,
                                    [&](int64_t b, int32_t id) { seen.push_back({b, id}); });
  ASSERT_EQ(r.sequences.size(), 3u);
  EXPECT_EQ(r.sequences[0].generated_ids, (std::vector<int32_t>{4, 5, 6, 7}));
  EXPECT_TRUE(r.sequences[0].stopped_at_eos);
  EXPECT_EQ(r.sequences[1].generated_ids, (std::vector<int32_t>{6, 7}));
  EXPECT_TRUE(r.sequences[1].stopped_at_eos);
  EXPECT_EQ(r.sequences[2].generated_ids, (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_FALSE(r.sequences[2].stopped_at_eos);
  EXPECT_EQ(r.sequences[2].prompt_ids, (std::vector<int32_t>{8, 9}));
  EXPECT_EQ(seen.size(), 4u + 2u + 6u);
  // One start for 3 sequences sized to the longest prompt + new tokens, one batched prefill,
  // then single-token steps with finished sequences idle (empty lists).
  ASSERT_EQ(engine.starts.size(), 1u);
  EXPECT_EQ(engine.starts[0], (std::pair<int64_t, int64_t>{3, 9}));
  ASSERT_EQ(engine.steps.size(), 6u);
  EXPECT_EQ(engine.steps[0], (std::vector<std::vector<int32_t>>{{1, 2, 3}, {5}, {8, 9}}));
  EXPECT_EQ(engine.steps[1], (std::vector<std::vector<int32_t>>{{4}, {6}, {0}}));
  EXPECT_EQ(engine.steps[2], (std::vector<std::vector<int32_t>>{{5}, {}, {1}}));
  EXPECT_EQ(engine.steps[5], (std::vector<std::vector<int32_t>>{{}, {}, {4}}));
  EXPECT_EQ(r.decode_steps, 5);
  EXPECT_GE(r.prefill_s, 0.0);
  EXPECT_GE(r.decode_s, 0.0);
}

// --max-batch: max_batch slots of one engine batch, a finished sequence's slot taken by the next
// prompt (continuous batching); the ids, the callback's sequence numbers and the sampled streams are
// those of one batch, the positions stay in the context, and every prompt is admitted in order.
TEST(Generate, MaxBatchRefillsFinishedSlotsWithTheSameIds) {
  const std::vector<std::vector<int32_t>> prompts = {{1, 2, 3}, {5}, {8, 9}, {4}, {0, 1}, {6}, {2, 2, 2, 2}};
  GenerateOptions opts;
  opts.max_new_tokens = 6;
  opts.eos_ids = {7};
  opts.sampling.temperature = 1.0f;  // sampled: each sequence's stream must follow it into its slot
  opts.sampling.seed = 11;
  ScriptedEngine one(10, 64, 1.0f);
  std::vector<std::pair<int64_t, int32_t>> seen_one;
  const GenerateResult all = generate(one, prompts, opts, [&](int64_t b, int32_t id) { seen_one.push_back({b, id}); });
  ASSERT_EQ(one.starts.size(), 1u);
  EXPECT_EQ(all.refills, 0);
  int64_t eos_stops = 0;
  for (const auto& sq : all.sequences) eos_stops += sq.stopped_at_eos ? 1 : 0;
  EXPECT_GT(eos_stops, 0) << "some sequence should stop at EOS (seed 11), so that slots free at different steps";
  for (const bool full : {false, true}) {
    for (int64_t max_batch : {1, 2, 4, 7, 9}) {
      SCOPED_TRACE("max_batch " + std::to_string(max_batch) + (full ? " full steps" : ""));
      opts.max_batch = max_batch;
      ScriptedEngine slots(10, 64, 1.0f);
      slots.full_steps = full;
      std::vector<std::pair<int64_t, int32_t>> seen;
      const GenerateResult r = generate(slots, prompts, opts, [&](int64_t b, int32_t id) { seen.push_back({b, id}); });
      ASSERT_EQ(r.sequences.size(), prompts.size());
      for (size_t i = 0; i < prompts.size(); ++i) {
        EXPECT_EQ(r.sequences[i].prompt_ids, prompts[i]) << i;
        EXPECT_EQ(r.sequences[i].generated_ids, all.sequences[i].generated_ids) << i;
        EXPECT_EQ(r.sequences[i].stopped_at_eos, all.sequences[i].stopped_at_eos) << i;
      }
      // One start, for min(max_batch, count) slots and the run's context (4 + 6 = 10); every prompt
      // past the first batch took a finished sequence's slot.
      const int64_t count = int64_t(prompts.size()), batch = std::min<int64_t>(max_batch, count);
      EXPECT_EQ(generate_slot_count(count, max_batch), batch);
      ASSERT_EQ(slots.starts.size(), 1u);
      EXPECT_EQ(slots.starts[0], (std::pair<int64_t, int64_t>{batch, 10}));
      EXPECT_EQ(r.refills, count - batch);
      // Each prompt reaches the engine once, whole, in order: the first batch in the first step, the
      // others each in one slot of a later step.
      std::vector<std::vector<int32_t>> admitted;
      for (const auto& step : slots.steps) {
        for (const auto& t : step) {
          if (t.size() > 1 || (&step == &slots.steps.front() && !t.empty())) admitted.push_back(t);
        }
      }
      std::vector<std::vector<int32_t>> multi;  // the prompts longer than one token, in order
      for (const auto& p : prompts) {
        if (p.size() > 1 || batch == count) multi.push_back(p);
      }
      std::vector<std::vector<int32_t>> admitted_multi;
      for (const auto& t : admitted) {
        if (t.size() > 1 || batch == count) admitted_multi.push_back(t);
      }
      EXPECT_EQ(admitted_multi, multi);
      // The callback numbers sequences within the run: the same (sequence, id) pairs.
      std::vector<std::pair<int64_t, int32_t>> sorted = seen, sorted_one = seen_one;
      std::stable_sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.first < b.first; });
      std::stable_sort(sorted_one.begin(), sorted_one.end(), [](auto& a, auto& b) { return a.first < b.first; });
      EXPECT_EQ(sorted, sorted_one);
      // With full steps every step after the first gives every slot a token.
      if (full) {
        for (size_t k = 1; k < slots.steps.size(); ++k) {
          for (const auto& t : slots.steps[k]) EXPECT_FALSE(t.empty()) << "step " << k;
        }
      }
    }
  }
  // Fewer steps than waves when sequences stop at EOS: a freed slot does not wait for its batch.
  opts.max_batch = 2;
  opts.sampling = {};  // greedy: the scripted engine's next id is last + 1, EOS 7
  opts.max_new_tokens = 8;
  const std::vector<std::vector<int32_t>> staggered = {{6}, {0}, {5}, {1}};  // stop after 1, 7, 2 and 6 tokens
  ScriptedEngine e(10, 64, 8.0f);
  const GenerateResult r = generate(e, staggered, opts);
  EXPECT_EQ(r.sequences[0].generated_ids, (std::vector<int32_t>{7}));
  EXPECT_EQ(r.sequences[1].generated_ids, (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(r.sequences[2].generated_ids, (std::vector<int32_t>{6, 7}));
  EXPECT_EQ(r.sequences[3].generated_ids, (std::vector<int32_t>{2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(r.refills, 2);
  EXPECT_EQ(e.resets, 2);
  // Waves would take 6 decode steps for {6, 0} and 5 for {5, 1}: 11. Here {5} takes slot 0 in step 1
  // and {1} in step 3, beside {0}: 8 steps after the prefill.
  EXPECT_EQ(r.decode_steps, 8);
  EXPECT_EQ(r.decode_tokens, 1 + 7 + 2 + 6 - 2);  // every token but the first batch's first ones
  // -n 1 in one slot: every step after the first only prefills an admitted prompt, so no decode step
  // ran (TPOT n/a; the trial of session 31 read "TPOT 83 ms, 0.0 tokens/s").
  opts.max_new_tokens = 1;
  opts.max_batch = 1;
  ScriptedEngine one_token(10, 64, 8.0f);
  const GenerateResult n1 = generate(one_token, staggered, opts);
  EXPECT_EQ(n1.decode_steps, 0);
  EXPECT_EQ(n1.decode_tokens, 0);
  EXPECT_EQ(n1.decode_s, 0.0);
  EXPECT_EQ(n1.refills, 3);
  EXPECT_EQ(one_token.steps.size(), 4u);
  EXPECT_EQ(generate_slot_count(5, 0), 5);  // 0: every prompt at once
  opts.max_batch = -1;
  ScriptedEngine bad(10, 64, 1.0f);
  expect_error([&] { generate(bad, prompts, opts); }, {"max_batch must be >= 0, got -1", "--max-batch"});
  EXPECT_TRUE(bad.starts.empty());
}

TEST(LoadProgressText, BillionsOrMillionsAndTheLastLine) {
  EXPECT_EQ(load_progress_text(3'210'000'000, 6'740'000'000, 21.2),
            "dak: loading weights: 3.2 of 6.7 billion parameters (48%), 21 s");
  EXPECT_EQ(load_progress_text(6'740'000'000, 6'740'000'000, 43.4),
            "dak: loading weights: done, 6.7 billion parameters in 43 s");
  EXPECT_EQ(load_progress_text(10'000'000, 134'500'000, 2.6),
            "dak: loading weights: 10.0 of 134.5 million parameters (7%), 3 s");
  EXPECT_EQ(load_progress_text(0, 0, 0.0), "dak: loading weights: done, 0.0 million parameters in 0 s");
}

TEST(Generate, RejectsEmptyPromptsAndContextOverflow) {
  ScriptedEngine engine(10, 16, 1.0f);
  GenerateOptions opts;
  opts.max_new_tokens = 10;
  expect_error([&] { generate(engine, {}, opts); }, {"prompt"});
  expect_error([&] { generate(engine, {{1, 2}, {}}, opts); }, {"prompt 2 of 2 is empty"});
  // 8 + 10 = 18 > 16: both numbers, the limit and the way out.
  expect_error([&] { generate(engine, {{1, 2, 3, 4, 5, 6, 7, 8}}, opts); },
               {"8 tokens", "10 new tokens", "18", "16", "--max-new-tokens 8", "shorter prompt"});
  // A count near 2^63 (no signed overflow in the check) and a prompt that alone fills the context
  // with more new tokens than the context: each fix is one a user can follow.
  opts.max_new_tokens = std::numeric_limits<int64_t>::max();
  expect_error([&] { generate(engine, {{1, 2, 3}}, opts); }, {"over 2^63", "--max-new-tokens 13 or less"});
  opts.max_new_tokens = 20;
  // (New-user trial, session 34: a 16-token prompt with --max-context 8 and the default 64 new tokens
  // was told to use "--max-new-tokens 7 or less", which cannot help.)
  expect_error([&] { generate(engine, std::vector<std::vector<int32_t>>{std::vector<int32_t>(16, 1)}, opts); },
               {"the prompt has 16 tokens, which fills the model context of 16 tokens: no room for a new token",
                "shorten the prompt to at most 15 tokens", "<= 16"});
  opts.max_context = 8;
  opts.max_new_tokens = 64;
  expect_error([&] { check_generate_request({std::vector<int32_t>(16, 1)}, opts, 16, 10); },
               {"more than the --max-context of 8 tokens", "at most 7 tokens",
                "raise --max-context (up to the model's 16)"});
  opts.max_context = 0;
  // Singular counts, 1-based prompt numbers in a batch (the trial read "prompt 0 has 1 tokens").
  opts.max_new_tokens = 16;
  expect_error([&] { generate(engine, {{1, 2}, {1}}, opts); },
               {"prompt 1 of 2 has 2 tokens; with 16 new tokens that is 18"});
  // The longest prompt is named, whose fix holds for the batch (trial of session 49: the first was,
  // and its "--max-new-tokens 15 or less" was then refused for the longer second prompt).
  expect_error([&] { generate(engine, {{1}, {1, 2, 3}}, opts); },
               {"prompt 2 of 2 has 3 tokens; with 16 new tokens that is 19", "--max-new-tokens 13 or less"});
  opts.max_new_tokens = 1;
  opts.max_context = 1;
  expect_error([&] { generate(engine, {{1}}, opts); },
               {"the prompt has 1 token; with 1 new token that is 2, more than the --max-context of 1 token",
                "no room for a new token", "raise --max-context"});
  // A model whose whole context is 1 token (trial 27: the fix named a --max-context no command has).
  {
    ScriptedEngine one(10, 1, 1.0f);
    opts.max_context = 0;
    try {
      generate(one, {{1}}, opts);
      ADD_FAILURE() << "a 1-token context generated";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("use a model with a longer context"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find("--max-context"), std::string::npos) << e.what();
    }
  }
  opts.max_context = 0;
  opts.max_new_tokens = 4;
  expect_error([&] { generate(engine, std::vector<std::vector<int32_t>>{std::vector<int32_t>(17, 1)}, opts); },
               {"at most 12 tokens"});
  opts.max_new_tokens = 10;
  opts.max_context = 12;
  expect_error([&] { generate(engine, {{1, 2, 3}}, opts); }, {"13", "12"});
  opts.max_context = 17;
  expect_error([&] { generate(engine, {{1}}, opts); }, {"17", "16"});
  opts.max_context = 0;
  opts.max_new_tokens = -1;
  expect_error([&] { generate(engine, {{1}}, opts); }, {"max_new_tokens"});
  EXPECT_TRUE(engine.steps.empty());
}

TEST(Generate, IdsOutsideTheVocabularyNameThePrompt) {
  // New-user trial: such an id was reported from the engine, `where: CpuModel::step`. generate() names
  // the prompt, before the engine sees any of them.
  ScriptedEngine engine(10, 64, 1.0f);
  GenerateOptions opts;
  opts.max_new_tokens = 2;
  try {
    generate(engine, {{1, 2}, {3, 10, 4}}, opts);
    ADD_FAILURE() << "no dak::Error for id 10 in a vocabulary of 10";
  } catch (const Error& e) {
    EXPECT_EQ(e.what_part(), "token id 10 (token 2 of prompt 2 of 2) is outside the model's vocabulary of 10");
    EXPECT_EQ(e.where_part(), "prompt 2 of 2");
    EXPECT_NE(e.fix_part().find("give ids from 0 to 9"), std::string::npos) << e.fix_part();
  }
  expect_error([&] { generate(engine, {{-1}}, opts); }, {"token id -1 (token 1 of the prompt)", "where: the prompt"});
  EXPECT_TRUE(engine.starts.empty());
  EXPECT_TRUE(engine.steps.empty());
  // The same for perplexity(): the text's tokens.
  expect_error([&] { perplexity(engine, std::vector<int32_t>{1, 2, 12}); },
               {"token id 12 (token 3 of the text) is outside the model's vocabulary of 10", "where: the text's tokens"});
  EXPECT_TRUE(engine.steps.empty());
}

TEST(Perplexity, MatchesTheClosedFormOverWindows) {
  // Every next token is the predicted one, with p = e^a / (e^a + V - 1).
  const int64_t v = 10;
  const float a = 2.0f;
  std::vector<int32_t> ids;
  for (int i = 0; i < 23; ++i) ids.push_back(i % 10);
  const double p = std::exp(double(a)) / (std::exp(double(a)) + double(v - 1));
  for (int64_t window : {0, 5, 2, 22, 23}) {
    ScriptedEngine engine(v, 64, a);
    const PerplexityResult r = perplexity(engine, ids, window);
    EXPECT_EQ(r.tokens_scored, 22) << "window " << window;
    EXPECT_NEAR(r.perplexity, 1.0 / p, 1e-9 / p) << "window " << window;
    EXPECT_NEAR(r.mean_nll, -std::log(p), 1e-12);
    // Windows overlap by the one context token only and never exceed the window size.
    int64_t fed = 0;
    for (size_t s = 0; s < engine.steps.size(); ++s) {
      const int64_t len = int64_t(engine.steps[s][0].size());
      EXPECT_LE(len, window == 0 ? 64 : window);
      fed += len;
    }
    EXPECT_EQ(fed, 23 + int64_t(engine.steps.size()) - 1);
  }
  // Uniform logits: perplexity == vocabulary size.
  ScriptedEngine uniform(v, 64, 0.0f);
  EXPECT_NEAR(perplexity(uniform, ids, 4).perplexity, double(v), 1e-9);
}

TEST(Perplexity, ReportsEachWindowToItsProgressCallback) {
  // 23 ids, windows of 9: tokens 1..22 scored as 8 + 8 + 6; then the end.
  ScriptedEngine engine(10, 64, 1.0f);
  std::vector<int32_t> ids(23);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i % 10);
  std::vector<std::array<int64_t, 3>> calls;
  perplexity(engine, ids, 9, [&](int64_t scored, int64_t window, int64_t total) {
    calls.push_back({scored, window, total});
  });
  const std::vector<std::array<int64_t, 3>> want = {{0, 8, 22}, {8, 8, 22}, {16, 6, 22}, {22, 0, 22}};
  EXPECT_EQ(calls, want);
}

// Ctrl-C inside an InterruptScope (core/interrupt.h): generate() stops before the next step and
// keeps every sequence's tokens so far; perplexity() before the next window, with the score of the
// windows done (NaN where none was).
TEST(Interrupt, GenerateKeepsTheTokensOfTheStepsBeforeIt) {
  ScriptedEngine engine(10, 64, 5.0f);
  GenerateOptions opts;
  opts.max_new_tokens = 20;
  const InterruptScope scope;
  int64_t calls = 0;
  const GenerateResult r = generate(engine, {{1, 2}, {3}}, opts, [&](int64_t, int32_t) {
    if (++calls == 6) std::raise(SIGINT);  // during the third step (two sequences a step)
  });
  EXPECT_TRUE(r.interrupted);
  EXPECT_TRUE(interrupt_requested());
  EXPECT_EQ(interrupt_signal(), SIGINT);
  ASSERT_EQ(r.sequences.size(), 2u);
  EXPECT_EQ(r.sequences[0].generated_ids, (std::vector<int32_t>{3, 4, 5}));
  EXPECT_EQ(r.sequences[1].generated_ids, (std::vector<int32_t>{4, 5, 6}));
  EXPECT_EQ(engine.steps.size(), 3u);
}

TEST(Interrupt, WithinAStepTheEarlierStepsAreKept) {
  ScriptedEngine engine(10, 64, 5.0f);
  engine.interrupt_in_step = 2;
  GenerateOptions opts;
  opts.max_new_tokens = 20;
  const InterruptScope scope;
  const GenerateResult r = generate(engine, {{1}}, opts);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.sequences[0].generated_ids, (std::vector<int32_t>{2, 3}));
  std::vector<int32_t> ids(23, 1);
  ScriptedEngine windows(10, 64, 1.0f);
  windows.interrupt_in_step = 1;
  const InterruptScope again;
  const PerplexityResult p = perplexity(windows, ids, 9);
  EXPECT_TRUE(p.interrupted);
  EXPECT_EQ(p.tokens_scored, 8);
}

TEST(Interrupt, PerplexityKeepsTheScoreOfTheWindowsBeforeIt) {
  std::vector<int32_t> ids(23);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i % 10);
  ScriptedEngine whole(10, 64, 1.0f);
  const PerplexityResult all = perplexity(whole, ids, 9);
  EXPECT_FALSE(all.interrupted);
  EXPECT_EQ(all.tokens_total, 22);
  // Interrupted while the second window's progress is reported: the first window's 8 tokens.
  ScriptedEngine engine(10, 64, 1.0f);
  const InterruptScope scope;
  const PerplexityResult r = perplexity(engine, ids, 9, [&](int64_t scored, int64_t, int64_t) {
    if (scored == 8) std::raise(SIGINT);
  });
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.tokens_scored, 16);  // the window that was starting still runs: 8 + 8
  EXPECT_EQ(r.tokens_total, 22);
  EXPECT_NEAR(r.mean_nll, all.mean_nll, 1e-12);  // every token scores alike here
}

TEST(Interrupt, PerplexityInterruptedBeforeItsFirstWindowHasNoScore) {
  std::vector<int32_t> ids(23, 1);
  ScriptedEngine none(10, 64, 1.0f);
  const InterruptScope scope;  // a new scope clears the flag of an earlier one
  EXPECT_FALSE(interrupt_requested());
  std::raise(SIGTERM);
  const PerplexityResult n = perplexity(none, ids, 9);
  EXPECT_TRUE(n.interrupted);
  EXPECT_EQ(interrupt_signal(), SIGTERM);
  EXPECT_EQ(n.tokens_scored, 0);
  EXPECT_TRUE(std::isnan(n.perplexity));
  EXPECT_TRUE(none.steps.empty());
}

TEST(Perplexity, RejectsTooShortInputAndBadWindows) {
  ScriptedEngine engine(10, 8, 1.0f);
  const std::vector<int32_t> one = {1}, many = {1, 2, 3};
  expect_error([&] { perplexity(engine, one); }, {"2 tokens"});
  expect_error([&] { perplexity(engine, many, 1); }, {"1", "8"});
  expect_error([&] { perplexity(engine, many, 9); }, {"9", "8"});
}

// What a PrefillProgress wrote to its FILE for `calls` of (tokens, layers done, layers).
std::string progress_output(bool terminal, double after_s,
                            const std::vector<std::array<int64_t, 3>>& calls) {
  std::FILE* f = std::tmpfile();
  EXPECT_NE(f, nullptr);
  if (!f) return "";
  PrefillProgress progress(f, terminal, after_s, /*every_s=*/0.0);
  for (const auto& [tokens, done, layers] : calls) progress(tokens, done, layers);
  std::rewind(f);
  std::string out;
  for (int ch; (ch = std::fgetc(f)) != EOF;) out += char(ch);
  std::fclose(f);
  return out;
}

TEST(PrefillProgress, ReportsLayersOfTheFirstStepOnlyOnceItIsSlow) {
  // Long CPU prefills printed nothing for minutes. The prefill (700 tokens, 4 layers) is reported
  // from its start; the decode step after it (1 token) is not.
  const std::vector<std::array<int64_t, 3>> calls = {{700, 0, 4}, {700, 1, 4}, {700, 2, 4}, {700, 3, 4},
                                                      {700, 4, 4}, {1, 0, 4},   {1, 1, 4},   {1, 4, 4}};
  const std::string log = progress_output(/*terminal=*/false, /*after_s=*/0.0, calls);
  for (const char* line : {"\ndak: prefill of 700 prompt tokens: layer 1 of 4 (25%), ",
                           "\ndak: prefill of 700 prompt tokens: layer 3 of 4 (75%), ",
                           "\ndak: prefill of 700 prompt tokens: done in "}) {
    EXPECT_NE(("\n" + log).find(line), std::string::npos) << log;
  }
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 4) << log;
  EXPECT_EQ(log.find('\r'), std::string::npos) << log;
  EXPECT_EQ(log.find("prefill of 1 "), std::string::npos) << log;
  // On a terminal the line is rewritten in place, blanked to the length of the one it replaces,
  // and ends with a newline.
  const std::string tty = progress_output(/*terminal=*/true, 0.0, calls);
  std::vector<std::string> lines;
  for (size_t i = tty.find('\r'); i != std::string::npos;) {
    const size_t next = tty.find('\r', i + 1);
    lines.push_back(tty.substr(i + 1, next == std::string::npos ? std::string::npos : next - i - 1));
    i = next;
  }
  ASSERT_EQ(lines.size(), 4u) << tty;
  EXPECT_EQ(tty[0], '\r') << tty;
  EXPECT_EQ(lines[0].rfind("dak: prefill of 700 prompt tokens: layer 1 of 4 (25%), ", 0), 0u) << tty;
  EXPECT_EQ(lines[3].rfind("dak: prefill of 700 prompt tokens: done in ", 0), 0u) << tty;
  EXPECT_EQ(lines[3].back(), '\n') << tty;
  EXPECT_EQ(lines[3].size() - 1, lines[2].size()) << tty;  // "done in" is shorter: padded with blanks
  EXPECT_EQ(std::count(tty.begin(), tty.end(), '\n'), 1) << tty;
  // A quick prefill prints nothing.
  EXPECT_EQ(progress_output(false, /*after_s=*/3600.0, calls), "");
}

// A line left unfinished (the work failed: a load that threw) ends with a newline on a terminal, so the
// error printed next starts on its own line (the review of session 29).
TEST(ProgressLine, AnUnfinishedTerminalLineIsEndedWhenDestroyed) {
  for (const bool terminal : {true, false}) {
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    {
      ProgressLine line(f, terminal, /*after_s=*/0.0, /*every_s=*/0.0);
      line.update("dak: loading weights: 1.0 of 2.0 million parameters (50%), 3 s");
    }
    std::rewind(f);
    std::string out;
    for (int ch; (ch = std::fgetc(f)) != EOF;) out += char(ch);
    std::fclose(f);
    EXPECT_EQ(out, terminal ? "\rdak: loading weights: 1.0 of 2.0 million parameters (50%), 3 s\n"
                            : "dak: loading weights: 1.0 of 2.0 million parameters (50%), 3 s\n")
        << terminal;
  }
}

TEST(ProgressLine, ShowsUpdatesOnlyAfterItsSilentPeriodAndFinishesOnce) {
  auto run = [](bool terminal, double after_s) {
    std::FILE* f = std::tmpfile();
    EXPECT_NE(f, nullptr);
    if (!f) return std::string();
    ProgressLine line(f, terminal, after_s, /*every_s=*/0.0);
    line.update("dak: step 1 of 2, long text");
    line.update("dak: step 2 of 2");
    line.finish("dak: done");
    line.finish("dak: done again");  // ignored
    line.update("dak: late");        // ignored
    std::rewind(f);
    std::string out;
    for (int ch; (ch = std::fgetc(f)) != EOF;) out += char(ch);
    std::fclose(f);
    return out;
  };
  EXPECT_EQ(run(false, 0.0), "dak: step 1 of 2, long text\ndak: step 2 of 2\ndak: done\n");
  // On a terminal: rewritten in place, each line blanked to the length of the one it replaces.
  EXPECT_EQ(run(true, 0.0), "\rdak: step 1 of 2, long text\rdak: step 2 of 2           \rdak: done       \n");
  EXPECT_EQ(run(false, 3600.0), "");  // quick work prints nothing, not even the end
}

TEST(Generate, FinishedSequencesStayInFullDecodeSteps) {
  // Sequences that stop at EOS at different steps: an engine that prefers full decode steps (the
  // GPU's graph) gets every sequence in every decode step, one token each, the finished ones with
  // their last token; the results are those of the engine that gets only the active sequences, the
  // positions stay within the context (ScriptedEngine throws past it), with and without --max-batch
  // and --max-context.
  const std::vector<std::vector<int32_t>> prompts = {{1, 3}, {7}, {2, 5, 9}, {4}};
  for (const int64_t max_batch : {int64_t(0), int64_t(3)}) {
    for (const int64_t max_context : {int64_t(0), int64_t(15)}) {
      GenerateOptions o;
      o.max_new_tokens = 12;
      o.eos_ids = {10};
      o.max_batch = max_batch;
      o.max_context = max_context;
      ScriptedEngine partial(16, 64, 8.0f), full(16, 64, 8.0f);
      full.full_steps = true;
      const GenerateResult a = generate(partial, prompts, o), b = generate(full, prompts, o);
      ASSERT_EQ(a.sequences.size(), b.sequences.size());
      for (size_t i = 0; i < a.sequences.size(); ++i) {
        EXPECT_EQ(a.sequences[i].generated_ids, b.sequences[i].generated_ids) << i;
        EXPECT_EQ(a.sequences[i].stopped_at_eos, b.sequences[i].stopped_at_eos) << i;
        EXPECT_TRUE(b.sequences[i].stopped_at_eos) << i;
      }
      EXPECT_EQ(a.decode_steps, b.decode_steps);
      EXPECT_EQ(a.sequences[0].generated_ids.size(), 7u);  // 4, 5, ..., 10
      EXPECT_EQ(a.sequences[2].generated_ids.size(), 1u);  // 10 at once
      bool partial_seen = false;
      for (const auto& step : partial.steps) {
        for (const auto& t : step) partial_seen = partial_seen || t.empty();
      }
      EXPECT_TRUE(partial_seen) << "the sequences should stop at different steps";
      const auto tokens_fed = [](const ScriptedEngine& e) {
        size_t n = 0;
        for (const auto& step : e.steps) {
          for (const auto& t : step) n += t.size();
        }
        return n;
      };
      EXPECT_GT(tokens_fed(full), tokens_fed(partial)) << "the finished sequences got no tokens";
      ASSERT_EQ(full.starts.size(), partial.starts.size());
      for (size_t k = 0; k < full.steps.size(); ++k) {
        const bool prefill = k == 0 || (max_batch > 0 && full.steps[k].size() != full.steps[k - 1].size()) ||
                             std::any_of(full.steps[k].begin(), full.steps[k].end(), [](const auto& t) { return t.size() > 1; });
        if (prefill) continue;
        for (const auto& t : full.steps[k]) EXPECT_EQ(t.size(), 1u) << "step " << k;
      }
    }
  }
}

}  // namespace
}  // namespace dak

namespace {

TEST(FrameSequenceText, NoLineGainsBlanksAtItsEnd) {
  // dak generate's batch framing (README, "Output"); the second trial of session 26 found lines of
  // blanks only: a blank line indented, an empty CRLF line, and "[0] " before a text that starts on a
  // new line.
  EXPECT_EQ(dak::frame_sequence_text("[0] ", "one line"), "[0] one line");
  EXPECT_EQ(dak::frame_sequence_text("[0] ", "a\nb\n\nc\n"), "[0] a\n    b\n\n    c\n");
  EXPECT_EQ(dak::frame_sequence_text("[1] ", "a\n  \nb"), "[1] a\n  \n    b");
  EXPECT_EQ(dak::frame_sequence_text("[1] ", "a\r\n\r\nb\r\n"), "[1] a\r\n\r\n    b\r\n");
  EXPECT_EQ(dak::frame_sequence_text("[0] ", "\nafter"), "[0]\n    after");
  EXPECT_EQ(dak::frame_sequence_text("[0] ", ""), "[0]");
  EXPECT_EQ(dak::frame_sequence_text("[10] ", "x\ny"), "[10] x\n     y");
}

}  // namespace
