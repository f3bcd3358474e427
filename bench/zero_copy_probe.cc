// Zero-copy GEMM probe (session 11): why `dak profile`'s isolated zero-copy GEMM rates disagree with
// what the engine's zero-copy linears take. cuBLASLt y[N, M] = x[N, K] W^T, K = 4096, with the first
// `rows` rows of W in pinned mapped host memory and the rest in HBM, run as the engine runs a
// zero-copy linear (host GEMM into y columns [0, rows), then the HBM GEMM into the rest; ldy = M),
// and the host GEMM alone back to back (as `dak profile` measures it). Prints the median time of
// each kernel (CUDA events, 7 launches after 2 warm-ups) and the host GEMM's GB/s.
//
//   build-gpu/zero_copy_probe [M]      (M = 12288 by default: Llama-2-7B's qkv)
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "gpu/cuda_check.h"
#include "gpu/gemm_cublaslt.h"
#include "gpu/hbm_arena.h"
#include "gpu/host_arena.h"
#include "gpu/kernels/random_fill.h"

using namespace dak::gpu;
using bf16 = __nv_bfloat16;

namespace {

float ms_between(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  DAK_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t M = argc > 1 ? std::atoll(argv[1]) : 12288, K = 4096, n_max = 512;
  constexpr int kRuns = 7;
  PinnedHostArena host(uint64_t(M * K * 2), "probe host W");
  auto* h_w = static_cast<bf16*>(host.allocate(uint64_t(M * K * 2), "W"));
  HbmArena arena(HbmArena::aligned_size(uint64_t(M * K * 2)) + HbmArena::aligned_size(uint64_t(n_max * K * 2)) +
                     HbmArena::aligned_size(uint64_t(n_max * M * 2)) + CublasLtGemm::kWorkspaceBytes,
                 "probe operands");
  auto* g_w = arena.allocate_array<bf16>(uint64_t(M * K), "W");
  auto* g_x = arena.allocate_array<bf16>(uint64_t(n_max * K), "x");
  auto* g_y = arena.allocate_array<bf16>(uint64_t(n_max * M), "y");
  void* g_ws = arena.allocate(CublasLtGemm::kWorkspaceBytes, "ws");
  cudaStream_t s;
  DAK_CUDA_CHECK(cudaStreamCreate(&s));
  random_fill_bf16(RandomFillParams{g_w, M * K, 3, 0, 0.0f, 1.0f}, s);
  random_fill_bf16(RandomFillParams{g_x, n_max * K, 3, 1, 0.0f, 1.0f}, s);
  DAK_CUDA_CHECK(cudaMemcpyAsync(h_w, g_w, uint64_t(M * K * 2), cudaMemcpyDeviceToHost, s));
  DAK_CUDA_CHECK(cudaStreamSynchronize(s));
  CublasLtGemm gemm(g_ws, CublasLtGemm::kWorkspaceBytes);
  std::vector<cudaEvent_t> ev(4 * (kRuns + 2));
  for (auto& e : ev) DAK_CUDA_CHECK(cudaEventCreate(&e));

  fmt::print("| N | host rows | engine order: host us | host GB/s | HBM us | host alone, ldy M: us | GB/s | host alone, "
             "ldy rows: us | GB/s |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int64_t n : {int64_t(8), int64_t(512)}) {
    for (int64_t rows : {128, 256, 384, 512, 640, 768, 1024, 2048}) {
      GemmArgs hg;  // the host rows, y columns [0, rows)
      hg.g_x = g_x, hg.g_w = h_w, hg.g_y = g_y, hg.ldy = M, hg.N = n, hg.M = rows, hg.K = K;
      GemmArgs dg = hg;  // the HBM rows, y columns [rows, M)
      dg.g_w = g_w + rows * K, dg.g_y = g_y + rows, dg.M = M - rows;
      std::vector<double> t_host, t_hbm, t_alone, t_alone_narrow;
      for (int r = 0; r < kRuns + 2; ++r) {
        DAK_CUDA_CHECK(cudaEventRecord(ev[4 * r], s));
        gemm.run(hg, s);
        DAK_CUDA_CHECK(cudaEventRecord(ev[4 * r + 1], s));
        gemm.run(dg, s);
        DAK_CUDA_CHECK(cudaEventRecord(ev[4 * r + 2], s));
      }
      DAK_CUDA_CHECK(cudaStreamSynchronize(s));
      for (int r = 2; r < kRuns + 2; ++r) {
        t_host.push_back(ms_between(ev[4 * r], ev[4 * r + 1]));
        t_hbm.push_back(ms_between(ev[4 * r + 1], ev[4 * r + 2]));
      }
      for (int pass = 0; pass < 2; ++pass) {
        GemmArgs a = hg;
        if (pass == 1) a.ldy = rows;
        for (int r = 0; r < kRuns + 2; ++r) {
          DAK_CUDA_CHECK(cudaEventRecord(ev[4 * r], s));
          gemm.run(a, s);
          DAK_CUDA_CHECK(cudaEventRecord(ev[4 * r + 1], s));
        }
        DAK_CUDA_CHECK(cudaStreamSynchronize(s));
        for (int r = 2; r < kRuns + 2; ++r) (pass ? t_alone_narrow : t_alone).push_back(ms_between(ev[4 * r], ev[4 * r + 1]));
      }
      const double bytes = double(rows * K * 2);
      const double h = median(t_host) * 1e3, a = median(t_alone) * 1e3, an = median(t_alone_narrow) * 1e3;
      fmt::print("| {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} |\n", n, rows, h,
                 bytes / h * 1e-3, median(t_hbm) * 1e3, a, bytes / a * 1e-3, an, bytes / an * 1e-3);
    }
  }
  return 0;
}
