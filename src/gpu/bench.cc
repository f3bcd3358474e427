#include "gpu/bench.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/hardware_profile.h"
#include "core/op_graph.h"
#include "core/profile_fit.h"
#include "gpu/bench_util.h"
#include "gpu/cuda_check.h"
#include "gpu/device.h"
#include "gpu/hbm_arena.h"
#include "gpu/kernels/hbm_stream.h"
#include "gpu/kernels/random_fill.h"
#include "gpu/kernels/tiered_attention.h"

namespace dak::gpu {
namespace {

/// (chunk bytes, stages) tried for B_g: 64-192 KiB in flight per CTA, the range where one SM's
/// share of the HBM bandwidth-latency product is covered.
struct StreamConfig {
  uint32_t chunk_bytes;
  int32_t stages;
};
constexpr StreamConfig kStreamConfigs[] = {{16u << 10, 4}, {32u << 10, 4}, {32u << 10, 6}, {64u << 10, 3}};

/// Deterministic prompt ids in [0, V): a fixed scramble of (sequence, position).
std::vector<std::vector<int32_t>> bench_prompts(const BenchShape& s, int64_t vocab) {
  std::vector<std::vector<int32_t>> p(size_t(s.batch));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t i = 0; i < s.prompt_len; ++i) {
      const uint64_t h = (uint64_t(b) * 7919u + uint64_t(i) * 104729u + 17u) * 0x9E3779B97F4A7C15ull;
      p[size_t(b)].push_back(int32_t((h >> 33) % uint64_t(vocab)));
    }
  }
  return p;
}

std::vector<std::vector<int32_t>> as_steps(const std::vector<int32_t>& ids) {
  std::vector<std::vector<int32_t>> t(ids.size());
  for (size_t b = 0; b < ids.size(); ++b) t[b] = {ids[b]};
  return t;
}

/// Which StepOp reads the tensor of an op-graph operator (role names of core/op_graph.cc).
StepOp step_op_of(const Op& op) {
  if (op.kind == OpKind::kAttention) return StepOp::kAttention;
  if (op.kind == OpKind::kNorm) return StepOp::kNorm;
  if (op.kind == OpKind::kEmbedding || op.role == "project_in") return StepOp::kEmbedding;
  if (op.role == "qkv_proj") return StepOp::kQkvProj;
  if (op.role == "o_proj") return StepOp::kOProj;
  if (op.role == "gate_up_proj" || op.role == "fc1") return StepOp::kMlpUp;
  if (op.role == "down_proj" || op.role == "fc2") return StepOp::kMlpDown;
  return StepOp::kLogits;  // lm_head, project_out
}

}  // namespace

