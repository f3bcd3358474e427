// The notice before a long CPU-path prefill (new-user trial: an 8191-token prompt ran ~47 s a layer
// on the CPU reference path without a word): the estimate and when the notice fires, without
// running a long prefill.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cpu_model.h"
#include "core/model_config.h"

namespace dak {
namespace {

/// SmolLM2-135M's sizes (the default model): the rates were fitted to its prefill on 2 cores.
ModelConfig smollm2() {
  const nlohmann::json j = {{"model_type", "llama"},     {"hidden_size", 576},          {"intermediate_size", 1536},
                            {"num_hidden_layers", 30},   {"num_attention_heads", 9},    {"num_key_value_heads", 3},
                            {"vocab_size", 49152},       {"max_position_embeddings", 8192},
                            {"tie_word_embeddings", true}, {"rope_theta", 100000}};
  return ModelConfig::from_hf_json(j, "config.json");
}

TEST(CpuPrefillEstimate, FollowsTheMeasuredPrefillTimes) {
  // Measured on the 2-core dev machine: 1024 / 2048 / 4096 tokens took 4.9 / 16.0 / 55.8 s.
  const ModelConfig c = smollm2();
  const struct {
    int64_t tokens;
    double measured_s;
  } points[] = {{1024, 4.9}, {2048, 16.0}, {4096, 55.8}};
  for (const auto& p : points) {
    const double est = estimate_cpu_prefill_s(c, p.tokens, /*threads=*/2);
    EXPECT_NEAR(est, p.measured_s, 0.15 * p.measured_s) << p.tokens << " tokens";
  }
  // Quadratic attention: twice the prompt, more than twice the time; twice the cores, half of it.
  EXPECT_GT(estimate_cpu_prefill_s(c, 8192, 2), 3.0 * estimate_cpu_prefill_s(c, 4096, 2));
  EXPECT_DOUBLE_EQ(estimate_cpu_prefill_s(c, 8192, 4), estimate_cpu_prefill_s(c, 8192, 2) / 2);
  // A sliding window bounds the attention: the same prompt costs less.
  ModelConfig windowed = c;
  windowed.sliding_window = 512;
  EXPECT_LT(estimate_cpu_prefill_s(windowed, 8192, 2), 0.5 * estimate_cpu_prefill_s(c, 8192, 2));
}

TEST(CpuPrefillEstimate, NoticeFiresOnlyForAClearlyLongPrefill) {
  const ModelConfig c = smollm2();
  // The trial's prompt: 8191 tokens, 208 s at the fitted rates on 2 cores.
  const std::vector<int64_t> trial = {8191};
  const std::string notice = long_cpu_prefill_notice(c, trial, 2);
  // About 3 min (208 s, to the nearest minute): not "4 min or more", which a new-user trial's 3.1 min run
  // (186 s on idle cores) proved no bound.
  EXPECT_NE(notice.find("the prefill of 8191 prompt tokens x 30 layers on the CPU reference path will take about 3 min "
                        "(estimated for 2 cores)"),
            std::string::npos)
      << notice;
  EXPECT_NE(notice.find("run it on a GPU (--device cuda) or give a shorter prompt"), std::string::npos) << notice;
  // No usable GPU here (the trial's machine): --device cuda would only be refused, so it is not suggested.
  const std::string no_gpu = long_cpu_prefill_notice(c, trial, 2, {}, /*gpu_usable=*/false);
  EXPECT_EQ(no_gpu.find("--device cuda"), std::string::npos) << no_gpu;
  EXPECT_NE(no_gpu.find("run it on a machine with a usable GPU or give a shorter prompt"), std::string::npos) << no_gpu;
  const std::string ppl = dak::long_cpu_perplexity_notice(c, 99999999, 8192, 2, {}, "", /*gpu_usable=*/false);
  EXPECT_EQ(ppl.find("--device cuda"), std::string::npos) << ppl;
  EXPECT_NE(ppl.find("run it on a machine with a usable GPU, or score a shorter text"), std::string::npos) << ppl;
  // Short prompts, or a long one on many cores: no notice.
  for (const std::vector<int64_t>& lens : {std::vector<int64_t>{7}, std::vector<int64_t>{2048},
                                           std::vector<int64_t>{2048, 2048}}) {
    EXPECT_EQ(long_cpu_prefill_notice(c, lens, 2), "") << lens.size() << " x " << lens[0];
  }
  EXPECT_EQ(long_cpu_prefill_notice(c, trial, 64), "");
  // A batch adds up: six prompts of 4096 tokens (one takes ~56 s) are over the threshold.
  const std::string batch = long_cpu_prefill_notice(c, std::vector<int64_t>(6, 4096), 2);
  EXPECT_NE(batch.find("the prefill of 24576 prompt tokens x 30 layers"), std::string::npos) << batch;
  EXPECT_NE(long_cpu_prefill_notice(c, std::vector<int64_t>{1 << 20}, 2).find(" h (estimated"), std::string::npos);
}

TEST(CpuPrefillEstimate, PerplexityIsTheSumOfItsWindows) {
  // New-user trial: a 100 MB text (99,999,999 tokens) was scored at ~10 tokens/s on the CPU path with
  // no word of how long it would take; dak perplexity now prints this estimate first, with the same rates.
  const ModelConfig c = smollm2();
  // One window: the prefill of the text plus the head's logits at each scored position.
  const double one = estimate_cpu_perplexity_s(c, 4096, 8192, 2);
  EXPECT_GT(one, estimate_cpu_prefill_s(c, 4096, 2));
  EXPECT_LT(one, 1.2 * estimate_cpu_prefill_s(c, 4096, 2));
  // Windows of 8192 overlap by one token: 3 * 8191 + 1 tokens are three full windows.
  const double three = estimate_cpu_perplexity_s(c, 3 * 8191 + 1, 8192, 2);
  EXPECT_NEAR(three, 3 * estimate_cpu_perplexity_s(c, 8192, 8192, 2), 1e-6 * three);
  // A shorter window makes the quadratic attention cheaper.
  EXPECT_LT(estimate_cpu_perplexity_s(c, 64119, 512, 2), estimate_cpu_perplexity_s(c, 64119, 8192, 2));

  const std::string notice = long_cpu_perplexity_notice(c, 64119, 8192, 2);
  EXPECT_NE(notice.find("scoring 64118 tokens (all of the text's 64119 but the first) on the CPU reference path will "
                        "take about "),
            std::string::npos)
      << notice;
  EXPECT_NE(notice.find(" min (8 windows of up to 8192 tokens x 30 layers, estimated for 2 cores); run it on "
                        "a GPU (--device cuda), or score a shorter text"),
            std::string::npos)
      << notice;
  // The trial's 100 MB: hours, said in hours.
  EXPECT_NE(long_cpu_perplexity_notice(c, 99999999, 8192, 2).find(" h (12209 windows"), std::string::npos)
      << long_cpu_perplexity_notice(c, 99999999, 8192, 2);
  // A short text (the paragraph's 175 tokens, or 2048): no notice.
  EXPECT_EQ(long_cpu_perplexity_notice(c, 175, 8192, 2), "");
  EXPECT_EQ(long_cpu_perplexity_notice(c, 2048, 8192, 2), "");
  EXPECT_EQ(long_cpu_perplexity_notice(c, 1, 8192, 2), "");
}

TEST(CpuPrefillEstimate, PerplexityCountsTheLogSoftmaxOfEveryScoredToken) {
  // perplexity() takes a log-softmax over the vocabulary for every scored token, on one thread: a cost
  // per token that more cores do not shrink. est(2 cores) = A / 2 + S and est(4 cores) = A / 4 + S.
  const ModelConfig c = smollm2();
  for (const int64_t tokens : {int64_t(4096), int64_t(20000)}) {
    const double two = estimate_cpu_perplexity_s(c, tokens, 8192, 2), four = estimate_cpu_perplexity_s(c, tokens, 8192, 4);
    const double softmax = 2 * four - two;
    EXPECT_NEAR(softmax, double(tokens - 1) * 49152 * kCpuLogSoftmaxSPerLogit, 1e-9 * two) << tokens;
    EXPECT_GT(softmax, 0.0);
  }
  // Within a window the time grows faster than the tokens (the attention is quadratic); across
  // windows it adds up.
  EXPECT_GT(estimate_cpu_perplexity_s(c, 8192, 8192, 2), 2.5 * estimate_cpu_perplexity_s(c, 4096, 8192, 2));
  EXPECT_LT(estimate_cpu_perplexity_s(c, 4 * 8191 + 1, 8192, 2), 4.0001 * estimate_cpu_perplexity_s(c, 8192, 8192, 2));
}

TEST(CpuPrefillEstimate, ALoadedMachineGivesTheRunItsShareOfTheCores) {
  // New-user trial: the notice before a ~20k-token perplexity read 2.4 x lower than the run took on
  // the 2-core dev machine, which another build was using. Measured there (SmolLM2-135M): the shape
  // held (an 8191-token window's layer took 7.2 s on idle cores, estimated 6.9 s), the load made the
  // difference. The estimate now takes the machine's load: the run's threads and the others share the
  // cores, max(1, (load + threads) / cores).
  EXPECT_DOUBLE_EQ(cpu_contention_factor({}, 2), 1.0);                    // idle
  EXPECT_DOUBLE_EQ(cpu_contention_factor({0.0, 2}, 2), 1.0);
  EXPECT_DOUBLE_EQ(cpu_contention_factor({1.0, 4}, 2), 1.0);              // spare cores: no slower
  EXPECT_DOUBLE_EQ(cpu_contention_factor({2.8, 2}, 2), 2.4);              // the trial's 2.4 x
  EXPECT_DOUBLE_EQ(cpu_contention_factor({4.0, 2}, 1), 2.5);              // OMP_NUM_THREADS=1 on 2 cores
  EXPECT_DOUBLE_EQ(cpu_contention_factor({-1.0, 2}, 2), 1.0);             // not a load: idle
  EXPECT_DOUBLE_EQ(cpu_contention_factor({std::nan(""), 2}, 2), 1.0);

  const ModelConfig c = smollm2();
  const CpuContention busy{2.8, 2};
  for (const int64_t tokens : {int64_t(1024), int64_t(20000), int64_t(99999)}) {
    EXPECT_NEAR(estimate_cpu_perplexity_s(c, tokens, 8192, 2, busy), 2.4 * estimate_cpu_perplexity_s(c, tokens, 8192, 2),
                1e-9 * estimate_cpu_perplexity_s(c, tokens, 8192, 2, busy))
        << tokens;
  }
  EXPECT_DOUBLE_EQ(estimate_cpu_prefill_s(c, 4096, 2, busy), 2.4 * estimate_cpu_prefill_s(c, 4096, 2));

  // The trial's ~20k tokens: the notice says the load it counted; on an idle machine it says nothing of it.
  const std::string idle = long_cpu_perplexity_notice(c, 20000, 8192, 2, {0.0, 2});
  const std::string loaded = long_cpu_perplexity_notice(c, 20000, 8192, 2, busy);
  EXPECT_NE(idle.find("(3 windows of up to 8192 tokens x 30 layers, estimated for 2 cores); run it"), std::string::npos)
      << idle;
  EXPECT_NE(loaded.find("(3 windows of up to 8192 tokens x 30 layers, estimated for 2 cores, shared with a load of "
                        "2.8 from other processes); run it"),
            std::string::npos)
      << loaded;
  EXPECT_NE(long_cpu_prefill_notice(c, std::vector<int64_t>{8191}, 2, busy)
                .find("(estimated for 2 cores, shared with a load of 2.8 from other processes)"),
            std::string::npos);
  // A prompt too short to warn about on idle cores can be long enough on busy ones.
  EXPECT_EQ(long_cpu_prefill_notice(c, std::vector<int64_t>{2048}, 2), "");
  EXPECT_NE(long_cpu_prefill_notice(c, std::vector<int64_t>{2048}, 2, {8.0, 2}), "");
}

TEST(CpuPrefillEstimate, TheEstimateIsNoBoundAndALoadThatHasEndedDoesNotCount) {
  // New-user trial: "about 7 min or more (estimated for 2 cores, shared with a load of 1.8 from other
  // processes)" before a prefill that took 3.1 min: the 1-minute load average still held a process that
  // had just finished. The load counted is at most the threads runnable now besides the one looking.
  EXPECT_DOUBLE_EQ(others_cpu_load(1.8, 1), 0.0);   // the trial: only dak itself runnable
  EXPECT_DOUBLE_EQ(others_cpu_load(1.8, 3), 1.8);   // a build that goes on: the average
  EXPECT_DOUBLE_EQ(others_cpu_load(4.4, 3), 2.0);   // at most those runnable now
  EXPECT_DOUBLE_EQ(others_cpu_load(1.8, 0), 1.8);   // /proc/loadavg unreadable: the average alone
  EXPECT_DOUBLE_EQ(others_cpu_load(0.0, 5), 0.0);
  EXPECT_DOUBLE_EQ(others_cpu_load(std::nan(""), 5), 0.0);
  const CpuContention now = current_cpu_contention();
  EXPECT_GE(now.load, 0.0);
  EXPECT_GE(now.cores, 1);

  // The trial's 8191-token prompt on an idle machine: about 3 min (208 s), nothing "or more".
  const ModelConfig c = smollm2();
  const std::string idle = long_cpu_prefill_notice(c, std::vector<int64_t>{8191}, 2, {others_cpu_load(1.8, 1), 2});
  EXPECT_NE(idle.find("will take about 3 min (estimated for 2 cores); "), std::string::npos) << idle;
  for (const std::string& notice : {idle, long_cpu_perplexity_notice(c, 64119, 8192, 2)}) {
    EXPECT_EQ(notice.find("or more"), std::string::npos) << notice;
  }
}

}  // namespace
}  // namespace dak
