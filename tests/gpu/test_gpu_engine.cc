// GpuEngine end to end on the HF parity fixtures (tests/data/hf_parity/*: tiny random OPT, Llama
// (GQA, MQA + tied + attention_bias + head_dim 24, linear and llama3 RoPE), Mistral (sliding
// window 8) and Qwen2 checkpoints with logits from transformers 5.17 in fp32), against the HF
// logits and greedy ids in expected.json and against the CPU reference (CpuModel) on ragged
// batches.
//
// Tolerance table (the only tolerances of this file):
//   logits, per element:  |gpu - ref| <= kLogitRowTol * max_j |ref[row, j]|
//   logits, per row set:  rms(gpu - ref) <= kLogitRmsTol * rms(ref)
//   greedy ids:           equal to HF's, except at steps whose HF top-1/top-2 margin < kNearTie
// Why: the engine keeps weights, GEMM inputs/outputs, q/k/v and the KV cache in bf16 (unit
// roundoff 2^-9) and the residual stream, softmax and accumulation in fp32. A float64 numpy
// emulation of exactly these rounding points on all 8 fixtures (tests/gpu/bf16_error_model.py)
// gives a worst per-element error of 1.25 % of the row's largest |logit| and a worst RMS ratio
// of 0.77 %, while the same script without the roundings matches HF to 1e-6 (so the bound
// measures bf16 alone). The bounds allow ~3x for GPU summation orders that differ from
// numpy's; a real bug (wrong mask, position, head mapping, norm) moves logits by O(max|logit|).
// kNearTie is issue 3's rule: a divergence counts only where the reference margin exceeds 0.05
// (the emulation flips exactly one step, whose margin is 0.002).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/checkpoint.h"
#include "core/cpu_model.h"
#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/gpu_engine.h"
#include "gpu_test_util.h"

