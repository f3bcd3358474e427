// --random-weights: the fill kernel against an independent host SplitMix64, determinism of
// GpuWeights::random, the GPU engine on random weights against the CPU reference fed the same
// values (an in-memory checkpoint built from random_tensor_table on the host), and a real-size
// config (Llama-2-7B) running prefill + graph decode with finite logits.
//
// Tolerances: the CPU comparison uses the bounds of test_gpu_engine.cc (per element
// kLogitRowTol x the row's largest |logit|, RMS kLogitRmsTol x the reference RMS): the same
// bf16 rounding points, justified there by tests/gpu/bf16_error_model.py. The fill is compared
// bitwise (both sides compute fma(x, a, m) in fp32 and round to nearest even).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/checkpoint.h"
#include "core/cpu_model.h"
#include "core/dtype.h"
#include "core/env.h"
#include "core/error.h"
#include "core/generate.h"
#include "core/rope_layout.h"
#include "gpu/cuda_check.h"
#include "gpu/gpu_engine.h"
#include "gpu/gpu_weights.h"
#include "gpu/kernels/random_fill.h"
#include "gpu_test_util.h"
#include "kernel_test_util.h"

namespace {

using Batch = std::vector<std::vector<int32_t>>;

constexpr double kLogitRowTol = 0.04;
constexpr double kLogitRmsTol = 0.02;

// ---- host oracle: SplitMix64 (Steele, Lea, Flood 2014; constants of Vigna's splitmix64.c)
uint64_t splitmix_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The bf16 bits random_fill.h specifies for element i of (seed, stream).
uint16_t expected_bits(uint64_t seed, uint64_t stream, uint64_t i, float mean, float half_range) {
  const uint64_t key = splitmix_mix(seed + (stream + 1) * 0xD1B54A32D192ED03ull);
  const uint64_t bits = splitmix_mix(key + (i + 1) * 0x9E3779B97F4A7C15ull);
  const float x = float(int64_t(bits >> 40) - (int64_t(1) << 23)) / float(1 << 23);
  return dak::f32_to_bf16(std::fma(x, half_range, mean));
}

std::filesystem::path fixture_dir(const std::string& name) {
  return std::filesystem::path(DAK_TEST_DATA_DIR) / "hf_parity" / name;
}

dak::ModelConfig fixture_config(const std::string& name) {
  return dak::ModelConfig::from_hf_file(fixture_dir(name) / "config.json");
}

/// A checkpoint held in memory: the random table's tensors as bf16, computed on the host.
class RandomHostCheckpoint : public dak::Checkpoint {
 public:
  RandomHostCheckpoint(const dak::ModelConfig& c, uint64_t seed) {
    config_ = c;
    format_ = "safetensors";
    path_ = "host-random";
    const auto table = dak::gpu::GpuWeights::random_tensor_table(c);
    data_.resize(table.size());
    for (size_t t = 0; t < table.size(); ++t) {
      const auto& spec = table[t];
      dak::TensorInfo info;
      info.name = spec.name;
      info.file_name = spec.name;
      info.file = "host-random";
      info.dtype = dak::DType::kBF16;
      info.shape = spec.shape;
      const int64_t n = info.num_elements();
      data_[t].resize(size_t(n));
      for (int64_t i = 0; i < n; ++i) {
        data_[t][size_t(i)] = expected_bits(seed, spec.stream, uint64_t(i), spec.mean, spec.half_range);
      }
      info.bytes = uint64_t(n) * 2;
      info.data = reinterpret_cast<const uint8_t*>(data_[t].data());
      tensors_.push_back(std::move(info));
    }
  }