HbmBandwidth measure_hbm_bandwidth(uint64_t buffer_bytes, int runs) {
  buffer_bytes = buffer_bytes / 16 * 16;
  if (buffer_bytes == 0 || runs < 1) {
    fail(fmt::format("HBM bandwidth measurement with a {} byte buffer and {} runs", buffer_bytes, runs),
         "measure_hbm_bandwidth", "use a buffer of at least 16 bytes (several times the L2) and at least one run");
  }
  int device = 0, sms = 0;
  DAK_CUDA_CHECK(cudaGetDevice(&device));
  DAK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  constexpr int kWarmup = 2;
  const size_t launches = size_t(kWarmup + runs);
  HbmArena arena(HbmArena::aligned_size(buffer_bytes) + HbmArena::aligned_size(launches * 8),
                 "the HBM bandwidth measurement buffer");
  auto* g_buf = arena.allocate_array<__nv_bfloat16>(buffer_bytes / 2, "stream buffer");  // [bytes / 2]
  auto* g_sums = arena.allocate_array<unsigned long long>(launches, "checksums");        // [launches]
  random_fill_bf16(RandomFillParams{g_buf, int64_t(buffer_bytes / 2), 0, 0, 0.0f, 1.0f}, nullptr);  // any data
  DAK_CUDA_CHECK(cudaDeviceSynchronize());

  cudaStream_t stream = nullptr;
  DAK_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  HbmBandwidth best;
  best.buffer_bytes = buffer_bytes;
  best.sm_count = sms;
  best.runs = runs;
  unsigned long long want = 0;
  bool have_want = false;
  try {
    for (const StreamConfig& sc : kStreamConfigs) {
      const int ctas = hbm_stream_ctas_per_sm(sc.chunk_bytes, sc.stages);
      if (ctas == 0) continue;
      ++best.configs;
      const int grid = ctas * sms;
      std::vector<EventPair> ev(launches);
      std::vector<unsigned long long> sums(launches);
      DAK_CUDA_CHECK(cudaMemsetAsync(g_sums, 0, launches * sizeof(unsigned long long), stream));
      // Launches are enqueued back to back without host synchronization: each one's begin event
      // follows the previous kernel on the GPU, so host launch latency stays out of the timings.
      for (size_t i = 0; i < launches; ++i) {
        HbmStreamParams p{g_buf, buffer_bytes, sc.chunk_bytes, sc.stages, g_sums + i};
        DAK_CUDA_CHECK(cudaEventRecord(ev[i].begin, stream));
        hbm_stream(p, grid, stream);
        DAK_CUDA_CHECK(cudaEventRecord(ev[i].end, stream));
      }
      DAK_CUDA_CHECK(cudaMemcpyAsync(sums.data(), g_sums, launches * sizeof(unsigned long long),
                                     cudaMemcpyDeviceToHost, stream));
      DAK_CUDA_CHECK(cudaStreamSynchronize(stream));
      std::vector<double> bw;
      for (size_t i = 0; i < ev.size(); ++i) {
        if (!have_want) {
          want = sums[i];
          have_want = true;
        }
        if (sums[i] != want) {
          fail(fmt::format("HBM stream checksum {:#x} differs from {:#x} ({} KiB x {} stages, launch {})", sums[i],
                           want, sc.chunk_bytes >> 10, sc.stages, i),
               "measure_hbm_bandwidth", "the streaming kernel did not read the whole buffer: run dak_gpu_tests");
        }
        if (i >= size_t(kWarmup)) bw.push_back(double(buffer_bytes) / ev[i].seconds());
      }
      const double top = *std::max_element(bw.begin(), bw.end());
      if (top > best.best_bytes_per_s) {
        best.best_bytes_per_s = top;
        best.median_bytes_per_s = median_of(bw);
        best.chunk_bytes = sc.chunk_bytes;
        best.stages = sc.stages;
        best.ctas_per_sm = ctas;
      }
    }
  } catch (...) {
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
    throw;
  }
  DAK_CUDA_CHECK(cudaStreamDestroy(stream));
  if (best.configs == 0) {
    fail("no HBM stream configuration fits in shared memory", "measure_hbm_bandwidth", "run on a Hopper GPU");
  }
  return best;
}

GpuEngineOptions bench_engine_options(const std::vector<BenchShape>& shapes) {
  GpuEngineOptions o;
  for (const BenchShape& s : shapes) o.max_pass_tokens = std::max(o.max_pass_tokens, s.batch * s.prompt_len);
  o.max_pass_tokens = std::min<int64_t>(o.max_pass_tokens, 8192);
  o.tune_cublaslt = true;  // the repeats replay the same plans: the tuning's cost is paid once
  return o;
}