namespace {

using dak::gpu::GemmBackend;

constexpr double kLogitRowTol = 0.04;
constexpr double kLogitRmsTol = 0.02;
constexpr double kNearTie = 0.05;

const char* const kFixtures[] = {"opt",        "opt350m_style",     "llama_gqa", "llama_mqa_tied",
                                 "llama3_rope", "llama_linear_rope", "mistral_swa", "qwen2",
                                 "qwen2_yarn", "llama3_rope_band"};

std::filesystem::path fixture_dir(const std::string& name) {
  return std::filesystem::path(DAK_TEST_DATA_DIR) / "hf_parity" / name;
}

nlohmann::json expected(const std::string& name) {
  std::ifstream in(fixture_dir(name) / "expected.json");
  return nlohmann::json::parse(in);
}

std::vector<int32_t> ids_of(const nlohmann::json& j) { return j.get<std::vector<int32_t>>(); }

/// Compares logits rows got[r] (V each) with ref rows under the tolerance table.
void expect_logits_close(const float* got, const std::vector<std::vector<double>>& ref, const std::string& what) {
  double err2 = 0, ref2 = 0;
  int64_t reported = 0;
  for (size_t r = 0; r < ref.size(); ++r) {
    const auto& row = ref[r];
    double row_max = 0;
    for (double v : row) row_max = std::max(row_max, std::abs(v));
    for (size_t j = 0; j < row.size(); ++j) {
      const double g = got[r * row.size() + j], d = g - row[j];
      err2 += d * d;
      ref2 += row[j] * row[j];
      if (!(std::abs(d) <= kLogitRowTol * row_max) && reported++ < 5) {
        ADD_FAILURE() << what << ": row " << r << " id " << j << " gpu " << g << " ref " << row[j] << " (row max "
                      << row_max << ")";
      }
    }
  }
  EXPECT_EQ(reported, 0) << what;
  EXPECT_LE(std::sqrt(err2), kLogitRmsTol * std::sqrt(ref2)) << what << ": RMS error";
}

std::vector<std::vector<double>> rows_of(const nlohmann::json& logits) {
  return logits.get<std::vector<std::vector<double>>>();
}

int32_t argmax(const float* x, int64_t n) { return int32_t(std::max_element(x, x + n) - x); }

TEST(GpuEngineParity, TeacherForcedRaggedPrefillMatchesHfLogits) {
  DAK_REQUIRE_GPU_OR_SKIP();
  for (const char* name : kFixtures) {
    SCOPED_TRACE(name);
    const auto ckpt = dak::Checkpoint::open(fixture_dir(name));
    const auto exp = expected(name);
    const auto& seqs = exp["sequences"];
    ASSERT_EQ(seqs.size(), 2u);
    const std::vector<std::vector<int32_t>> prompts = {ids_of(seqs[0]["input_ids"]), ids_of(seqs[1]["input_ids"])};
    // max_pass_tokens 1024: one pass; 5: each prompt spans several passes (chunked prefill).
    // Linears on cuBLASLt and on the tiered GEMM (kernels/tiered_gemm.h, everything in HBM).
    for (const auto [pass_tokens, gemm] : {std::pair{1024, GemmBackend::kCublas}, std::pair{5, GemmBackend::kCublas},
                                           std::pair{1024, GemmBackend::kTiered}, std::pair{5, GemmBackend::kTiered}}) {
      dak::gpu::GpuEngine eng(*ckpt, 0, dak::gpu::GpuEngineOptions{pass_tokens, gemm});
      eng.start(2, ckpt->config().max_position_embeddings);
      const std::vector<float> logits = eng.step(prompts, /*all_logits=*/true);
      const int64_t V = ckpt->config().vocab_size;
      ASSERT_EQ(logits.size(), (prompts[0].size() + prompts[1].size()) * size_t(V));
      const std::string what = std::string(name) + " pass_tokens=" + std::to_string(pass_tokens) +
                               (gemm == GemmBackend::kTiered ? " tiered GEMM" : " cuBLASLt");
      expect_logits_close(logits.data(), rows_of(seqs[0]["logits"]), what + " seq 0");
      expect_logits_close(logits.data() + prompts[0].size() * size_t(V), rows_of(seqs[1]["logits"]), what + " seq 1");
      EXPECT_EQ(eng.position(0), int64_t(prompts[0].size()));
      EXPECT_EQ(eng.position(1), int64_t(prompts[1].size()));
    }
  }
}

// Prefill a prefix of each sequence, then one token per step (decode kernel, CUDA graph from
// the second decode step), with sequence 0 idle (L = 0) once it is done; every step's last
// logits row must match HF's row at that position.
TEST(GpuEngineParity, IncrementalDecodeWithGraphMatchesHfLogits) {
  DAK_REQUIRE_GPU_OR_SKIP();
  for (const char* name : kFixtures) {
    SCOPED_TRACE(name);
    const auto ckpt = dak::Checkpoint::open(fixture_dir(name));
    const auto exp = expected(name);
    const auto& seqs = exp["sequences"];
    const std::vector<std::vector<int32_t>> full = {ids_of(seqs[0]["input_ids"]), ids_of(seqs[1]["input_ids"])};
    const std::vector<std::vector<std::vector<double>>> ref = {rows_of(seqs[0]["logits"]), rows_of(seqs[1]["logits"])};
    const int64_t V = ckpt->config().vocab_size;
    for (const GemmBackend gemm : {GemmBackend::kCublas, GemmBackend::kTiered}) {
      SCOPED_TRACE(gemm == GemmBackend::kTiered ? "tiered GEMM" : "cuBLASLt");
      dak::gpu::GpuEngine eng(*ckpt, 0, dak::gpu::GpuEngineOptions{1024, gemm});
      eng.start(2, 48);
      const size_t prefix[2] = {5, 9};
      std::vector<std::vector<int32_t>> step(2);
      for (int b = 0; b < 2; ++b) step[b].assign(full[b].begin(), full[b].begin() + long(prefix[b]));
      std::vector<float> logits = eng.step(step, false);
      size_t next[2] = {prefix[0], prefix[1]};
      bool took_part[2] = {true, true};
      while (true) {
        for (int b = 0; b < 2; ++b) {
          // Row b holds the logits after token next[b] - 1 when b took part in the last step.
          if (took_part[b]) {
            expect_logits_close(logits.data() + b * V, {ref[b][next[b] - 1]},
                                std::string(name) + " seq " + std::to_string(b) + " pos " + std::to_string(next[b] - 1));
          }
        }
        for (int b = 0; b < 2; ++b) {
          step[b].clear();
          if (next[b] < full[b].size()) step[b].push_back(full[b][next[b]++]);
          took_part[b] = !step[b].empty();
        }
        if (!took_part[0] && !took_part[1]) break;
        logits = eng.step(step, false);
      }
      EXPECT_GT(eng.graph_replays(), 0) << "decode steps never replayed the CUDA graph";
      EXPECT_EQ(eng.position(0), int64_t(full[0].size()));
      EXPECT_EQ(eng.position(1), int64_t(full[1].size()));
    }
  }
}

TEST(GpuEngineParity, GreedyIdsMatchHfExceptAtNearTies) {
  DAK_REQUIRE_GPU_OR_SKIP();
  for (const char* name : kFixtures) {
    SCOPED_TRACE(name);
    const auto ckpt = dak::Checkpoint::open(fixture_dir(name));
    const auto exp = expected(name);
    const auto& greedy = exp["greedy"];
    const size_t B = greedy.size();
    const int64_t V = ckpt->config().vocab_size;
    std::vector<std::vector<int32_t>> prompts, gen;
    std::vector<std::vector<double>> margins;
    for (const auto& g : greedy) {
      prompts.push_back(ids_of(g["prompt_ids"]));
      gen.push_back(ids_of(g["generated_ids"]));
      margins.push_back(g["margins"].get<std::vector<double>>());
    }
    // (a) Teacher-forced on HF's ids: every step's argmax, independently.
    {
      dak::gpu::GpuEngine eng(*ckpt, 0);
      eng.start(int64_t(B), 64);
      std::vector<float> logits = eng.step(prompts, false);
      for (size_t i = 0; i < gen[0].size(); ++i) {
        std::vector<std::vector<int32_t>> step(B);
        for (size_t b = 0; b < B; ++b) {
          const int32_t got = argmax(logits.data() + b * size_t(V), V);
          if (margins[b][i] >= kNearTie) {
            EXPECT_EQ(got, gen[b][i]) << name << " greedy seq " << b << " step " << i << " margin " << margins[b][i];
          }
          step[b] = {gen[b][i]};
        }
        logits = eng.step(step, false);
      }
    }
    // (b) Free-running with GPU sampling (temperature 0): identical ids up to the first step
    // where they differ, which must be a near-tie of the reference.
    {
      dak::gpu::GpuEngine eng(*ckpt, 0);
      eng.start(int64_t(B), 64);
      dak::SamplingParams greedy_params;  // temperature 0
      std::vector<int32_t> ids = eng.step_and_sample(prompts, greedy_params);
      std::vector<bool> diverged(B, false);
      for (size_t i = 0; i < gen[0].size(); ++i) {
        std::vector<std::vector<int32_t>> step(B);
        for (size_t b = 0; b < B; ++b) {
          if (!diverged[b] && ids[b] != gen[b][i]) {
            EXPECT_LT(margins[b][i], kNearTie)
                << name << " free-running seq " << b << " step " << i << ": got " << ids[b] << " want " << gen[b][i];
            diverged[b] = true;
          }
          step[b] = {ids[b]};
        }
        ids = eng.step_and_sample(step, greedy_params);
      }
    }
  }
}

// GpuEngine vs the CPU reference on a ragged batch: lengths 1, 7 and 30 in one prefill, then
// decode steps in which one sequence sits out, plus a second prompt chunk mid-stream.
TEST(GpuEngineVsCpu, RaggedBatchPrefillAndDecodeMatchCpuReference) {
  DAK_REQUIRE_GPU_OR_SKIP();
  std::mt19937 rng(std::random_device{}());
  for (const char* name : kFixtures) {
    SCOPED_TRACE(name);
    const auto ckpt = dak::Checkpoint::open(fixture_dir(name));
    const int64_t V = ckpt->config().vocab_size;
    auto random_ids = [&](size_t n) {
      std::vector<int32_t> v(n);
      for (auto& x : v) x = int32_t(rng() % uint32_t(V));
      return v;
    };
    dak::CpuModel cpu(*ckpt);
    dak::gpu::GpuEngine gpu(*ckpt, 0);
    cpu.start(3, 64);
    gpu.start(3, 64);
    std::vector<std::vector<std::vector<int32_t>>> steps;
    steps.push_back({random_ids(1), random_ids(7), random_ids(30)});
    for (int i = 0; i < 6; ++i) {
      steps.push_back({random_ids(1), i == 2 ? std::vector<int32_t>{} : random_ids(1), random_ids(1)});
    }
    steps.push_back({random_ids(3), random_ids(1), random_ids(1)});  // a prompt continuation
    steps.push_back({random_ids(1), random_ids(1), random_ids(1)});
    for (size_t s = 0; s < steps.size(); ++s) {
      const bool all = s == 0 || s + 2 == steps.size();
      const std::vector<float> want = cpu.step(steps[s], all);
      const std::vector<float> got = gpu.step(steps[s], all);
      ASSERT_EQ(got.size(), want.size());
      std::vector<std::vector<double>> ref;
      std::vector<float> got_rows;
      const size_t rows = want.size() / size_t(V);
      for (size_t r = 0; r < rows; ++r) {
        if (!all && steps[s][r].empty()) continue;  // unspecified row
        ref.emplace_back(want.begin() + long(r * V), want.begin() + long((r + 1) * V));
        got_rows.insert(got_rows.end(), got.begin() + long(r * V), got.begin() + long((r + 1) * V));
      }
      expect_logits_close(got_rows.data(), ref, std::string(name) + " step " + std::to_string(s));
    }
    for (int64_t b = 0; b < 3; ++b) EXPECT_EQ(gpu.position(b), cpu.position(b));
  }
}

TEST(GpuEngine, RefusesAKvCacheLargerThanFreeHbmBeforeAllocating) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const auto ckpt = dak::Checkpoint::open(fixture_dir("llama_gqa"));
  dak::gpu::GpuEngine eng(*ckpt, 0);
  size_t free_before = 0, total = 0;
  DAK_CUDA_CHECK(cudaMemGetInfo(&free_before, &total));
  // 2 layers x 2 (k, v) x 8M sequences x 128 positions x 32 x 2 bytes = 256 GiB of KV cache.
  try {
    eng.start(int64_t(8) << 20, 128);
    ADD_FAILURE() << "expected dak::Error";
  } catch (const dak::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("KV cache"), std::string::npos) << msg;
    EXPECT_NE(msg.find("needs"), std::string::npos) << msg;
    EXPECT_NE(msg.find("free"), std::string::npos) << msg;
  }
  EXPECT_EQ(eng.state_bytes(), 0u) << "the refused start() kept an arena";
  // cudaMemGetInfo is device-wide and the gpu tests run 4 at a time (tools/device/common.sh), so the
  // others' allocations move it (a 437 MB drop failed this check with a 64 MiB margin, session 19);
  // a refused 256 GiB KV cache that allocated before refusing would leave whole layers (>= 32 GiB
  // per tensor) behind, far more than the 2 GiB margin.
  size_t free_after = 0;
  DAK_CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
  EXPECT_GE(free_after + (size_t(2) << 30), free_before) << "the refused start() left memory allocated";
  // The engine is still usable after the refusal.
  eng.start(1, 16);
  EXPECT_EQ(eng.step(std::vector<std::vector<int32_t>>{{1, 2, 3}}, false).size(), size_t(ckpt->config().vocab_size));
}