 private:
  std::vector<std::vector<uint16_t>> data_;
};

void expect_logits_close(const std::vector<float>& got, const std::vector<float>& ref, int64_t V,
                         const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  double err2 = 0, ref2 = 0;
  int64_t reported = 0;
  for (size_t r = 0; r < ref.size() / size_t(V); ++r) {
    double row_max = 0;
    for (int64_t j = 0; j < V; ++j) row_max = std::max(row_max, std::abs(double(ref[r * V + j])));
    for (int64_t j = 0; j < V; ++j) {
      const double g = got[r * V + j], w = ref[r * V + j], d = g - w;
      err2 += d * d;
      ref2 += w * w;
      if (!(std::abs(d) <= kLogitRowTol * row_max) && reported++ < 5) {
        ADD_FAILURE() << what << ": row " << r << " id " << j << " gpu " << g << " cpu " << w << " (row max "
                      << row_max << ")";
      }
    }
  }
  EXPECT_EQ(reported, 0) << what;
  EXPECT_LE(std::sqrt(err2), kLogitRmsTol * std::sqrt(ref2)) << what << ": RMS error";
}

TEST(RandomFillKernel, BitwiseEqualToHostSplitMix) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t run_seed = dak::test::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(run_seed));
  std::mt19937_64 rng(run_seed);
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(8), int64_t(9), int64_t(4099), int64_t(1) << 20,
                    (int64_t(1) << 20) + 13}) {
    for (int64_t misalign : {0, 1, 3}) {
      const uint64_t seed = rng(), stream = rng() % 1000;
      const float mean = float(int(rng() % 5) - 2) * 0.5f, half_range = 0.001f + float(rng() % 1000) * 1e-4f;
      dak::test::DeviceBuffer<uint16_t> buf(size_t(n + misalign + 8));
      buf.poison();
      dak::gpu::random_fill_bf16({dak::test::bf(buf.get() + misalign), n, seed, stream, mean, half_range}, nullptr);
      const std::vector<uint16_t> got = buf.download();
      int64_t bad = 0;
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t want = expected_bits(seed, stream, uint64_t(i), mean, half_range);
        if (got[size_t(misalign + i)] != want && bad++ < 5) {
          ADD_FAILURE() << "n " << n << " misalign " << misalign << " i " << i << " got 0x" << std::hex
                        << got[size_t(misalign + i)] << " want 0x" << want;
        }
      }
      EXPECT_EQ(bad, 0) << "n " << n << " misalign " << misalign;
      for (int64_t i = 0; i < misalign; ++i) EXPECT_EQ(got[size_t(i)], 0xffff) << "wrote before the start";
      for (size_t i = size_t(misalign + n); i < got.size(); ++i) EXPECT_EQ(got[i], 0xffff) << "wrote past the end";
    }
  }
}

TEST(RandomWeights, TableHasTheHfInitialisationScale) {
  // Statistics of the specified values (host oracle) for the Llama-2-7B table: matrices
  // uniform with std 0.02 around 0, norm weights around 1.
  const auto c = dak::ModelConfig::from_hf_file(std::filesystem::path(DAK_SOURCE_DIR) / "configs" / "llama-2-7b.json");
  const auto table = dak::gpu::GpuWeights::random_tensor_table(c);
  ASSERT_EQ(table.size(), size_t(1 + 1 + 1 + c.num_layers * 9));  // embed, norm, lm_head + 9 per layer
  for (const auto& spec : table) {
    const bool norm = spec.name.find("norm") != std::string::npos;
    double s = 0, s2 = 0;
    const int n = 1 << 16;
    for (int i = 0; i < n; ++i) {
      const double v = dak::bf16_to_f32(expected_bits(0, spec.stream, uint64_t(i), spec.mean, spec.half_range));
      s += v;
      s2 += v * v;
    }
    const double mean = s / n, sd = std::sqrt(s2 / n - mean * mean);
    EXPECT_NEAR(mean, norm ? 1.0 : 0.0, 5e-4) << spec.name;  // 6 standard errors of the mean
    EXPECT_NEAR(sd, 0.02, 0.02 * 0.02) << spec.name;
  }
  // Parameter count from the architecture: embed + lm_head, final norm, per layer q/k/v/o (MHA),
  // gate/up/down and two norms; the arena adds at most 256 bytes of alignment per slice.
  const uint64_t V = uint64_t(c.vocab_size), E = uint64_t(c.hidden_size), I = uint64_t(c.intermediate_size);
  const uint64_t params = 2 * V * E + E + uint64_t(c.num_layers) * (4 * E * E + 3 * E * I + 2 * E);
  EXPECT_EQ(params, 6738415616u);  // Llama-2-7B's published parameter count
  const uint64_t plan = dak::gpu::GpuWeights::plan_bytes(c);
  EXPECT_GE(plan, 2 * params);
  EXPECT_LT(plan - 2 * params, 256u * (table.size() + 1));
}

TEST(RandomWeights, SameSeedSameBitsOtherSeedDiffers) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const auto c = fixture_config("llama_gqa");
  auto bytes_of = [&](uint64_t seed) {
    const auto w = dak::gpu::GpuWeights::random(c, seed, "llama_gqa");
    EXPECT_EQ(w.bytes, dak::gpu::GpuWeights::plan_bytes(c));
    std::vector<uint8_t> h(w.arena.used());
    DAK_CUDA_CHECK(cudaMemcpy(h.data(), w.arena.base(), h.size(), cudaMemcpyDeviceToHost));
    return h;
  };
  const auto a = bytes_of(42), b = bytes_of(42), other = bytes_of(43);
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), other.size());
  size_t same = 0;
  for (size_t i = 0; i + 1 < a.size(); i += 2) same += a[i] == other[i] && a[i + 1] == other[i + 1];
  EXPECT_LT(same, a.size() / 2 / 10) << "seed 43 repeats most of seed 42's values";
}

