// Diagnostic probe of the tiered GEMM at m_host = 0: time per GEMM and effective bandwidth of the
// Llama-2-7B decode linears at N = 1 and 8 for k_splits in {default, 1, 2, 3, 4}, and fixed-cost shapes; 8 back-to-back
// launches on distinct copies of W (more than L2), as in a decode graph, medians of 5.
// `gemm_probe M N K splits stages` runs one case (for Nsight Compute). Prints one line per case.
// W and x are zeros, or random as in `dak bench gemm` with DAK_PROBE_FILL=random; DAK_PROBE_REPEAT=R
// times each case R times over (sustained load, for clocks and power) and prints the last.
// `gemm_probe host M N K m_host max_cluster host_ctas host_stages [cluster]` runs one GEMM with rows
// [0, m_host) of W in pinned host memory (host_ctas / host_stages 0: the planned schedule; cluster
// forces the multicast cluster with them): its time,
// the host rows' GB/s, the schedule; for the low-ratio direct path at large N (docs/perf-notes.md,
// session 5) with and without HBM rows next to it, and under Nsight Compute.
// `gemm_probe tma` streams W boxes with TMA and no math (probe_tma); `gemm_probe stream` compares
// the steady-state rate of the GEMM's W access pattern with bulk copies and the GEMM (probe_stream);
// `gemm_probe tiles [M K N [BN S]]` times the compute path's two tiles against cuBLASLt (probe_tiles;
// one shape, tile and split with the arguments, for Nsight Compute).
// `gemm_probe trace [layers [S_qkv S_o S_gate_up S_down [N]]]` records per-CTA timestamps of a graph of
// decode linears at N tokens (default 8), k-splits forced per op where given (0: planned; probe_trace).
// Build: see tools/device/gemm_probe.sh.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/tiered_gemm_schedule.h"
#include "gpu/cuda_check.h"
#include "gpu/gemm_cublaslt.h"
#include "gpu/host_arena.h"
#include "gpu/kernels/hbm_stream.h"
#include "gpu/kernels/random_fill.h"
#include "gpu/kernels/tiered_gemm.h"

#include <cuda.h>

#include <cuda/ptx>

#include <cutlass/cuda_host_adapter.hpp>

constexpr size_t kWElems = size_t(1) << 30;  // 2 GiB of W copies

/// Median time in us of `launch()` enqueued on `stream` (CUDA events around it): 2 warm-ups, 5 timed.
template <class Launch>
double median_us(Launch&& launch, cudaStream_t stream = nullptr) {
  cudaEvent_t e0, e1;
  DAK_CUDA_CHECK(cudaEventCreate(&e0));
  DAK_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<float> t;
  for (int r = 0; r < 7; ++r) {
    DAK_CUDA_CHECK(cudaEventRecord(e0, stream));
    launch();
    DAK_CUDA_CHECK(cudaEventRecord(e1, stream));
    DAK_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    DAK_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 2) t.push_back(ms);
  }
  DAK_CUDA_CHECK(cudaEventDestroy(e0));
  DAK_CUDA_CHECK(cudaEventDestroy(e1));
  std::sort(t.begin(), t.end());
  return double(t[t.size() / 2]) * 1e3;
}

/// Median time in us of one launch of `run(w_copy)` over `copies` back-to-back launches, each on
/// its own copy of W (copy i at `w + i * w_elems` bf16 elements: more than L2, as in a layer stack).
template <class Run>
double per_copy_us(Run&& run, void* w, size_t w_elems, int copies) {
  return median_us([&] {
           for (int i = 0; i < copies; ++i) run(static_cast<const __nv_bfloat16*>(w) + i * w_elems);
         }) /
         copies;
}

/// `s` with k_splits = S and the HBM CTA count re-derived for the new unit count (setting
/// k_splits alone keeps the CTAs planned for the old one: S = 2 on 64 m-tiles ran on 64 CTAs).
dak::TieredGemmSchedule with_k_splits(dak::TieredGemmSchedule s, int32_t S, int sms) {
  s.k_splits = S;
  if (S > 1) s.k_chunks = 1;  // chunks only on unsplit schedules
  return dak::with_congestion(s, s.host_ctas, s.host_stages, 0, sms);
}

/// `gemm_probe host ...`: one tiered GEMM with host rows, 2 warm-ups and 5 timed launches.
int probe_host_rows(int argc, char** argv, int sms) {
  using namespace dak;
  const int64_t M = std::atoll(argv[2]), N = std::atoll(argv[3]), K = std::atoll(argv[4]);
  const int64_t m_host = std::atoll(argv[5]);
  TieredGemmLinkLimits limits = gpu::tiered_gemm_cluster_limits();
  limits.max_cluster = std::atoi(argv[6]);
  TieredGemmSchedule s = plan_tiered_gemm(M, N, K, m_host, sms, limits);
  const int host_ctas = std::atoi(argv[7]), host_stages = std::atoi(argv[8]);
  const int32_t force_cluster = argc > 9 ? std::atoi(argv[9]) : 0;  // 0: the planned cluster
  if (host_ctas > 0 && host_stages > 0) {
    const int64_t c = force_cluster > 0 ? force_cluster : s.cluster;
    s = with_congestion(s, host_ctas, host_stages, force_cluster, limits.grid_ctas(c, sms));
  }
  gpu::PinnedHostArena host(uint64_t(std::max<int64_t>(m_host, 1) * K * 2), "probe host rows");
  auto* h_w = host.allocate_array<uint16_t>(uint64_t(std::max<int64_t>(m_host, 1) * K), "W host rows");
  for (int64_t i = 0; i < m_host * K; ++i) h_w[i] = uint16_t(0x3c00 + (i * 7919) % 256);  // ~1, not zero
  void *w, *x, *y, *ws;
  DAK_CUDA_CHECK(cudaMalloc(&w, size_t(std::max<int64_t>(M - m_host, 1) * K * 2)));
  DAK_CUDA_CHECK(cudaMalloc(&x, size_t(N * K * 2)));
  DAK_CUDA_CHECK(cudaMalloc(&y, size_t(N * M * 2)));
  DAK_CUDA_CHECK(cudaMalloc(&ws, size_t(s.workspace_bytes())));
  DAK_CUDA_CHECK(cudaMemset(w, 0x3c, size_t(std::max<int64_t>(M - m_host, 1) * K * 2)));
  DAK_CUDA_CHECK(cudaMemset(x, 0x3c, size_t(N * K * 2)));
  gpu::tiered_gemm_workspace_init(ws, s, nullptr);
  gpu::TieredGemmArgs a;
  a.g_x = static_cast<const __nv_bfloat16*>(x);
  a.h_w = m_host > 0 ? reinterpret_cast<const __nv_bfloat16*>(h_w) : nullptr;
  a.g_w = m_host < M ? static_cast<const __nv_bfloat16*>(w) : nullptr;
  a.g_y = y;
  const double us = median_us([&] { gpu::tiered_gemm(a, s, ws, nullptr); });
  std::printf("host M=%ld N=%ld K=%ld m_host=%ld | %9.1f us  host rows %7.2f GB/s | %s\n", long(M), long(N), long(K),
              long(m_host), us, double(m_host * K * 2) / us * 1e-3, s.to_string().c_str());
  return 0;
}

