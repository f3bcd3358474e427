// Diagnostic probe of the tiered GEMM at m_host = 0: time per GEMM and effective bandwidth of the
// Llama-2-7B decode linears at N = 1 and 8 for k_splits in {default, 1, 2, 3, 4}, and fixed-cost shapes; 8 back-to-back
// launches on distinct copies of W (more than L2), as in a decode graph, medians of 5.
// `gemm_probe M N K splits stages` runs one case (for Nsight Compute). Prints one line per case.
// `gemm_probe host M N K m_host max_cluster host_ctas host_stages` runs one GEMM with rows
// [0, m_host) of W in pinned host memory (host_ctas / host_stages 0: the planned schedule): its time,
// the host rows' GB/s, the schedule; for the low-ratio direct path at large N (docs/perf-notes.md,
// session 5) with and without HBM rows next to it, and under Nsight Compute.
// Build: see tools/device/gemm_probe.sh.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/tiered_gemm_schedule.h"
#include "gpu/cuda_check.h"
#include "gpu/host_arena.h"
#include "gpu/kernels/tiered_gemm.h"

constexpr size_t kWElems = size_t(1) << 30;  // 2 GiB of W copies

/// `gemm_probe host ...`: one tiered GEMM with host rows, 2 warm-ups and 5 timed launches.
int probe_host_rows(int argc, char** argv, int sms) {
  using namespace dak;
  const int64_t M = std::atoll(argv[2]), N = std::atoll(argv[3]), K = std::atoll(argv[4]);
  const int64_t m_host = std::atoll(argv[5]);
  TieredGemmLinkLimits limits = gpu::tiered_gemm_cluster_limits();
  limits.max_cluster = std::atoi(argv[6]);
  TieredGemmSchedule s = plan_tiered_gemm(M, N, K, m_host, sms, limits);
  const int host_ctas = std::atoi(argv[7]), host_stages = std::atoi(argv[8]);
  if (host_ctas > 0 && host_stages > 0) {
    s = with_congestion(s, host_ctas, host_stages, 0, limits.grid_ctas(s.cluster, sms));
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
  cudaEvent_t e0, e1;
  DAK_CUDA_CHECK(cudaEventCreate(&e0));
  DAK_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<float> t;
  for (int r = 0; r < 7; ++r) {
    DAK_CUDA_CHECK(cudaEventRecord(e0));
    gpu::tiered_gemm(a, s, ws, nullptr);
    DAK_CUDA_CHECK(cudaEventRecord(e1));
    DAK_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    DAK_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 2) t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  const double us = t[t.size() / 2] * 1e3;
  std::printf("host M=%ld N=%ld K=%ld m_host=%ld | %9.1f us  host rows %7.2f GB/s | %s\n", long(M), long(N), long(K),
              long(m_host), us, double(m_host * K * 2) / us * 1e-3, s.to_string().c_str());
  return 0;
}

int main(int argc, char** argv) {
  using namespace dak;
  int sms = 0;
  DAK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  if (argc == 9 && std::string(argv[1]) == "host") return probe_host_rows(argc, argv, sms);
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
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (auto& c : cases) {
    TieredGemmSchedule s = plan_tiered_gemm(c.M, c.N, c.K, 0, sms);
    if (c.splits) s.k_splits = c.splits;
    if (c.stages) s.hbm_stages = c.stages;
    s.validate();
    DAK_CUDA_CHECK(cudaMemset(ws, 0, size_t(s.workspace_bytes())));
    gpu::TieredGemmArgs a;
    a.g_x = static_cast<const __nv_bfloat16*>(x);
    a.g_w = static_cast<const __nv_bfloat16*>(w);
    a.g_y = y;
    // 8 back-to-back launches, each on its own W copy (8 x W > L2), as in a decode graph.
    const size_t w_elems = size_t(c.M * c.K);
    const int copies = int(std::min<size_t>(8, kWElems / w_elems));
    std::vector<float> t;
    for (int r = 0; r < 7; ++r) {
      cudaEventRecord(e0);
      for (int i = 0; i < copies; ++i) {
        a.g_w = static_cast<const __nv_bfloat16*>(w) + i * w_elems;
        gpu::tiered_gemm(a, s, ws, nullptr);
      }
      cudaEventRecord(e1);
      DAK_CUDA_CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      if (r >= 2) t.push_back(ms / copies);
    }
    std::sort(t.begin(), t.end());
    const double us = t[t.size() / 2] * 1e3;
    std::printf("M=%6ld N=%3ld K=%6ld splits=%2d stages=%2d units=%5ld | %8.1f us  %7.1f GB/s", long(c.M), long(c.N),
                long(c.K), s.k_splits, s.hbm_stages, long(s.hbm_units()), us, double(c.M * c.K * 2) / us * 1e-3);
    std::printf("\n");
  }
  return 0;
}