TEST(RandomWeights, GpuEngineMatchesCpuReferenceOnTheSameValues) {
  DAK_REQUIRE_GPU_OR_SKIP();
  std::mt19937 rng(std::random_device{}());
  for (const char* name : {"llama_gqa", "llama_mqa_tied", "opt", "opt350m_style", "qwen2"}) {
    SCOPED_TRACE(name);
    const auto c = fixture_config(name);
    const uint64_t seed = rng();
    RandomHostCheckpoint host(c, seed);
    dak::CpuModel cpu(host);
    dak::gpu::GpuEngine gpu(c, seed, name, 0);
    const int64_t V = c.vocab_size;
    auto ids = [&](size_t n) {
      std::vector<int32_t> v(n);
      for (auto& x : v) x = int32_t(rng() % uint32_t(V));
      return v;
    };
    cpu.start(2, 32);
    gpu.start(2, 32);
    std::vector<std::vector<int32_t>> step{ids(5), ids(9)};
    expect_logits_close(gpu.step(step, true), cpu.step(step, true), V, "prefill");
    for (int t = 0; t < 4; ++t) {
      step = {ids(1), ids(1)};
      expect_logits_close(gpu.step(step, false), cpu.step(step, false), V, "decode " + std::to_string(t));
    }
    EXPECT_GE(gpu.graph_replays(), 2);
  }
}

TEST(RandomWeights, Llama2_7bShapesDecodeWithFiniteLogits) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const auto path = std::filesystem::path(DAK_SOURCE_DIR) / "configs" / "llama-2-7b.json";
  const auto c = dak::ModelConfig::from_hf_file(path);
  dak::gpu::GpuEngine eng(c, 0, path.string(), 0);
  EXPECT_EQ(eng.weight_bytes(), dak::gpu::GpuWeights::plan_bytes(c));
  eng.start(2, 16);
  const std::vector<std::vector<int32_t>> prompt{{1, 2, 3, 4, 5}, {31999, 7, 1000}};
  auto check = [&](const std::vector<float>& logits, const std::string& what) {
    ASSERT_EQ(logits.size(), size_t(2 * c.vocab_size)) << what;
    double s = 0, s2 = 0;
    for (float v : logits) {
      ASSERT_TRUE(std::isfinite(v)) << what;
      s += v;
      s2 += double(v) * v;
    }
    const double n = double(logits.size()), sd = std::sqrt(s2 / n - (s / n) * (s / n));
    // Final RMSNorm output (unit RMS, weights ~1) times lm_head rows of std 0.02 over 4096
    // inputs: logits of std ~ 0.02 * sqrt(4096) = 1.28, far from 0 and from overflow.
    EXPECT_GT(sd, 0.3) << what;
    EXPECT_LT(sd, 5.0) << what;
  };
  check(eng.step(prompt, false), "prefill");
  for (int t = 0; t < 4; ++t) check(eng.step(Batch{{int32_t(10 + t)}, {int32_t(20 + t)}}, false), "decode " + std::to_string(t));
  EXPECT_GE(eng.graph_replays(), 2);
  EXPECT_GT(eng.last_step_gpu_s(), 0.0);
}

TEST(GpuEngineMeasuring, RestartWithTheSameShapeReusesTheGraphAndGivesTheSameIds) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const auto c = fixture_config("llama_gqa");
  dak::gpu::GpuEngine eng(c, 7, "llama_gqa", 0);
  const dak::SamplingParams greedy{};
  const std::vector<std::vector<int32_t>> prompt{{3, 1, 4, 1, 5}, {9, 2, 6}};
  auto generate = [&] {
    eng.start(2, 24);
    std::vector<int32_t> ids = eng.step_and_sample(prompt, greedy), all = ids;
    for (int t = 0; t < 6; ++t) {
      ids = eng.step_and_sample(Batch{{ids[0]}, {ids[1]}}, greedy);
      all.insert(all.end(), ids.begin(), ids.end());
    }
    return all;
  };
  const auto first = generate();
  const uint64_t state = eng.state_bytes();
  const auto second = generate();
  EXPECT_EQ(first, second);
  EXPECT_EQ(eng.state_bytes(), state);
  EXPECT_EQ(eng.graph_replays(), 6) << "after a same-shape start() every decode step replays the graph";
  EXPECT_GT(eng.last_step_gpu_s(), 0.0);
}

