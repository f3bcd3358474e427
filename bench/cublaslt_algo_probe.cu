// Diagnostic probe (session 48): how far is cuBLASLt's first heuristic from the fastest of its
// candidates on dak's decode linears above 32 tokens (where `--gemm auto` runs cuBLASLt)?
// For each Llama-2-7B linear (qkv 12288 x 4096, o 4096 x 4096, gate_up 22016 x 4096, down 4096 x 11008)
// at N tokens (default 64; `cublaslt_algo_probe N...`): every candidate cublasLtMatmulAlgoGetHeuristic
// returns (up to 16), bf16 in / out, fp32 accumulate, y[N, M] = x[N, K] W[M, K]^T as gemm_cublaslt.cc
// calls it, timed as a CUDA graph of 8 launches on 8 different weight copies (so W is never served
// from the L2; one replay = 8 GEMMs), median of 9 replays after 2, next to the weight floor
// bytes / B_g with B_g the TMA bulk stream of the same run (measure_hbm_bandwidth, gpu/bench.h).
// Prints per candidate: rank, us per GEMM, % of floor, tile / stages / split-K / cluster ids; then the
// first heuristic against the best. Build: nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc
// bench/cublaslt_algo_probe.cu build-gpu/libdak_gpu.a build-gpu/libdak_core.a -lcublasLt -lcuda -lfmt
// (tools/device/session48_d.sh).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gpu/bench.h"
#include "gpu/cuda_check.h"

namespace {

#define LT(expr)                                                                                  \
  do {                                                                                            \
    cublasStatus_t st_ = (expr);                                                                  \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                           \
      std::fprintf(stderr, "%s failed: %s (line %d)\n", #expr, cublasLtGetStatusString(st_), __LINE__); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

constexpr int kCopies = 8;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int config_attr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  uint32_t v = 0;
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written) != CUBLAS_STATUS_SUCCESS) return -1;
  return int(v);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> tokens;
  for (int i = 1; i < argc; ++i) tokens.push_back(atoll(argv[i]));
  if (tokens.empty()) tokens = {64};
  struct Shape {
    const char* name;
    int64_t M, K;
  };
  const Shape shapes[] = {{"qkv", 12288, 4096}, {"o", 4096, 4096}, {"gate_up", 22016, 4096}, {"down", 4096, 11008}};
  size_t w_max = 0;
  for (const Shape& s : shapes) w_max = std::max(w_max, size_t(s.M * s.K * 2));
  std::vector<void*> w(kCopies);
  for (void*& p : w) {
    DAK_CUDA_CHECK(cudaMalloc(&p, w_max));
    DAK_CUDA_CHECK(cudaMemset(p, 0x3c, w_max));  // bf16 0x3c3c ~ 0.0115
  }
  // B_g as dak bench measures it (its TMA bulk-stream configurations, best launch), over a buffer of
  // the largest weight's size.
  const double bg = dak::gpu::measure_hbm_bandwidth(w_max, 5).best_bytes_per_s;
  std::printf("B_g %.1f GB/s (TMA bulk stream of %.0f MB, measure_hbm_bandwidth)\n", bg / 1e9, double(w_max) / 1e6);
  void *x = nullptr, *y = nullptr, *ws = nullptr;
  const size_t ws_bytes = size_t(32) << 20;
  DAK_CUDA_CHECK(cudaMalloc(&x, size_t(8192) * 11008 * 2));
  DAK_CUDA_CHECK(cudaMemset(x, 0x3c, size_t(8192) * 11008 * 2));
  DAK_CUDA_CHECK(cudaMalloc(&y, size_t(8192) * 22016 * 2));
  DAK_CUDA_CHECK(cudaMalloc(&ws, ws_bytes));
  cublasLtHandle_t lt;
  LT(cublasLtCreate(&lt));
  cudaStream_t stream;
  DAK_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  DAK_CUDA_CHECK(cudaEventCreate(&e0));
  DAK_CUDA_CHECK(cudaEventCreate(&e1));
  for (const int64_t N : tokens) {
    for (const Shape& s : shapes) {
      cublasLtMatmulDesc_t desc;
      LT(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
      LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof(op_t)));
      LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof(op_n)));
      cublasLtMatrixLayout_t a, b, d;
      LT(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, uint64_t(s.K), uint64_t(s.M), s.K));
      LT(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, uint64_t(s.K), uint64_t(N), s.K));
      LT(cublasLtMatrixLayoutCreate(&d, CUDA_R_16BF, uint64_t(s.M), uint64_t(N), s.M));
      cublasLtMatmulPreference_t pref;
      LT(cublasLtMatmulPreferenceCreate(&pref));
      const uint64_t wsb = ws_bytes;
      LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof(wsb)));
      cublasLtMatmulHeuristicResult_t res[16];
      int count = 0;
      LT(cublasLtMatmulAlgoGetHeuristic(lt, desc, a, b, d, d, pref, 16, res, &count));
      const double floor_us = double(s.M * s.K * 2) / bg * 1e6;
      std::printf("\n%s M=%lld K=%lld N=%lld: %d candidates, weight floor %.2f us\n", s.name, (long long)s.M,
                  (long long)s.K, (long long)N, count, floor_us);
      double first = 0, best = 1e30;
      int best_i = -1;
      const float alpha = 1.f, beta = 0.f;
      for (int i = 0; i < count; ++i) {
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        bool ok = true;
        DAK_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        for (int c = 0; c < kCopies && ok; ++c) {
          ok = cublasLtMatmul(lt, desc, &alpha, w[c], a, x, b, &beta, y, d, y, d, &res[i].algo, ws, ws_bytes,
                              stream) == CUBLAS_STATUS_SUCCESS;
        }
        DAK_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
        if (!ok) {
          DAK_CUDA_CHECK(cudaGraphDestroy(graph));
          std::printf("  #%2d  failed to launch\n", i);
          continue;
        }
        DAK_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
        std::vector<double> t;
        for (int r = 0; r < 11; ++r) {
          DAK_CUDA_CHECK(cudaEventRecord(e0, stream));
          DAK_CUDA_CHECK(cudaGraphLaunch(exec, stream));
          DAK_CUDA_CHECK(cudaEventRecord(e1, stream));
          DAK_CUDA_CHECK(cudaEventSynchronize(e1));
          float ms = 0;
          DAK_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
          if (r >= 2) t.push_back(ms * 1e3 / kCopies);
        }
        DAK_CUDA_CHECK(cudaGraphExecDestroy(exec));
        DAK_CUDA_CHECK(cudaGraphDestroy(graph));
        const double us = median(t);
        if (i == 0) first = us;
        if (us < best) {
          best = us;
          best_i = i;
        }
        std::printf("  #%2d %8.2f us %6.1f %% of floor  tile %3d stages %3d splitK %2d swizzle %d cluster %3d\n", i, us,
                    100.0 * floor_us / us, config_attr(res[i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
                    config_attr(res[i].algo, CUBLASLT_ALGO_CONFIG_STAGES_ID),
                    config_attr(res[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                    config_attr(res[i].algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
                    config_attr(res[i].algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID));
      }
      std::printf("  => %s N=%lld: first heuristic %.2f us, best #%d %.2f us (%.1f %% faster)\n", s.name,
                  (long long)N, first, best_i, best, 100.0 * (first - best) / first);
      cublasLtMatmulPreferenceDestroy(pref);
      cublasLtMatrixLayoutDestroy(d);
      cublasLtMatrixLayoutDestroy(b);
      cublasLtMatrixLayoutDestroy(a);
      cublasLtMatmulDescDestroy(desc);
    }
  }
  return 0;
}