/// `gemm_probe trace [layers [S_qkv S_o S_gate_up S_down]]`: the Llama-2-7B decode linears (qkv, o,
/// gate_up, down; N = 8, m_host = 0; k-splits forced per op where given and > 0)
/// of `layers` layers (default 2) back to back in one CUDA graph, each on its own W; after 5 replays
/// the last one's per-CTA timestamps (TieredGemmArgs::g_trace), summarized per GEMM in us from the
/// graph's first CTA entry: where a launch's time goes (start, dependency wait, first stage, tail).
int probe_trace(int argc, char** argv, int sms) {
  using namespace dak;
  const int layers = argc > 2 ? std::atoi(argv[2]) : 2;
  int32_t forced_splits[4] = {0, 0, 0, 0};  // trace LAYERS [S_qkv S_o S_gate_up S_down]; 0: default
  for (int i = 0; i < 4 && 3 + i < argc; ++i) forced_splits[i] = std::atoi(argv[3 + i]);
  struct Op {
    const char* name;
    int64_t M, K;
  };
  const Op ops[] = {{"qkv", 12288, 4096}, {"o", 4096, 4096}, {"gate_up", 22016, 4096}, {"down", 4096, 11008}};
  // trace LAYERS S_qkv S_o S_gate_up S_down N: the tokens (default 8; 1-64, the 64-row tiles).
  const int64_t N = argc > 7 ? std::atoll(argv[7]) : 8;
  if (N < 1 || N > 64) {
    std::fprintf(stderr, "trace: N = %ld outside 1-64 (the bandwidth path's 64-row tiles)\n", long(N));
    return 2;
  }
  std::vector<TieredGemmSchedule> sched;
  std::vector<const Op*> seq;
  size_t w_elems = 0;
  for (int l = 0; l < layers; ++l) {
    for (int o = 0; o < 4; ++o) {
      const Op& op = ops[o];
      seq.push_back(&op);
      sched.push_back(plan_tiered_gemm(op.M, N, op.K, 0, sms));
      if (forced_splits[o] > 0) sched.back() = with_k_splits(sched.back(), forced_splits[o], sms);
      w_elems += size_t(op.M * op.K);
    }
  }
  if (w_elems > kWElems) {
    std::fprintf(stderr, "trace: %d layers need more than the probe's 2 GiB of W\n", layers);
    return 2;
  }
  const int G = int(seq.size());
  void *w, *x, *y, *ws, *tr;
  DAK_CUDA_CHECK(cudaMalloc(&w, w_elems * 2));
  DAK_CUDA_CHECK(cudaMalloc(&x, size_t(N * 11008 * 2)));
  DAK_CUDA_CHECK(cudaMalloc(&y, size_t(N * 22016 * 2) * size_t(G)));
  DAK_CUDA_CHECK(cudaMalloc(&ws, 64 << 20));
  DAK_CUDA_CHECK(cudaMalloc(&tr, size_t(G) * size_t(sms) * gpu::kGemmTraceFields * sizeof(uint64_t)));
  DAK_CUDA_CHECK(cudaMemset(w, 0, w_elems * 2));
  DAK_CUDA_CHECK(cudaMemset(x, 0, size_t(N * 11008 * 2)));
  DAK_CUDA_CHECK(cudaMemset(ws, 0, 64 << 20));
  cudaStream_t st;
  DAK_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  auto* tw = static_cast<uint64_t*>(tr);
  cudaGraph_t graph;
  DAK_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  size_t w_at = 0;
  for (int g = 0; g < G; ++g) {
    gpu::TieredGemmArgs a;
    a.g_x = static_cast<const __nv_bfloat16*>(x);
    a.g_w = static_cast<const __nv_bfloat16*>(w) + w_at;
    a.g_y = static_cast<__nv_bfloat16*>(y) + size_t(g) * size_t(N * 22016);
    a.g_trace = tw + size_t(g) * size_t(sms) * gpu::kGemmTraceFields;
    w_at += size_t(seq[size_t(g)]->M * seq[size_t(g)]->K);
    gpu::tiered_gemm(a, sched[size_t(g)], ws, st);
  }
  DAK_CUDA_CHECK(cudaStreamEndCapture(st, &graph));
  cudaGraphExec_t exec;
  DAK_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  const double graph_us = median_us([&] { DAK_CUDA_CHECK(cudaGraphLaunch(exec, st)); }, st);
  std::vector<uint64_t> h(size_t(G) * size_t(sms) * gpu::kGemmTraceFields);
  DAK_CUDA_CHECK(cudaMemcpy(h.data(), tr, h.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  // CTA c of GEMM g: its record (gpu::TieredGemmTraceField).
  const auto record = [&](int g, int c) { return &h[(size_t(g) * size_t(sms) + size_t(c)) * gpu::kGemmTraceFields]; };
  uint64_t t0 = ~0ull;
  for (int g = 0; g < G; ++g) {
    for (int c = 0; c < sched[size_t(g)].hbm_ctas; ++c) t0 = std::min(t0, record(g, c)[gpu::kGemmTraceEntry]);
  }
  std::printf("trace: %d GEMMs at N = %ld, graph %.1f us (median of 5), %.1f us per layer\n", G, long(N), graph_us,
              graph_us / layers);
  std::printf("%-8s %5s %4s | %6s %6s | %6s %6s | %6s %6s %6s | %6s %6s %6s | %6s %6s | %7s\n", "op", "units", "ctas",
              "entry0", "entry1", "dep0", "dep1", "full0", "fullm", "full1", "done0", "donem", "done1", "span",
              "ideal", "GB/s");
  double prev_done = 0;
  for (int g = 0; g < G; ++g) {
    const TieredGemmSchedule& s = sched[size_t(g)];
    std::vector<double> entry, dep, full, done, done_most, done_fewer;
    uint64_t most = 0;
    for (int c = 0; c < s.hbm_ctas; ++c) most = std::max(most, record(g, c)[gpu::kGemmTraceUnits]);
    for (int c = 0; c < s.hbm_ctas; ++c) {
      const uint64_t* r = record(g, c);
      // Differences in integers first: a double near 1.8e18 ns (the epoch) resolves only 256 ns.
      auto us = [&](uint64_t v) { return v ? double(int64_t(v - t0)) * 1e-3 : -1.0; };
      entry.push_back(us(r[gpu::kGemmTraceEntry]));
      dep.push_back(us(r[gpu::kGemmTraceDependency]));
      full.push_back(us(r[gpu::kGemmTraceFirstFull]));
      done.push_back(std::max(us(r[gpu::kGemmTraceDone0]), us(r[gpu::kGemmTraceDone1])));
      (r[gpu::kGemmTraceUnits] == most ? done_most : done_fewer).push_back(done.back());
    }
    for (auto* v : {&done_most, &done_fewer}) std::sort(v->begin(), v->end());
    for (auto* v : {&entry, &dep, &full, &done}) std::sort(v->begin(), v->end());
    const double bytes = double(s.M * s.K * 2);
    const double span = done.back() - entry.front();
    std::printf("%-8s %5ld %4d | %6.1f %6.1f | %6.1f %6.1f | %6.1f %6.1f %6.1f | %6.1f %6.1f %6.1f | %6.1f %6.1f | %7.0f"
                "  (entry - previous done %5.1f, dependency - previous done %5.1f; done median of CTAs with "
                "the most / fewer units %6.1f / %6.1f)\n",
                seq[size_t(g)]->name, long(s.hbm_units()), s.hbm_ctas, entry.front(), entry.back(), dep.front(),
                dep.back(), full.front(), full[full.size() / 2], full.back(), done.front(), done[done.size() / 2],
                done.back(), span, bytes / 4.49e6, bytes / span * 1e-3, entry.front() - prev_done,
                dep.front() - prev_done, done_most.empty() ? -1.0 : done_most[done_most.size() / 2],
                done_fewer.empty() ? -1.0 : done_fewer[done_fewer.size() / 2]);
    prev_done = done.back();
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// `gemm_probe tma`: the streaming rate of one CTA (and of a full wave) without any math, to tell
// the TMA unit's rate from the consumers' per-k-block wgmma chain (docs/perf-notes.md, session 8).
// A producer thread streams 2D tensor boxes (box_rows x 64 bf16, 128-byte swizzle, as the tiered
// GEMM's W tiles) of its m-tiles in k order into a `stages`-deep ring; a consumer thread waits for
// each stage and releases it at once. Also 1D bulk copies (hbm_stream) of the same bytes per copy.
/// Initializes the probe kernels' ring (`stages` full barriers of one arrival, empty barriers of
/// `releases`) and returns the loads of this CTA: its m-tiles (blockIdx.x, + gridDim.x, ...) x k_blocks.
__device__ int64_t init_ring(uint64_t* full, uint64_t* empty, int stages, int releases, int m_tiles, int k_blocks) {
  namespace ptx = cuda::ptx;
  if (threadIdx.x == 0) {
    for (int i = 0; i < stages; ++i) {
      ptx::mbarrier_init(&full[i], 1);
      ptx::mbarrier_init(&empty[i], uint32_t(releases));
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  return int64_t((m_tiles - int(blockIdx.x) + int(gridDim.x) - 1) / int(gridDim.x)) * k_blocks;
}

__global__ void tma_box_stream(const __grid_constant__ CUtensorMap map, int m_tiles, int k_blocks, int box_rows,
                               int stages, int atoms, int box_k = 64) {
  namespace ptx = cuda::ptx;
  extern __shared__ __align__(1024) uint8_t smem[];
  uint8_t* data = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem) + 1023) & ~uintptr_t(1023));
  const uint32_t box_bytes = uint32_t(box_rows) * uint32_t(box_k) * 2 * uint32_t(atoms);
  uint64_t* full = reinterpret_cast<uint64_t*>(data + size_t(stages) * box_bytes);
  uint64_t* empty = full + stages;
  const int64_t total = init_ring(full, empty, stages, 1, m_tiles, k_blocks);
  if (threadIdx.x == 0) {
    int st = 0;
    uint32_t phase = 0;
    for (int64_t j = 0; j < total; ++j) {
      const int m_tile = int(blockIdx.x) + int(j / k_blocks) * int(gridDim.x);
      const int kb = int(j % k_blocks);
      while (!ptx::mbarrier_try_wait_parity(&empty[st], phase ^ 1u)) {
      }
      ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[st], box_bytes);
      if (atoms == 1) {
        const int32_t coords[2] = {kb * box_k, m_tile * box_rows};
        ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, data + size_t(st) * box_bytes, &map, coords,
                                  &full[st]);
      } else {  // 3D view [K / 64, rows, 64]: one box of `atoms` 64-wide atoms
        const int32_t coords[3] = {0, m_tile * box_rows, kb * atoms};
        ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, data + size_t(st) * box_bytes, &map, coords,
                                  &full[st]);
      }
      if (++st == stages) st = 0, phase ^= 1u;
    }
  } else if (threadIdx.x == 32) {
    int st = 0;
    uint32_t phase = 0;
    for (int64_t j = 0; j < total; ++j) {
      while (!ptx::mbarrier_try_wait_parity(&full[st], phase)) {
      }
      ptx::mbarrier_arrive(&empty[st]);
      if (++st == stages) st = 0, phase ^= 1u;
    }
  }
}