namespace {

/// DAK_GEMM_TRACE=OP (GpuEngine::gemm_trace): one stderr line per batch, in us after the first CTA's
/// return from the dependency wait (about when the previous kernel completed): entry, that return,
/// the first full stage and the end, min / median / max over CTAs; then how many CTAs entered only
/// after it (resident once the previous kernel's CTAs left) and the median end of theirs against
/// the others'. Nothing without a trace.
void print_gemm_trace(int64_t batch, const GemmTrace& t) {
  uint64_t ref = ~uint64_t(0);
  for (const GemmTraceCta& c : t.ctas) {
    if (c.dependency != 0) ref = std::min(ref, c.dependency);
  }
  if (t.op == nullptr || ref == ~uint64_t(0)) return;
  // Differences in integers first: a double near 1.8e18 ns (the epoch) resolves only 256 ns.
  const auto us = [&](uint64_t v) { return double(int64_t(v - ref)) * 1e-3; };
  const auto text = [](const std::vector<double>& v) {
    const Spread s = spread_of(v);
    return v.empty() ? std::string("-") : fmt::format("{:.2f} / {:.2f} / {:.2f}", s.min, s.median, s.max);
  };
  const auto field = [&](uint64_t GemmTraceCta::*f) {
    std::vector<double> v;
    for (const GemmTraceCta& c : t.ctas) {
      if (c.*f != 0) v.push_back(us(c.*f));
    }
    return text(v);
  };
  std::vector<double> late_done, early_done;
  for (const GemmTraceCta& c : t.ctas) {
    if (c.done != 0) (c.entry > ref ? late_done : early_done).push_back(us(c.done));
  }
  const auto median = [](const std::vector<double>& v) {
    return v.empty() ? std::string("-") : fmt::format("{:.2f}", spread_of(v).median);
  };
  std::fprintf(stderr, "%s\n",
               fmt::format("batch {}: gemm trace {} ({} CTAs; us after the first dependency release; min / median / "
                           "max): entry {} | dependency {} | first stage {} | end {} | entered after the release: {} "
                           "CTAs, end median {} (the others {})",
                           batch, t.op, t.ctas.size(), field(&GemmTraceCta::entry), field(&GemmTraceCta::dependency),
                           field(&GemmTraceCta::first_full), field(&GemmTraceCta::done), late_done.size(),
                           median(late_done), median(early_done))
                   .c_str());
}

}  // namespace