TEST(GpuEngineMeasuring, ASequenceAtEosKeepsTheDecodeStepsOnTheGraph) {
  // generate() keeps a finished sequence in the decode steps (Engine::prefers_full_decode_steps), so
  // a batch whose sequences stop at different EOS steps replays the graph at every decode step
  // (before, the steps after the first EOS ran kernel by kernel), and the others' ids are those of
  // the run without EOS (the same full-batch graph computes them).
  DAK_REQUIRE_GPU_OR_SKIP();
  const auto c = fixture_config("llama_gqa");
  dak::gpu::GpuEngine eng(c, 7, "llama_gqa", 0);
  const Batch prompts{{3, 1, 4, 1, 5}, {9, 2, 6}, {2, 7}};
  dak::GenerateOptions o;
  o.max_new_tokens = 8;
  const dak::GenerateResult plain = dak::generate(eng, prompts, o);
  ASSERT_EQ(plain.decode_steps, 7);
  // An EOS id that sequence 0 emits early and sequence 1 never does.
  const auto& ids0 = plain.sequences[0].generated_ids;
  const auto& ids1 = plain.sequences[1].generated_ids;
  int32_t eos = -1;
  for (size_t k = 1; k + 2 < ids0.size() && eos < 0; ++k) {
    if (std::find(ids1.begin(), ids1.end(), ids0[k]) == ids1.end()) eos = ids0[k];
  }
  if (eos < 0) GTEST_SKIP() << "no id of sequence 0 is absent from sequence 1's output";
  o.eos_ids = {eos};
  // A second generate() starts the same shape: the graph is kept (no eager warm-up step) and
  // graph_replays() counts from that start().
  const dak::GenerateResult r = dak::generate(eng, prompts, o);
  EXPECT_EQ(r.decode_steps, 7) << "sequence 1 never emits the EOS id";
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto& full = plain.sequences[i].generated_ids;
    const auto stop = std::find(full.begin(), full.end(), eos);
    const std::vector<int32_t> want(full.begin(), stop == full.end() ? full.end() : stop + 1);
    EXPECT_EQ(r.sequences[i].generated_ids, want) << "sequence " << i;
  }
  EXPECT_LT(r.sequences[0].generated_ids.size(), ids0.size() - 1) << "sequence 0 should stop early";
  EXPECT_EQ(eng.graph_replays(), r.decode_steps) << "a decode step after the first EOS ran without the graph";
}

TEST(GpuEngineMeasuring, MaxBatchRefillsFinishedSlotsOnTheGpu) {
  // Continuous batching on the GPU engine: 5 prompts in 2 slots; a finished slot is reset and takes
  // the next prompt in a pass beside the other slot's decode token. Two runs give the same ids (the
  // same passes), every sequence gets its tokens, the first tokens (prefill rows) match the run
  // with every prompt in one batch, and every step that admits no prompt replays the graph.
  DAK_REQUIRE_GPU_OR_SKIP();
  const auto c = fixture_config("llama_gqa");
  dak::gpu::GpuEngine eng(c, 7, "llama_gqa", 0);
  const Batch prompts{{3, 1, 4, 1, 5}, {9, 2, 6}, {2, 7}, {8, 8, 8, 8, 8, 8, 8}, {5}};
  dak::GenerateOptions o;
  o.max_new_tokens = 6;
  const dak::GenerateResult all = dak::generate(eng, prompts, o);
  o.max_batch = 2;
  const dak::GenerateResult first = dak::generate(eng, prompts, o);
  const dak::GenerateResult r = dak::generate(eng, prompts, o);  // same shape: the graph is kept
  EXPECT_EQ(r.refills, 3);
  // Steps: prefill, 5 decode, one admitting 2 prompts (no decode), 5 decode, one admitting 1 (the
  // other slot idle), 5 decode.
  EXPECT_EQ(r.decode_steps, 15);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(r.sequences[i].generated_ids, first.sequences[i].generated_ids) << "sequence " << i;
    ASSERT_EQ(r.sequences[i].generated_ids.size(), 6u) << "sequence " << i;
    EXPECT_EQ(r.sequences[i].generated_ids[0], all.sequences[i].generated_ids[0]) << "sequence " << i;
  }
  // graph_replays() counts from start(). The admission of the one-token prompt {5} beside the idle
  // slot's discarded token is a one-token-per-slot pass too: it replays the graph as well.
  EXPECT_EQ(eng.graph_replays(), r.decode_steps + 1) << "a decode step ran without the graph";
}