/// Variants of tma_box_stream for one CTA (`gemm_probe tma`): what a GEMM stage adds to the bare W
/// stream. kDiv: the producer derives (m-tile, k-block) with 64-bit division per load (as
/// tma_box_stream), else nested loops; kX: a second box per stage (8 rows x 64 of a [8, K] x, as the
/// GEMM's activation tile); kConsumerWarps warps wait on each stage and each releases it.
template <bool kDiv, bool kX, int kConsumerWarps>
__global__ void tma_stage_variants(const __grid_constant__ CUtensorMap w_map, const __grid_constant__ CUtensorMap x_map,
                                   int m_tiles, int k_blocks, int stages) {
  namespace ptx = cuda::ptx;
  extern __shared__ __align__(1024) uint8_t smem[];
  uint8_t* data = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem) + 1023) & ~uintptr_t(1023));
  constexpr uint32_t kW = 64 * 128, kXb = kX ? 8 * 128 : 0, kStage = kW + 1024;
  uint64_t* full = reinterpret_cast<uint64_t*>(data + size_t(stages) * kStage);
  uint64_t* empty = full + stages;
  const int64_t total = init_ring(full, empty, stages, kConsumerWarps, m_tiles, k_blocks);
  if (threadIdx.x == 0) {
    int st = 0;
    uint32_t phase = 0;
    auto load = [&](int m_tile, int kb) {
      while (!ptx::mbarrier_try_wait_parity(&empty[st], phase ^ 1u)) {
      }
      ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[st], kW + kXb);
      const int32_t cw[2] = {kb * 64, m_tile * 64};
      ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, data + size_t(st) * kStage, &w_map, cw,
                                &full[st]);
      if constexpr (kX) {
        const int32_t cx[2] = {kb * 64, 0};
        ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, data + size_t(st) * kStage + kW, &x_map, cx,
                                  &full[st]);
      }
      if (++st == stages) st = 0, phase ^= 1u;
    };
    if constexpr (kDiv) {
      for (int64_t j = 0; j < total; ++j) load(int(blockIdx.x) + int(j / k_blocks) * int(gridDim.x), int(j % k_blocks));
    } else {
      for (int m = int(blockIdx.x); m < m_tiles; m += int(gridDim.x)) {
        for (int kb = 0; kb < k_blocks; ++kb) load(m, kb);
      }
    }
  } else if (threadIdx.x >= 32) {
    int st = 0;
    uint32_t phase = 0;
    for (int64_t j = 0; j < total; ++j) {
      while (!ptx::mbarrier_try_wait_parity(&full[st], phase)) {
      }
      __syncwarp();
      if (threadIdx.x % 32 == 0) ptx::mbarrier_arrive(&empty[st]);
      if (++st == stages) st = 0, phase ^= 1u;
    }
  }
}