TEST(GpuEngine, RejectsInvalidSteps) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const auto ckpt = dak::Checkpoint::open(fixture_dir("qwen2"));
  dak::gpu::GpuEngine eng(*ckpt, 0);
  using Batch = std::vector<std::vector<int32_t>>;
  EXPECT_THROW(eng.step(Batch{{1}}, false), dak::Error);  // before start()
  EXPECT_THROW(eng.start(1, ckpt->config().max_position_embeddings + 1), dak::Error);
  eng.start(2, 8);
  EXPECT_THROW(eng.step(Batch{{1}}, false), dak::Error);                                    // wrong batch
  EXPECT_THROW(eng.step(Batch{{1}, {int32_t(ckpt->config().vocab_size)}}, false), dak::Error);  // id out of vocab
  EXPECT_THROW(eng.step(Batch{{1}, {-1}}, false), dak::Error);
  EXPECT_THROW(eng.step(Batch{{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1}}, false), dak::Error);  // past max_context
  EXPECT_EQ(eng.position(0), 0);  // refused steps change nothing
  EXPECT_EQ(eng.step(Batch{{1, 2}, {3}}, false).size(), size_t(2 * ckpt->config().vocab_size));
  EXPECT_THROW(eng.position(2), dak::Error);
}

TEST(GpuEngine, FactoryNamesTheDevice) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const auto ckpt = dak::Checkpoint::open(fixture_dir("opt"));
  const auto eng = dak::gpu::make_gpu_engine(*ckpt, 0);
  EXPECT_EQ(eng->device_name().rfind("cuda:0 (", 0), 0u) << eng->device_name();
  EXPECT_EQ(eng->config().vocab_size, ckpt->config().vocab_size);
  EXPECT_THROW(dak::gpu::make_gpu_engine(*ckpt, 1000), dak::Error);
}

}  // namespace
