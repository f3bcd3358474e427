// Diagnostic probe of the tiered GEMM at m_host = 0: GEMM time and effective bandwidth for a few
// decode shapes while varying k_splits, HBM stages and the W row pitch (K), to locate the
// bandwidth loss. Prints one line per case. Build: see tools/device/gemm_probe.sh.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/tiered_gemm_schedule.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels/tiered_gemm.h"

int main() {
  using namespace dak;
  int sms = 0;
  DAK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  struct Case {
    int64_t M, N, K;
    int32_t splits;  // 0: default
    int32_t stages;  // 0: default
  };
  std::vector<Case> cases = {
      {32000, 1, 4096, 0, 0}, {32000, 1, 4096, 4, 0}, {32000, 1, 4096, 16, 0}, {32000, 1, 4160, 0, 0},
      {32000, 1, 4160, 4, 0}, {4096, 1, 4096, 0, 0},  {4096, 1, 4160, 0, 0},   {12288, 1, 4096, 0, 0},
      {12288, 1, 4096, 8, 0}, {22016, 1, 4096, 0, 0}, {22016, 1, 4096, 1, 0},  {22016, 1, 4096, 16, 0},
      {22016, 8, 4096, 0, 8}, {22016, 8, 4096, 0, 4}, {22016, 64, 4096, 0, 0}, {4096, 8, 11008, 0, 0},
  };
  size_t max_w = 0, max_x = 0, max_y = 0;
  for (auto& c : cases) {
    max_w = std::max(max_w, size_t(c.M * c.K));
    max_x = std::max(max_x, size_t(c.N * c.K));
    max_y = std::max(max_y, size_t(c.N * c.M));
  }
  void *w, *x, *y, *ws, *flush;
  DAK_CUDA_CHECK(cudaMalloc(&w, max_w * 2));
  DAK_CUDA_CHECK(cudaMalloc(&x, max_x * 2));
  DAK_CUDA_CHECK(cudaMalloc(&y, max_y * 4));
  DAK_CUDA_CHECK(cudaMalloc(&ws, 256 << 20));
  DAK_CUDA_CHECK(cudaMalloc(&flush, 256 << 20));
  DAK_CUDA_CHECK(cudaMemset(w, 0, max_w * 2));
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
    std::vector<float> t;
    for (int r = 0; r < 12; ++r) {
      DAK_CUDA_CHECK(cudaMemsetAsync(flush, r, 256 << 20));  // evict W from L2
      cudaEventRecord(e0);
      gpu::tiered_gemm(a, s, ws, nullptr);
      cudaEventRecord(e1);
      DAK_CUDA_CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      if (r >= 2) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    const double us = t[t.size() / 2] * 1e3;
    std::printf("M=%6ld N=%3ld K=%6ld splits=%2d stages=%2d units=%5ld | %8.1f us  %7.1f GB/s\n", long(c.M), long(c.N),
                long(c.K), s.k_splits, s.hbm_stages, long(s.hbm_units()), us, double(c.M * c.K * 2) / us * 1e-3);
  }
  return 0;
}