int probe_tma(int sms) {
  using namespace dak;
  const size_t elems = size_t(1) << 28;  // 512 MiB of W
  void* w;
  DAK_CUDA_CHECK(cudaMalloc(&w, elems * 2));
  DAK_CUDA_CHECK(cudaMemset(w, 0, elems * 2));
  auto time_us = [](auto&& launch) { return median_us(launch); };
  struct Case {
    int box_rows, stages, grid;
    int64_t M, K;
    int atoms = 1;  // > 1: a 3D box of this many 64-wide atoms along K (one TMA instruction)
  };
  // One CTA: 2 MiB (a 64-row tile, K = 16384, as the probe's single-tile shape); a full wave: 132
  // CTAs x 64 rows x K = 4096 (69 MB), and 8448 rows of 256-row boxes.
  const Case cases[] = {{64, 22, 1, 64, 16384},      {64, 8, 1, 64, 16384},       {64, 4, 1, 64, 16384},
                        {256, 6, 1, 256, 4096},      {128, 12, 1, 128, 8192},     {64, 22, sms, 64LL * sms, 4096},
                        {256, 6, sms, 256LL * sms, 1024},
                        {64, 6, 1, 64, 16384, 4},    {64, 6, sms, 64LL * sms, 4096, 4}};
  for (const Case& c : cases) {
    CUtensorMap map{};
    const cuuint64_t dims[3] = {cuuint64_t(c.atoms > 1 ? 64 : c.K), cuuint64_t(c.M), cuuint64_t(c.K / 64)};
    const cuuint64_t strides[2] = {cuuint64_t(c.K) * 2, 128};
    const cuuint32_t box[3] = {64, cuuint32_t(c.box_rows), cuuint32_t(c.atoms)};
    const cuuint32_t es[3] = {1, 1, 1};
    const CUresult r = CUTLASS_CUDA_DRIVER_WRAPPER_CALL(cuTensorMapEncodeTiled)(
        &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, c.atoms > 1 ? 3 : 2, w, dims, strides, box, es,
        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
      std::printf("tma: encode failed (%d)\n", int(r));
      return 1;
    }
    const size_t smem = size_t(c.stages) * size_t(c.box_rows) * 128 * size_t(c.atoms) + 1024 + size_t(c.stages) * 16;
    DAK_CUDA_CHECK(cudaFuncSetAttribute(tma_box_stream, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    const int m_tiles = int(c.M / c.box_rows), k_blocks = int(c.K / 64 / c.atoms);
    const double us =
        time_us([&] { tma_box_stream<<<c.grid, 64, smem>>>(map, m_tiles, k_blocks, c.box_rows, c.stages, c.atoms); });
    DAK_CUDA_CHECK(cudaGetLastError());
    const double bytes = double(c.M * c.K * 2);
    std::printf("tma %dD box %3d x 64 x %d (%2d KiB) stages %2d grid %3d: %8.1f us  %7.1f GB/s  (%.1f GB/s per CTA)\n",
                c.atoms > 1 ? 3 : 2, c.box_rows, c.atoms, c.box_rows * c.atoms / 8, c.stages, c.grid, us,
                bytes / us * 1e-3, bytes / us * 1e-3 / c.grid);
  }
  {
    // One CTA, W [64, 16384] in 64 x 64 boxes (2 MiB), 8 stages: the stage variants.
    const int64_t M = 64, K = 16384;
    auto encode2d = [&](int64_t rows, int box_rows) {
      CUtensorMap map{};
      const cuuint64_t dims[2] = {cuuint64_t(K), cuuint64_t(rows)};
      const cuuint64_t strides[1] = {cuuint64_t(K) * 2};
      const cuuint32_t box[2] = {64, cuuint32_t(box_rows)};
      const cuuint32_t es[2] = {1, 1};
      const CUresult r = CUTLASS_CUDA_DRIVER_WRAPPER_CALL(cuTensorMapEncodeTiled)(
          &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, w, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
          CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (r != CUDA_SUCCESS) std::printf("tma: encode failed (%d)\n", int(r));
      return map;
    };
    const CUtensorMap wm = encode2d(M, 64), xm = encode2d(8, 8);
    const int stages = 8;
    const size_t smem = size_t(stages) * (64 * 128 + 1024) + 1024 + size_t(stages) * 16;
    auto run = [&](auto kernel, const char* name, int threads) {
      DAK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
      const double us = time_us([&] { kernel<<<1, threads, smem>>>(wm, xm, 1, int(K / 64), stages); });
      DAK_CUDA_CHECK(cudaGetLastError());
      std::printf("stage variant %-40s: %8.1f us  %6.1f GB/s of W\n", name, us, double(M * K * 2) / us * 1e-3);
    };
    run(tma_stage_variants<true, false, 1>, "64-bit division, W only, 1 warp", 64);
    run(tma_stage_variants<false, false, 1>, "nested loops, W only, 1 warp", 64);
    run(tma_stage_variants<false, true, 1>, "nested loops, W + x box, 1 warp", 64);
    run(tma_stage_variants<false, false, 4>, "nested loops, W only, 4 warps", 160);
    run(tma_stage_variants<false, true, 4>, "nested loops, W + x box, 4 warps", 160);
    run(tma_stage_variants<true, true, 4>, "64-bit division, W + x box, 4 warps", 160);
  }
  unsigned long long* sum;
  DAK_CUDA_CHECK(cudaMalloc(&sum, 8));
  const int bulk[][3] = {{8 << 10, 22, 1}, {32 << 10, 6, 1}, {64 << 10, 3, 1}, {8 << 10, 22, 0}, {32 << 10, 6, 0}};
  for (const auto& b : bulk) {
    const int grid = b[2] ? b[2] : sms;
    gpu::HbmStreamParams hp;
    hp.g_src = w;
    hp.bytes = uint64_t(2) << 20;
    if (grid > 1) hp.bytes = uint64_t(64 * 4096 * 2) * uint64_t(grid);
    hp.chunk_bytes = uint32_t(b[0]);
    hp.stages = b[1];
    hp.g_checksum = sum;
    const double us = time_us([&] { gpu::hbm_stream(hp, grid, nullptr); });
    std::printf("bulk 1D %2d KiB stages %2d grid %3d: %8.1f us  %7.1f GB/s  (%.1f GB/s per CTA)\n", b[0] >> 10, b[1], grid,
                us, double(hp.bytes) / us * 1e-3, double(hp.bytes) / us * 1e-3 / grid);
  }
  return 0;
}

/// An all-HBM GEMM ready to launch: the default schedule for (M, N, K) on `sms` SMs with k_splits
/// `splits` and `stages` HBM stages forced where non-zero, its workspace counters zeroed, and
/// the arguments over x, w and y (the caller may move a.g_w).
struct PreparedGemm {
  dak::TieredGemmSchedule s;
  dak::gpu::TieredGemmArgs a;
};
PreparedGemm prepare_hbm_gemm(int64_t M, int64_t N, int64_t K, int32_t splits, int32_t stages, int sms, void* x,
                              void* w, void* y, void* ws) {
  PreparedGemm g;
  g.s = dak::plan_tiered_gemm(M, N, K, 0, sms);
  if (splits) g.s = with_k_splits(g.s, splits, sms);
  if (stages) g.s.hbm_stages = stages;
  g.s.validate();
  DAK_CUDA_CHECK(cudaMemset(ws, 0, size_t(g.s.workspace_bytes())));
  g.a.g_x = static_cast<const __nv_bfloat16*>(x);
  g.a.g_w = static_cast<const __nv_bfloat16*>(w);
  g.a.g_y = y;
  return g;
}

// `gemm_probe stream`: the steady-state HBM rate of the tiered GEMM's W access pattern against
// contiguous bulk copies, over one 940 MB weight (Llama-2-70B gate_up, 57344 x 8192 bf16; far more
// than L2), one CTA per SM, no math: 3D boxes of 64 rows x 4 atoms (the 64-row tiles' wide stage,
// 32 KiB) at 5 and 6 stages, 2D boxes of 256 rows x 64 (32 KiB), 1D bulk copies of 32 KiB x 5 and 64
// KiB x 3 (hbm_stream's best configuration, B_g); then the tiered GEMM itself on that weight at N = 8.
// Tells whether the GEMM's ~0.88 of B_g on long GEMMs comes from the access pattern or from the
// GEMM (session 12, docs/perf-notes.md).
int probe_stream(int sms) {
  using namespace dak;
  const int64_t M = 57344, K = 8192;
  const double bytes = double(M) * double(K) * 2;
  void* w;
  DAK_CUDA_CHECK(cudaMalloc(&w, size_t(bytes)));
  DAK_CUDA_CHECK(cudaMemset(w, 0, size_t(bytes)));
  struct Case {
    int box_rows, atoms, stages;
    int box_k = 64;  // 2D boxes: K elements per box (256 only without swizzle: 512 contiguous bytes per row)
    CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
    CUtensorMapL2promotion promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  };
  const Case cases[] = {{64, 4, 5},
                        {64, 4, 6},
                        {64, 4, 3},
                        {256, 1, 5},
                        {128, 2, 5},
                        {64, 8, 3},
                        {64, 4, 5, 64, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE},
                        {64, 4, 5, 64, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B},
                        {64, 1, 5, 256, CU_TENSOR_MAP_SWIZZLE_NONE},
                        {32, 1, 10, 256, CU_TENSOR_MAP_SWIZZLE_NONE},
                        {128, 1, 3, 256, CU_TENSOR_MAP_SWIZZLE_NONE}};
  for (const Case& c : cases) {
    CUtensorMap map{};
    const cuuint64_t dims[3] = {cuuint64_t(c.atoms > 1 ? 64 : K), cuuint64_t(M), cuuint64_t(K / 64)};
    const cuuint64_t strides[2] = {cuuint64_t(K) * 2, 128};
    const cuuint32_t box[3] = {cuuint32_t(c.box_k), cuuint32_t(c.box_rows), cuuint32_t(c.atoms)};
    const cuuint32_t es[3] = {1, 1, 1};
    const CUresult r = CUTLASS_CUDA_DRIVER_WRAPPER_CALL(cuTensorMapEncodeTiled)(
        &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, c.atoms > 1 ? 3 : 2, w, dims, strides, box, es,
        CU_TENSOR_MAP_INTERLEAVE_NONE, c.swizzle, c.promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
      std::printf("stream: encode failed (%d)\n", int(r));
      return 1;
    }
    const size_t box_bytes = size_t(c.box_rows) * size_t(c.box_k) * 2 * size_t(c.atoms);
    const size_t smem = size_t(c.stages) * box_bytes + 1024 + size_t(c.stages) * 16;
    DAK_CUDA_CHECK(cudaFuncSetAttribute(tma_box_stream, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    const int m_tiles = int(M / c.box_rows), k_blocks = int(K / c.box_k / c.atoms);
    const double us = median_us(
        [&] { tma_box_stream<<<sms, 64, smem>>>(map, m_tiles, k_blocks, c.box_rows, c.stages, c.atoms, c.box_k); });
    DAK_CUDA_CHECK(cudaGetLastError());
    std::printf("stream tma %dD box %3d rows x %d x %d (%2d KiB, %s, L2 promotion %s) stages %d grid %d: %8.1f us  %7.1f GB/s\n",
                c.atoms > 1 ? 3 : 2, c.box_rows, c.atoms, c.box_k, int(box_bytes >> 10),
                c.swizzle == CU_TENSOR_MAP_SWIZZLE_NONE ? "no swizzle" : "128B swizzle",
                c.promotion == CU_TENSOR_MAP_L2_PROMOTION_NONE   ? "none"
                : c.promotion == CU_TENSOR_MAP_L2_PROMOTION_L2_128B ? "128B"
                                                                    : "256B",
                c.stages, sms, us, bytes / us * 1e-3);
  }
  unsigned long long* sum;
  DAK_CUDA_CHECK(cudaMalloc(&sum, 8));
  const int bulk[][2] = {{32 << 10, 5}, {32 << 10, 6}, {64 << 10, 3}};
  for (const auto& b : bulk) {
    gpu::HbmStreamParams hp;
    hp.g_src = w;
    hp.bytes = uint64_t(bytes);
    hp.chunk_bytes = uint32_t(b[0]);
    hp.stages = b[1];
    hp.g_checksum = sum;
    const double us = median_us([&] { gpu::hbm_stream(hp, sms, nullptr); });
    std::printf("stream bulk 1D %2d KiB stages %d grid %d: %8.1f us  %7.1f GB/s\n", b[0] >> 10, b[1], sms, us,
                bytes / us * 1e-3);
  }
  void *x, *y, *ws;
  DAK_CUDA_CHECK(cudaMalloc(&x, 8 * K * 2));
  DAK_CUDA_CHECK(cudaMalloc(&y, 8 * M * 4));
  DAK_CUDA_CHECK(cudaMalloc(&ws, 256 << 20));
  DAK_CUDA_CHECK(cudaMemset(x, 0, 8 * K * 2));
  for (int32_t sp : {0, 1, 2}) {
    auto [s, a] = prepare_hbm_gemm(M, 8, K, sp, 0, sms, x, w, y, ws);
    const double us = median_us([&] { gpu::tiered_gemm(a, s, ws, nullptr); });
    std::printf("stream tiered GEMM M=%ld N=8 K=%ld splits=%d stages=%d ctas=%d: %8.1f us  %7.1f GB/s\n", long(M),
                long(K), s.k_splits, s.hbm_stages, s.hbm_ctas, us, bytes / us * 1e-3);
  }
  return 0;
}

// `gemm_probe tiles`: the compute path (N > 64, all of W in HBM) on the 128 x 128 and the 128 x 256
// tile, each with k_splits 1 to 4, against cuBLASLt, for the linears of Llama-2-7B, Llama-2-70B and
// OPT-30B at N = 256, 512 and 1024: 8 back-to-back launches on distinct copies of W (more than L2,
// as in a layer stack), us per GEMM (median of 5), with the model's cost
// (tiered_gemm_compute_cost) beside each and the (tile, k_splits) plan_tiered_gemm takes. Random
// inputs (random_fill): a tensor-core GEMM's speed depends on its values through power and clocks.
// The A/B of the compute tiles and splits (docs/perf-notes.md, session 18; its calls 1-4 ran this
// probe with zeros).
// `gemm_probe tiles M K N [BN S]` times one shape (and, with BN and S, one tile and split) for Nsight
// Compute.
int probe_tiles(int argc, char** argv, int sms) {
  using namespace dak;
  std::vector<std::array<int64_t, 2>> shapes = {{12288, 4096}, {4096, 4096},  {22016, 4096}, {4096, 11008},
                                                {57344, 8192}, {8192, 28672}, {21504, 7168}, {7168, 28672}};
  std::vector<int64_t> tokens = {256, 512, 1024};
  int only_bn = 0, only_split = 0;
  if (argc >= 5) {
    shapes = {{std::atoll(argv[2]), std::atoll(argv[3])}};
    tokens = {std::atoll(argv[4])};
  }
  if (argc >= 7) only_bn = std::atoi(argv[5]), only_split = std::atoi(argv[6]);
  // DAK_PROBE_COPIES=1 re-reads one copy of W: L2-resident where W fits (the main loop without HBM).
  // DAK_PROBE_CLUSTER=C runs the tiles in multicast clusters of C sharing each W tile (session 19:
  // is the 128 x 128 tile's L2 -> SMEM traffic its limit?).
  const char* forced_copies = std::getenv("DAK_PROBE_COPIES");
  const char* forced_cluster = std::getenv("DAK_PROBE_CLUSTER");
  const int32_t C = forced_cluster ? std::atoi(forced_cluster) : 1;
  size_t max_x = 0, max_y = 0;
  for (const auto& mk : shapes) {
    max_x = std::max(max_x, size_t(1024 * mk[1]));
    max_y = std::max(max_y, size_t(1024 * mk[0]));
  }
  void *w, *x, *y, *ws, *lt_ws;
  DAK_CUDA_CHECK(cudaMalloc(&w, kWElems * 2));
  DAK_CUDA_CHECK(cudaMalloc(&x, max_x * 2));
  DAK_CUDA_CHECK(cudaMalloc(&y, max_y * 2));
  const size_t ws_bytes = size_t(512) << 20;
  DAK_CUDA_CHECK(cudaMalloc(&ws, ws_bytes));
  DAK_CUDA_CHECK(cudaMemset(ws, 0, ws_bytes));  // split counters start at zero (every run resets them)
  DAK_CUDA_CHECK(cudaMalloc(&lt_ws, gpu::CublasLtGemm::kWorkspaceBytes));
  // Random inputs: with zeros the tensor cores draw less power and the GPU keeps higher clocks,
  // which flattered the 128 x 256 tile (session 18: 1.6 narrow k-blocks per wide one with zeros,
  // 1.75 in `dak bench gemm` with random values).
  gpu::RandomFillParams fill;
  fill.g_out = static_cast<__nv_bfloat16*>(w);
  fill.n = int64_t(kWElems);
  fill.half_range = 0.05f;
  gpu::random_fill_bf16(fill, nullptr);
  fill.g_out = static_cast<__nv_bfloat16*>(x);
  fill.n = int64_t(max_x);
  fill.stream = 1;
  fill.half_range = 1.0f;
  gpu::random_fill_bf16(fill, nullptr);
  DAK_CUDA_CHECK(cudaDeviceSynchronize());
  gpu::CublasLtGemm lt(lt_ws, gpu::CublasLtGemm::kWorkspaceBytes);
  std::printf("us per GEMM (model cost in 128 x 128 k-blocks); '-': more split tiles than the workspace counts\n");
  std::printf("%6s %6s %5s %4s | %15s %15s %15s %15s | %8s | %s\n", "M", "K", "N", "bn", "S=1", "S=2", "S=3", "S=4",
              "cuBLASLt", "planned");
  for (const auto& mk : shapes) {
    const int64_t M = mk[0], K = mk[1];
    const size_t w_elems = size_t(M * K);
    const int copies = forced_copies ? std::max(1, std::atoi(forced_copies))
                                     : int(std::min<size_t>(8, kWElems / w_elems));
    for (int64_t N : tokens) {
      gpu::GemmArgs g;
      g.g_x = static_cast<const __nv_bfloat16*>(x);
      g.g_y = y;
      g.N = N;
      g.M = M;
      g.K = K;
      const double lt_us = per_copy_us(
          [&](const __nv_bfloat16* wi) {
            g.g_w = wi;
            lt.run(g, nullptr);
          },
          w, w_elems, copies);
      const TieredGemmSchedule planned = plan_tiered_gemm(M, N, K, 0, sms);
      for (const TieredGemmTile tile : {TieredGemmTile{128, 128}, TieredGemmTile{128, 256}}) {
        if (only_bn != 0 && tile.bn != only_bn) continue;
        std::printf("%6ld %6ld %5ld %4d |", long(M), long(K), long(N), tile.bn);
        for (int32_t S = 1; S <= 4; ++S) {
          if (only_split != 0 && S != only_split) continue;
          TieredGemmSchedule s = planned;
          s.tile = tile;
          s.k_splits = S;
          s.k_chunks = 1;
          s.hbm_stages = tile.max_stages();
          if (s.max_output_tiles() > TieredGemmSchedule::kMaxSplitTiles ||
              size_t(s.workspace_bytes()) > ws_bytes) {
            std::printf(" %15s", "-");
            continue;
          }
          // HBM CTAs for the tile's unit count, in clusters of C (DAK_PROBE_CLUSTER, above)
          s = with_congestion(s, 0, 1, C, gpu::tiered_gemm_cluster_limits().grid_ctas(C, sms));
          gpu::TieredGemmArgs a;
          a.g_x = static_cast<const __nv_bfloat16*>(x);
          a.g_y = y;
          const double us = per_copy_us(
              [&](const __nv_bfloat16* wi) {
                a.g_w = wi;
                gpu::tiered_gemm(a, s, ws, nullptr);
              },
              w, w_elems, copies);
          std::printf(" %7.1f (%5.0f)", us, tiered_gemm_compute_cost(M, N, K, tile, S, sms));
        }
        std::printf(" | %8.1f | %dx%d S=%d\n", lt_us, planned.tile.bm, planned.tile.bn, planned.k_splits);
      }
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  using namespace dak;
  int sms = 0;
  DAK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  if ((argc == 9 || argc == 10) && std::string(argv[1]) == "host") return probe_host_rows(argc, argv, sms);
  if (argc >= 2 && std::string(argv[1]) == "trace") return probe_trace(argc, argv, sms);
  if (argc == 2 && std::string(argv[1]) == "tma") return probe_tma(sms);
  if (argc == 2 && std::string(argv[1]) == "stream") return probe_stream(sms);
  if (argc >= 2 && std::string(argv[1]) == "tiles") return probe_tiles(argc, argv, sms);
  struct Case {
    int64_t M, N, K;
    int32_t splits;  // 0: default
    int32_t stages;  // 0: default
  };
  std::vector<Case> cases;
  // The Llama-2-7B decode linears (qkv, o, gate_up, down, logits) at N = 1 and 8, every k_splits
  // in {default, 1, 2, 3, 4} at N = 8, the default at N = 1. Then shapes that separate the fixed
  // cost of a launch from streaming (N = 8, one split): 132 tiles (one per SM) with K = 256 / 1024 /
  // 4096 (4 to 64 k-blocks per CTA), 264 tiles (two full waves) and a single 64-row tile (one CTA's
  // streaming rate).
  const int64_t shapes[][2] = {{12288, 4096}, {4096, 4096}, {22016, 4096}, {4096, 11008}, {32000, 4096}};
  for (const auto& mk : shapes) {
    for (int32_t sp : {0, 1, 2, 3, 4}) cases.push_back({mk[0], 8, mk[1], sp, 0});
    cases.push_back({mk[0], 1, mk[1], 0, 0});
  }
  const int64_t fixed_cost_shapes[][2] = {{8448, 256},  {8448, 1024}, {8448, 4096},
                                          {16896, 4096}, {64, 4096},   {64, 16384}};
  for (const auto& mk : fixed_cost_shapes) cases.push_back({mk[0], 8, mk[1], 1, 0});
  if (argc == 6) {  // one case: M N K splits stages (for Nsight Compute)
    cases = {{std::atoll(argv[1]), std::atoll(argv[2]), std::atoll(argv[3]), std::atoi(argv[4]), std::atoi(argv[5])}};
  }
  size_t max_x = 0, max_y = 0;
  for (auto& c : cases) {
    max_x = std::max(max_x, size_t(c.N * c.K));
    max_y = std::max(max_y, size_t(c.N * c.M));
  }
  void *w, *x, *y, *ws;
  DAK_CUDA_CHECK(cudaMalloc(&w, kWElems * 2));
  DAK_CUDA_CHECK(cudaMalloc(&x, max_x * 2));
  DAK_CUDA_CHECK(cudaMalloc(&y, max_y * 4));
  DAK_CUDA_CHECK(cudaMalloc(&ws, 256 << 20));
  DAK_CUDA_CHECK(cudaMemset(w, 0, kWElems * 2));
  DAK_CUDA_CHECK(cudaMemset(x, 0, max_x * 2));
  // DAK_PROBE_FILL=random: W and x random as in `dak bench gemm` (HF initializer scale for W)
  // instead of zeros, to see whether the data changes the time (power, clocks).
  const char* fill = std::getenv("DAK_PROBE_FILL");
  const bool random = fill != nullptr && std::string(fill) == "random";
  if (random) {
    gpu::random_fill_bf16({static_cast<__nv_bfloat16*>(w), int64_t(kWElems), 0, 1, 0.0f, 0.02f * 1.7320508f}, nullptr);
    gpu::random_fill_bf16({static_cast<__nv_bfloat16*>(x), int64_t(max_x), 0, 0, 0.0f, 1.0f}, nullptr);
    DAK_CUDA_CHECK(cudaDeviceSynchronize());
  }
  const char* rep = std::getenv("DAK_PROBE_REPEAT");
  const int repeat = rep != nullptr ? std::max(1, std::atoi(rep)) : 1;
  std::printf("W and x: %s\n", random ? "random (DAK_PROBE_FILL=random)" : "zeros");
  for (auto& c : cases) {
    auto [s, a] = prepare_hbm_gemm(c.M, c.N, c.K, c.splits, c.stages, sms, x, w, y, ws);
    // 8 back-to-back launches, each on its own W copy (8 x W > L2), as in a decode graph.
    const size_t w_elems = size_t(c.M * c.K);
    const int copies = int(std::min<size_t>(8, kWElems / w_elems));
    double us = 0;
    for (int r = 0; r < repeat; ++r) {  // DAK_PROBE_REPEAT: sustained load, the last repetition printed
      us = per_copy_us(
          [&](const __nv_bfloat16* wi) {
            a.g_w = wi;
            gpu::tiered_gemm(a, s, ws, nullptr);
          },
          w, w_elems, copies);
    }
    std::printf("M=%6ld N=%3ld K=%6ld splits=%2d stages=%2d units=%5ld | %8.1f us  %7.1f GB/s", long(c.M), long(c.N),
                long(c.K), s.k_splits, s.hbm_stages, long(s.hbm_units()), us, double(c.M * c.K * 2) / us * 1e-3);
    std::printf("\n");
  }
  return 0;
}