BenchResult run_bench(GpuEngine& engine, const BenchShape& shape, int64_t repeats, double hbm_bytes_per_s) {
  const ModelConfig& c = engine.config();
  const std::string where = "dak bench";
  if (repeats < 1) fail(fmt::format("{} repeats", repeats), where, "pass --repeats 5 or more");
  if (shape.batch < 1 || shape.prompt_len < 1 || shape.gen_len < 2) {
    fail(fmt::format("batch {}, prompt {}, gen {}", shape.batch, shape.prompt_len, shape.gen_len), where,
         "use batch >= 1, prompt length >= 1 and generation length >= 2 (one decode step at least)");
  }
  const int64_t ctx = shape.prompt_len + shape.gen_len;
  if (ctx > c.max_position_embeddings) {
    fail(fmt::format("prompt {} + gen {} = {} tokens exceed the model's context of {}", shape.prompt_len,
                     shape.gen_len, ctx, c.max_position_embeddings),
         where, "use shorter --prompt-len / --gen-len");
  }
  const auto prompts = bench_prompts(shape, c.vocab_size);
  const SamplingParams greedy{};
  BenchResult r;
  r.shape = shape;
  r.repeats = repeats;

  std::vector<double> ttft, tpot_all, tpot_rep, wall;
  for (int64_t rep = -1; rep < repeats; ++rep) {  // rep -1: warm-up (plans, graph capture, clocks)
    engine.start(shape.batch, ctx);
    std::vector<int32_t> ids = engine.step_and_sample(prompts, greedy);
    const double t_first = engine.last_step_gpu_s();
    std::vector<double> steps;
    const int64_t replays0 = engine.graph_replays();
    for (int64_t t = 1; t < shape.gen_len; ++t) {
      const auto w0 = std::chrono::steady_clock::now();
      ids = engine.step_and_sample(as_steps(ids), greedy);
      const double w = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
      if (rep >= 0) {
        steps.push_back(engine.last_step_gpu_s());
        wall.push_back(w);
      }
    }
    if (rep < 0) continue;
    r.decode_steps_timed += int64_t(steps.size());
    if (engine.graph_replays() - replays0 != int64_t(steps.size())) {
      fail("a timed decode step did not replay the CUDA graph", where, "report this as a bug");
    }
    ttft.push_back(t_first);
    tpot_rep.push_back(median_of(steps));
    tpot_all.insert(tpot_all.end(), steps.begin(), steps.end());
  }
  r.ttft_s = spread_of(ttft);
#ifdef DAK_ATT_TRACE
  att_trace_report(fmt::format("batch {}", shape.batch).c_str());  // the last decode step's last layer
#endif
  print_gemm_trace(shape.batch, engine.gemm_trace());  // DAK_GEMM_TRACE=OP: the last decode layer's OP
  r.tpot_s = {median_of(tpot_all), *std::min_element(tpot_rep.begin(), tpot_rep.end()),
              *std::max_element(tpot_rep.begin(), tpot_rep.end())};
  r.tpot_wall_s = median_of(wall);
  const double tpot = r.tpot_s.median;
  r.decode_tokens_per_s = double(shape.batch) / tpot;
  r.e2e_tokens_per_s = double(shape.batch * shape.gen_len) / (r.ttft_s.median + double(shape.gen_len - 1) * tpot);

  // Bytes, floor and the cost model's prediction, from the planner's operator graph.
  StepShape ss;
  ss.batch = shape.batch;
  ss.prompt_len = shape.prompt_len;
  ss.gen_len = shape.gen_len;
  ss.phase = Phase::kDecode;
  const OpGraph graph = build_op_graph(c, ss);
  r.step_bytes = graph.step_model_bytes();
  // Priced as the planner prices this step (decode steps of <= kTieredDecodeMaxTokens take the tiered
  // GEMM's per-kernel overhead, as under --gemm auto) with the compiled-in profile of this GPU
  // (h200-default where none matches), at the B_g measured in this run.
  std::string why;
  const std::optional<DeviceInfo> dev = probe_device(0, &why);
  const std::optional<HardwareProfile> matched =
      dev ? HardwareProfile::for_device(dev->name, dev->sm_count, dev->hbm_bytes) : std::nullopt;
  HardwareProfile profile = matched.value_or(HardwareProfile::h200_default()).for_step(true, shape.batch);
  profile.hbm_read_gbps = hbm_bytes_per_s * 1e-9;
  const CostModel model(profile);
  std::vector<double> op_bytes(size_t(StepOp::kCount), 0.0);
  for (const Op& op : graph.ops) {
    if (op.kind == OpKind::kAttention) r.kv_step_bytes += op.step_bytes;
    op_bytes[size_t(step_op_of(op))] += op.step_bytes + double(op.fixed_bytes);
    r.model_tpot_s += model.cost(op, 0, DataPath::kNone).time_s;
  }
  r.eb_bytes_per_s = r.step_bytes / tpot;
  r.floor_s = r.step_bytes / hbm_bytes_per_s;
  r.ratio = tpot / r.floor_s;

  // Per-operator breakdown: decode normally up to the mean context, then profile a few steps.
  engine.start(shape.batch, ctx);
  std::vector<int32_t> ids = engine.step_and_sample(prompts, greedy);
  const int64_t profiled = std::min<int64_t>(3, shape.gen_len - 1);
  const int64_t lead = std::max<int64_t>(0, shape.gen_len / 2 - 1 - profiled / 2);
  for (int64_t t = 0; t < lead; ++t) ids = engine.step_and_sample(as_steps(ids), greedy);
  std::vector<std::vector<double>> per_op(size_t(StepOp::kCount));
  std::vector<int64_t> launches(size_t(StepOp::kCount), 0);
  for (int64_t t = 0; t < profiled; ++t) {
    const StepProfile prof = engine.profile_decode_step(as_steps(ids), greedy, &ids);
    r.profile_gated = r.profile_gated && prof.gated;
    for (const StepOpTime& o : prof.ops) {
      per_op[size_t(o.op)].push_back(o.time_s);
      launches[size_t(o.op)] = o.launches;
    }
  }
  for (size_t k = 0; k < per_op.size(); ++k) {
    if (launches[k] == 0) continue;
    OpBreakdown b;
    b.op = StepOp(k);
    b.time_s = median_of(per_op[k]);
    b.launches = launches[k];
    b.bytes = op_bytes[k];
    r.profiled_step_s += b.time_s;
    r.ops.push_back(b);
  }
  for (OpBreakdown& b : r.ops) b.share = r.profiled_step_s > 0 ? b.time_s / r.profiled_step_s : 0;
  return r;
}