TEST(GpuEngineMeasuring, ProfiledDecodeStepTimesEveryOperatorAndSamplesLikeTheGraph) {
  DAK_REQUIRE_GPU_OR_SKIP();
  for (const char* name : {"llama_gqa", "opt"}) {
    SCOPED_TRACE(name);
    const auto c = fixture_config(name);
    dak::gpu::GpuEngine eng(c, 11, name, 0);
    const dak::SamplingParams greedy{};
    const std::vector<std::vector<int32_t>> prompt{{3, 1, 4}, {1, 5, 9, 2}, {6}};
    auto decode_ids = [&](bool profiled, dak::gpu::StepProfile* prof) {
      eng.start(3, 16);
      std::vector<int32_t> ids = eng.step_and_sample(prompt, greedy);
      for (int t = 0; t < 3; ++t) ids = eng.step_and_sample(Batch{{ids[0]}, {ids[1]}, {ids[2]}}, greedy);
      std::vector<std::vector<int32_t>> step{{ids[0]}, {ids[1]}, {ids[2]}};
      if (!profiled) return eng.step_and_sample(step, greedy);
      *prof = eng.profile_decode_step(step, greedy, &ids);
      return ids;
    };
    dak::gpu::StepProfile prof;
    const auto want = decode_ids(false, nullptr);
    const auto got = decode_ids(true, &prof);
    EXPECT_EQ(got, want);
    EXPECT_TRUE(prof.gated) << "a two-layer step fits in the launch queue behind the host gate";
    const auto& times = prof.ops;
    ASSERT_EQ(times.size(), size_t(dak::gpu::StepOp::kCount));
    // Launch counts from the model's structure: per layer two norms (+ post-LN has the same
    // count), one of each GEMM, RoPE / KV append (unless in qkv's epilogue), attention; OPT's ReLU
    // rides the fc1 epilogue.
    // RMSNorm models (hidden 64 here) carry the norms in the tiered GEMMs' epilogues at batch 3:
    // only layer 0's attention norm and the final norm launch (kFusedNormMaxTokens).
    const int64_t L = c.num_layers;
    const bool opt = c.arch == dak::Arch::kOpt;
    const bool final_norm = !opt || c.do_layer_norm_before;
    const bool fused = !opt && !dak::env_flag("DAK_NO_FUSED_NORM", false);
    // RoPE models with a pairable head_dim (16 here) rotate q / k and append the KV row in qkv's
    // epilogue (tiered GEMM, 64-row tiles): no RoPE / append launch. OPT appends in its own kernel.
    const bool rope_epilogue = dak::rope_layout::engine_pairs_rows(c) && dak::env_flag("DAK_ROPE_EPILOGUE", true);
    // Gated MLPs with I % 8 == 0 run the activation in gate_up's epilogue: no activation launch.
    const bool act_epilogue = dak::rope_layout::engine_pairs_gate_up(c) && dak::env_flag("DAK_ACT_EPILOGUE", true);
    using dak::gpu::StepOp;
    const std::vector<std::pair<StepOp, int64_t>> want_launches = {
        {StepOp::kEmbedding, 1},  {StepOp::kNorm, fused ? 2 : 2 * L + (final_norm ? 1 : 0)},
        {StepOp::kQkvProj, L},    {StepOp::kRopeKvAppend, rope_epilogue ? 0 : L},
        {StepOp::kAttention, L},  {StepOp::kOProj, L},
        {StepOp::kMlpUp, L},      {StepOp::kActivation, opt || act_epilogue ? 0 : L},
        {StepOp::kMlpDown, L},    {StepOp::kLogits, 1},
        {StepOp::kSampling, 1}};
    for (const auto& [op, n] : want_launches) {
      EXPECT_EQ(times[size_t(op)].launches, n) << dak::gpu::step_op_name(op);
      if (n > 0) EXPECT_GT(times[size_t(op)].time_s, 0.0) << dak::gpu::step_op_name(op);
    }
  }
  const auto c = fixture_config("llama_gqa");
  dak::gpu::GpuEngine eng(c, 1, "llama_gqa", 0);
  eng.start(2, 8);
  eng.step(Batch{{1, 2}, {3}}, false);
  EXPECT_THROW(eng.profile_decode_step(Batch{{1, 2}, {3}}, dak::SamplingParams{}), dak::Error);  // not a decode step
}

}  // namespace
