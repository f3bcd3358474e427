#include "gpu/bench_gemm.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "gpu/bench_util.h"
#include "gpu/cuda_check.h"
#include "gpu/gemm_cublaslt.h"
#include "gpu/hbm_arena.h"
#include "gpu/kernels/random_fill.h"
#include "gpu/kernels/tiered_gemm.h"

namespace dak::gpu {
namespace {

using bf16 = __nv_bfloat16;

/// Keeps the GPU busy with enqueue(0) for at least `seconds` (host clock), in batches of about 2 ms
/// each followed by a stream synchronization (so the launch queue never fills).
template <typename F>
void sustain_load(F& enqueue, double seconds, cudaStream_t s) {
  using Clock = std::chrono::steady_clock;
  const auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  const auto t0 = Clock::now();
  int batch = 1;
  while (since(t0) < seconds) {
    const auto b0 = Clock::now();
    for (int i = 0; i < batch; ++i) enqueue(0);
    DAK_CUDA_CHECK(cudaStreamSynchronize(s));
    batch = std::clamp(int(0.002 / std::max(since(b0) / batch, 1e-7)), 1, 256);
  }
}

/// Enqueues enqueue(k) for k in [0, warmup + runs) behind a closed gate, with events around the
/// timed ones (k >= warmup), opens the gate, waits, and returns the timed seconds / `divide`.
/// `*gated` becomes false when the gate opened by timeout (host gaps may be in the times).
/// enqueue(0) runs once before, outside the gate and synchronized: a kernel's first launch loads
/// its module (CUDA lazy loading), which can wait for the device while the gate holds it (as in
/// `dak bench attention`, docs/perf-notes.md session 7). Then enqueue(0) repeats for `warm_s`
/// seconds (`--warmup-ms`; sustained load: session 37 timed OPT-30B's qkv at N = 8 at 126 us
/// without it and 108 us after 20 ms of it; docs/bench-gemm.md).
template <typename F>
std::vector<double> time_runs(F&& enqueue, int warmup, int runs, double divide, double warm_s, cudaStream_t s,
                              HostGate& gate, bool* gated) {
  enqueue(0);
  DAK_CUDA_CHECK(cudaStreamSynchronize(s));
  sustain_load(enqueue, warm_s, s);
  std::vector<EventPair> ev(static_cast<size_t>(runs));
  const bool on_time = gate.run_gated(s, [&] {
    for (int k = 0; k < warmup + runs; ++k) {
      if (k >= warmup) DAK_CUDA_CHECK(cudaEventRecord(ev[size_t(k - warmup)].begin, s));
      enqueue(k);
      if (k >= warmup) DAK_CUDA_CHECK(cudaEventRecord(ev[size_t(k - warmup)].end, s));
    }
  });
  if (!on_time) *gated = false;
  std::vector<double> t;
  for (const EventPair& e : ev) t.push_back(e.seconds() / divide);
  return t;
}

/// Events without timing for graph dependencies, destroyed with the object.
struct SyncEvents {
  std::vector<cudaEvent_t> e;
  explicit SyncEvents(size_t n) : e(n, nullptr) {
    for (cudaEvent_t& x : e) DAK_CUDA_CHECK(cudaEventCreateWithFlags(&x, cudaEventDisableTiming));
  }
  ~SyncEvents() {
    for (cudaEvent_t x : e) {
      if (x) cudaEventDestroy(x);
    }
  }
  SyncEvents(const SyncEvents&) = delete;
  SyncEvents& operator=(const SyncEvents&) = delete;
};

uint64_t align(uint64_t bytes) { return HbmArena::aligned_size(bytes); }

int64_t max_k(const GemmBenchRequest& req) {
  int64_t k = 0;
  for (const LinearShape& op : req.ops) k = std::max(k, op.K);
  return k;
}

/// Largest m_host of op i over the request's points.
int64_t max_host_rows(const GemmBenchRequest& req, size_t i) {
  int64_t m = 0;
  for (const GemmPointRequest& p : req.points) m = std::max(m, p.schedules[i].m_host);
  return m;
}

uint64_t workspace_bytes_of(const GemmBenchRequest& req, size_t i) {
  int64_t b = req.reference[i].workspace_bytes();
  for (const GemmPointRequest& p : req.points) b = std::max(b, p.schedules[i].workspace_bytes());
  return uint64_t(b);
}

void check_request(const GemmBenchRequest& req) {
  const std::string where = "dak bench gemm";
  if (req.ops.empty() || req.N < 1 || req.layers < 1 || req.runs < 1 || req.warmup < 0) {
    fail(fmt::format("{} ops, N = {}, {} layers, {} runs, {} warm-ups", req.ops.size(), req.N, req.layers, req.runs,
                     req.warmup),
         where, "give at least one op, N >= 1, one layer and one run");
  }
  if (!(req.warmup_s >= 0 && req.warmup_s <= 10)) {
    fail(fmt::format("a sustained warm-up of {} s", req.warmup_s), where, "give 0 to 10 s");
  }
  if (req.timing == GemmTiming::kPerLaunch && (req.ops.size() != 1 || req.layers != 1)) {
    fail(fmt::format("per-launch timing of {} ops x {} layers", req.ops.size(), req.layers), where,
         "time one op per launch; use the graph stack for several");
  }
  auto check = [&](const TieredGemmSchedule& s, const LinearShape& op) {
    if (s.M != op.M || s.K != op.K || s.N != req.N) {
      fail(fmt::format("schedule {} does not match op {} [M {}, K {}] at N = {}", s.to_string(), op.op, op.M, op.K,
                       req.N),
           where, "build one schedule per op with the op's shape");
    }
    s.validate();
  };
  if (req.reference.size() != req.ops.size()) {
    fail(fmt::format("{} reference schedules for {} ops", req.reference.size(), req.ops.size()), where,
         "give one x = 0 schedule per op");
  }
  for (size_t i = 0; i < req.ops.size(); ++i) {
    check(req.reference[i], req.ops[i]);
    if (req.reference[i].m_host != 0) fail("the reference schedule has host rows", where, "use m_host = 0");
  }
  for (const GemmPointRequest& p : req.points) {
    if (p.schedules.size() != req.ops.size()) {
      fail(fmt::format("{} schedules for {} ops at x = {}", p.schedules.size(), req.ops.size(), p.ratio), where,
           "give one schedule per op");
    }
    for (size_t i = 0; i < req.ops.size(); ++i) check(p.schedules[i], req.ops[i]);
  }
}

float bf16_bits_to_float(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

/// max |a - b| / max |b| (infinity when either holds a NaN or Inf, or b is all zero).
double max_rel_diff(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = bf16_bits_to_float(a[i]), y = bf16_bits_to_float(b[i]);
    if (!std::isfinite(x) || !std::isfinite(y)) return std::numeric_limits<double>::infinity();
    num = std::max(num, std::fabs(x - y));
    den = std::max(den, std::fabs(y));
  }
  return den > 0 ? num / den : std::numeric_limits<double>::infinity();
}

}  // namespace

uint64_t gemm_bench_host_bytes(const GemmBenchRequest& req) {
  uint64_t b = PinnedHostArena::aligned_size(2 * sizeof(int32_t));  // the gate flag
  for (size_t i = 0; i < req.ops.size(); ++i) {
    const uint64_t rows = req.points.empty() ? 0 : uint64_t(max_host_rows(req, i));
    b += uint64_t(req.layers) * PinnedHostArena::aligned_size(rows * uint64_t(req.ops[i].K) * 2);
  }
  return b;
}

uint64_t gemm_bench_hbm_bytes(const GemmBenchRequest& req) {
  uint64_t b = align(uint64_t(req.N) * uint64_t(max_k(req)) * 2) + align(CublasLtGemm::kWorkspaceBytes);
  for (size_t i = 0; i < req.ops.size(); ++i) {
    const LinearShape& op = req.ops[i];
    b += uint64_t(req.layers) * (align(op.weight_bytes()) + align(uint64_t(req.N) * uint64_t(op.M) * 2));
    if (i < req.reference.size()) b += align(workspace_bytes_of(req, i));
  }
  return b;
}

GemmBenchResult run_gemm_bench(const GemmBenchRequest& req, PinnedHostArena& host) {
  check_request(req);
  const size_t n_ops = req.ops.size();
  const int L = req.layers;
  const size_t n_layers = static_cast<size_t>(L);
  const int64_t N = req.N;
  const bool per_launch = req.timing == GemmTiming::kPerLaunch;
  const double divide = per_launch ? 1.0 : double(L);

  // HBM: x, cuBLAS workspace, per op a tiered workspace, per (layer, op) W and y.
  HbmArena hbm(gemm_bench_hbm_bytes(req), fmt::format("dak bench gemm buffers ({} ops x {} layers, N = {})", n_ops,
                                                      L, N));
  auto* g_x = hbm.allocate_array<bf16>(uint64_t(N) * uint64_t(max_k(req)), "x");  // [N, K_max]
  void* g_cublas_ws = hbm.allocate(CublasLtGemm::kWorkspaceBytes, "cuBLASLt workspace");
  std::vector<void*> g_ws(n_ops);
  for (size_t i = 0; i < n_ops; ++i) g_ws[i] = hbm.allocate(workspace_bytes_of(req, i), "tiered GEMM workspace");
  std::vector<std::vector<bf16*>> g_w(n_layers, std::vector<bf16*>(n_ops));  // [M, K] each
  std::vector<std::vector<bf16*>> g_y(n_layers, std::vector<bf16*>(n_ops));  // [N, M] each
  for (int l = 0; l < L; ++l) {
    for (size_t i = 0; i < n_ops; ++i) {
      const LinearShape& op = req.ops[i];
      g_w[size_t(l)][i] = hbm.allocate_array<bf16>(uint64_t(op.M) * uint64_t(op.K), "W " + op.op);
      g_y[size_t(l)][i] = hbm.allocate_array<bf16>(uint64_t(N) * uint64_t(op.M), "y " + op.op);
    }
  }

  // Host: the gate flag, then per (layer, op) a copy of W's rows [0, m_host_max).
  host.reset();
  if (host.capacity() < gemm_bench_host_bytes(req)) {
    fail(fmt::format("the pinned host arena holds {} bytes, the experiment needs {}", host.capacity(),
                     gemm_bench_host_bytes(req)),
         "dak bench gemm", "size the arena with gemm_bench_host_bytes()");
  }
  // The gate's flags: the first slice of the arena (gemm_bench_host_bytes counts it).
  HostGate gate(host.allocate_array<int32_t>(2, "host gate flag"), 2000000000ull);
  std::vector<int64_t> m_max(n_ops);
  for (size_t i = 0; i < n_ops; ++i) m_max[i] = max_host_rows(req, i);
  std::vector<std::vector<bf16*>> h_w(n_layers, std::vector<bf16*>(n_ops, nullptr));  // [m_max, K] each
  for (int l = 0; l < L; ++l) {
    for (size_t i = 0; i < n_ops; ++i) {
      h_w[size_t(l)][i] =
          host.allocate_array<bf16>(uint64_t(m_max[i]) * uint64_t(req.ops[i].K), "host rows of W " + req.ops[i].op);
    }
  }

  Stream s0, s1;
  // Random data (HF initializer scale for W), then the host copies of the first rows.
  random_fill_bf16(RandomFillParams{g_x, N * max_k(req), req.weights_seed, 0, 0.0f, 1.0f}, s0);
  for (int l = 0; l < L; ++l) {
    for (size_t i = 0; i < n_ops; ++i) {
      const LinearShape& op = req.ops[i];
      random_fill_bf16(RandomFillParams{g_w[size_t(l)][i], op.M * op.K, req.weights_seed,
                                        1 + uint64_t(l) * n_ops + i, 0.0f, 0.02f * std::sqrt(3.0f)},
                       s0);
    }
  }
  for (size_t i = 0; i < n_ops; ++i) tiered_gemm_workspace_init(g_ws[i], req.reference[i], s0);
  DAK_CUDA_CHECK(cudaStreamSynchronize(s0));
  for (int l = 0; l < L; ++l) {
    for (size_t i = 0; i < n_ops; ++i) {
      const uint64_t bytes = uint64_t(m_max[i]) * uint64_t(req.ops[i].K) * 2;
      if (bytes > 0) DAK_CUDA_CHECK(cudaMemcpy(h_w[size_t(l)][i], g_w[size_t(l)][i], bytes, cudaMemcpyDeviceToHost));
    }
  }

  CublasLtGemm cublas(g_cublas_ws, CublasLtGemm::kWorkspaceBytes);
  auto run_tiered = [&](int l, size_t i, const TieredGemmSchedule& s, cudaStream_t st) {
    const LinearShape& op = req.ops[i];
    TieredGemmArgs a;
    a.g_x = g_x;
    a.h_w = s.m_host > 0 ? h_w[size_t(l)][i] : nullptr;
    a.g_w = s.m_host < op.M ? g_w[size_t(l)][i] + s.m_host * op.K : nullptr;
    a.g_y = g_y[size_t(l)][i];
    tiered_gemm(a, s, g_ws[i], st);
  };
  auto run_cublas = [&](int l, size_t i, cudaStream_t st) {
    const LinearShape& op = req.ops[i];
    GemmArgs a;
    a.g_x = g_x;
    a.g_w = g_w[size_t(l)][i];
    a.g_y = g_y[size_t(l)][i];
    a.N = N;
    a.M = op.M;
    a.K = op.K;
    cublas.run(a, st);
  };
  auto poison_outputs = [&] {
    for (int l = 0; l < L; ++l) {
      for (size_t i = 0; i < n_ops; ++i) {
        DAK_CUDA_CHECK(
            cudaMemsetAsync(g_y[size_t(l)][i], 0xFF, uint64_t(N) * uint64_t(req.ops[i].M) * 2, s0));  // bf16 NaN
      }
    }
  };
  auto download_outputs = [&] {
    DAK_CUDA_CHECK(cudaStreamSynchronize(s0));
    std::vector<uint16_t> out;
    for (int l = 0; l < L; ++l) {
      for (size_t i = 0; i < n_ops; ++i) {
        const size_t n = size_t(N) * size_t(req.ops[i].M);
        const size_t at = out.size();
        out.resize(at + n);
        DAK_CUDA_CHECK(cudaMemcpy(out.data() + at, g_y[size_t(l)][i], n * 2, cudaMemcpyDeviceToHost));
      }
    }
    return out;
  };

  GemmBenchResult r;
  bool gated = true;
  // Enqueues one measurement of a method: a launch (per-launch timing) or a graph replay.
  auto measure = [&](auto&& enqueue_all_layers) -> Spread {
    if (per_launch) {
      return spread_of(time_runs([&](int) { enqueue_all_layers(s0); }, req.warmup, req.runs, divide, req.warmup_s, s0, gate,
                                 &gated));
    }
    const Graph graph(s0, [&] { enqueue_all_layers(s0); });
    return spread_of(time_runs([&](int) { graph.launch(s0); }, req.warmup, req.runs, divide, req.warmup_s, s0, gate, &gated));
  };
  auto tiered_all = [&](const std::vector<TieredGemmSchedule>& sched, cudaStream_t st) {
    for (int l = 0; l < L; ++l) {
      for (size_t i = 0; i < n_ops; ++i) run_tiered(l, i, sched[i], st);
    }
  };

  // 1. Reference: the tiered GEMM at x = 0; its outputs are the bits every point must give.
  poison_outputs();
  r.tiered_ref_s = measure([&](cudaStream_t st) { tiered_all(req.reference, st); });
  const std::vector<uint16_t> ref = download_outputs();

  // 2. cuBLAS at x = 0 (plans created eagerly first, so that the capture holds no allocation).
  for (size_t i = 0; i < n_ops; ++i) run_cublas(0, i, s0);
  DAK_CUDA_CHECK(cudaStreamSynchronize(s0));
  poison_outputs();
  r.cublas_s = measure([&](cudaStream_t st) {
    for (int l = 0; l < L; ++l) {
      for (size_t i = 0; i < n_ops; ++i) run_cublas(l, i, st);
    }
  });
  r.max_rel_diff_vs_cublas = max_rel_diff(ref, download_outputs());
  if (per_launch) {
    r.cublas_op_s = {r.cublas_s};
  } else {
    // Per op, launches rotating over the layers' weights (so that small ones do not stay in L2).
    for (size_t i = 0; i < n_ops; ++i) {
      r.cublas_op_s.push_back(spread_of(
          time_runs([&](int k) { run_cublas(k % L, i, s0); }, req.warmup, req.runs, 1.0, req.warmup_s, s0, gate, &gated)));
    }
  }
  const bool prefetch_cublas = r.cublas_s.median < r.tiered_ref_s.median;
  r.prefetch_gemm = prefetch_cublas ? "cublas" : "tiered";
  auto hbm_gemm = [&](int l, size_t i, cudaStream_t st) {
    if (prefetch_cublas) {
      run_cublas(l, i, st);
    } else {
      run_tiered(l, i, req.reference[i], st);
    }
  };

  // 3. The offload points.
  for (const GemmPointRequest& p : req.points) {
    GemmPointResult pr;
    pr.ratio = p.ratio;
    for (size_t i = 0; i < n_ops; ++i) pr.host_bytes += uint64_t(p.schedules[i].m_host) * uint64_t(req.ops[i].K) * 2;
    poison_outputs();
    pr.tiered_s = measure([&](cudaStream_t st) { tiered_all(p.schedules, st); });
    pr.same_bits = download_outputs() == ref;

    auto copy_rows = [&](int l, size_t i, cudaStream_t st) {
      const uint64_t bytes = uint64_t(p.schedules[i].m_host) * uint64_t(req.ops[i].K) * 2;
      if (bytes > 0) {
        DAK_CUDA_CHECK(
            cudaMemcpyAsync(g_w[size_t(l)][i], h_w[size_t(l)][i], bytes, cudaMemcpyHostToDevice, st));
      }
    };
    if (per_launch) {
      pr.prefetch_s = measure([&](cudaStream_t st) {
        copy_rows(0, 0, st);
        hbm_gemm(0, 0, st);
      });
    } else {
      // Layer-wise double buffering: copies on s1, GEMMs on s0; layer l's copies wait for layer
      // l - 2's GEMMs (two staging slots), layer l's GEMMs wait for its copies.
      SyncEvents fork(1), copied(n_layers), done(n_layers);
      const Graph graph(s0, [&] {
        DAK_CUDA_CHECK(cudaEventRecord(fork.e[0], s0));
        DAK_CUDA_CHECK(cudaStreamWaitEvent(s1, fork.e[0], 0));
        for (int l = 0; l < L; ++l) {
          if (l >= 2) DAK_CUDA_CHECK(cudaStreamWaitEvent(s1, done.e[size_t(l - 2)], 0));
          for (size_t i = 0; i < n_ops; ++i) copy_rows(l, i, s1);
          DAK_CUDA_CHECK(cudaEventRecord(copied.e[size_t(l)], s1));
          DAK_CUDA_CHECK(cudaStreamWaitEvent(s0, copied.e[size_t(l)], 0));
          for (size_t i = 0; i < n_ops; ++i) hbm_gemm(l, i, s0);
          DAK_CUDA_CHECK(cudaEventRecord(done.e[size_t(l)], s0));
        }
      });
      pr.prefetch_s = spread_of(
          time_runs([&](int) { graph.launch(s0); }, req.warmup, req.runs, divide, req.warmup_s, s0, gate, &gated));
    }
    r.points.push_back(pr);
  }
  r.gated = gated;
  return r;
}

}  // namespace dak::gpu