Spread measure_h2d_copy_gbps(void* g_dst, const void* h_src, uint64_t bytes, int runs) {
  Stream s;
  std::vector<double> gbps;
  for (int r = 0; r <= runs; ++r) {  // r == 0: warm-up
    EventPair ev;
    DAK_CUDA_CHECK(cudaEventRecord(ev.begin, s));
    DAK_CUDA_CHECK(cudaMemcpyAsync(g_dst, h_src, bytes, cudaMemcpyHostToDevice, s));
    DAK_CUDA_CHECK(cudaEventRecord(ev.end, s));
    s.sync();
    if (r > 0) gbps.push_back(double(bytes) / ev.seconds() * 1e-9);
  }
  return spread_of(gbps);
}

HostReadBandwidth measure_host_read_bandwidth(void* h_buf, uint64_t bytes, int runs) {
  bytes = bytes / 16 * 16;
  if (!h_buf || bytes == 0 || runs < 1 || reinterpret_cast<uintptr_t>(h_buf) % 16 != 0) {
    fail(fmt::format("host bandwidth measurement over {} bytes with {} runs", bytes, runs),
         "measure_host_read_bandwidth", "give a 16-byte aligned pinned buffer of at least 16 bytes and one run");
  }
  // A pattern whose word sum the kernel's checksum must reproduce.
  auto* words = static_cast<uint32_t*>(h_buf);
  unsigned long long want = 0;
  for (uint64_t i = 0; i < bytes / 4; ++i) {
    const uint32_t v = uint32_t((i + 1) * 0x9E3779B1ull);
    words[i] = v;
    want += v;
  }
  struct Config {
    int ctas;
    int32_t stages;
  };
  constexpr Config kConfigs[] = {{4, 4}, {1, 4}, {8, 2}, {2, 4}, {4, 2}, {16, 1}};
  constexpr uint32_t kChunk = 32u << 10;
  constexpr int kWarmup = 2;
  const size_t launches = size_t(kWarmup + runs);
  HbmArena arena(HbmArena::aligned_size(launches * sizeof(unsigned long long)), "host bandwidth checksums");
  auto* g_sums = arena.allocate_array<unsigned long long>(launches, "checksums");  // [launches]
  Stream stream;
  HostReadBandwidth best;
  best.buffer_bytes = bytes;
  best.runs = runs;
  for (const Config& c : kConfigs) {
    ++best.configs;
    std::vector<EventPair> ev(launches);
    std::vector<unsigned long long> sums(launches);
    DAK_CUDA_CHECK(cudaMemsetAsync(g_sums, 0, launches * sizeof(unsigned long long), stream));
    for (size_t i = 0; i < launches; ++i) {
      DAK_CUDA_CHECK(cudaEventRecord(ev[i].begin, stream));
      hbm_stream(HbmStreamParams{h_buf, bytes, kChunk, c.stages, g_sums + i}, c.ctas, stream);
      DAK_CUDA_CHECK(cudaEventRecord(ev[i].end, stream));
    }
    DAK_CUDA_CHECK(cudaMemcpyAsync(sums.data(), g_sums, launches * sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                                   stream));
    DAK_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<double> bw;
    for (size_t i = 0; i < launches; ++i) {
      if (sums[i] != want) {
        fail(fmt::format("host stream checksum {:#x} differs from the host's {:#x} ({} CTAs x {} stages, launch {})",
                         sums[i], want, c.ctas, c.stages, i),
             "measure_host_read_bandwidth",
             "the SMs did not read the whole pinned buffer: run dak_gpu_tests (HbmStream, host arena)");
      }
      if (i >= size_t(kWarmup)) bw.push_back(double(bytes) / ev[i].seconds());
    }
    const Spread s = spread_of(bw);
    if (s.median > best.best_bytes_per_s) {
      best.best_bytes_per_s = s.median;
      best.max_bytes_per_s = s.max;
      best.chunk_bytes = kChunk;
      best.stages = c.stages;
      best.ctas = c.ctas;
    }
  }
  return best;
}

}  // namespace dak::gpu
