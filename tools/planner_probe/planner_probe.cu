// planner_probe: measures the hardware-profile quantities that tools/../h200_probe does not:
//   [hbm]     total and free HBM (cudaMemGetInfo) after context creation
//   [graph]   per-kernel time of back-to-back kernels replayed from a CUDA graph
//             (empty kernels: the launch overhead inside a graph)
//   [stream]  per-kernel time of a streaming HBM read of S bytes inside a graph, S from 256 KiB
//             to 1 GiB, each launch reading a different region of a 4 GiB pool (L2 cold);
//             a least-squares fit t = a + S / B gives the fixed cost per memory-bound kernel
//   [gemm]    cuBLAS bf16 GEMM rate y[N, M] = x[N, K] W[M, K]^T for M = K = 8192 and N tokens
//             from 64 to 16384 (the planner's tensor-rate shape classes)
// Build and run on the GPU machine (about 20 s):
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a planner_probe.cu -o planner_probe -lcublas
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

__global__ void empty_kernel() {}

// Pseudo-random bf16 in [-1, 1) from a hash of the index (tensor-core power depends on data).
__global__ void fill_random(__nv_bfloat16* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
    p[i] = __float2bfloat16(float(h & 0xffff) / 32768.0f - 1.0f);
  }
}

// Each thread sums 16-byte loads; the sum is written only if impossible, so loads stay live.
__global__ void read_kernel(const int4* __restrict__ p, size_t n, int* sink) {
  int acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    int4 v = __ldcs(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7fffffff) *sink = acc;
}

static float time_graph(cudaGraphExec_t exec, cudaStream_t s, int reps) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaGraphLaunch(exec, s));  // warm-up
  CK(cudaStreamSynchronize(s));
  CK(cudaEventRecord(a, s));
  for (int r = 0; r < reps; ++r) CK(cudaGraphLaunch(exec, s));
  CK(cudaEventRecord(b, s));
  CK(cudaEventSynchronize(b));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  return ms / reps;
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int sms = prop.multiProcessorCount;
  CK(cudaFree(nullptr));
  size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  std::printf("device %s SMs=%d\n", prop.name, sms);
  std::printf("[hbm] total %zu bytes (%.2f GiB)  free after context %zu bytes (%.2f GiB)\n", total_b,
              total_b / 1073741824.0, free_b, free_b / 1073741824.0);

  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  // Launch overhead inside a graph: 1000 dependent empty kernels.
  const int kLaunches = 1000;
  for (int grid : {1, sms, 4 * sms}) {
    cudaGraph_t g;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < kLaunches; ++i) empty_kernel<<<grid, 128, 0, s>>>();
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&exec, g, 0));
    float ms = time_graph(exec, s, 10);
    std::printf("[graph] empty kernel grid=%4d x 128: %.3f us per kernel\n", grid, ms * 1000.0 / kLaunches);
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(g));
  }

  // Streaming reads of S bytes, each launch on a fresh region of a 4 GiB pool.
  const size_t kPool = size_t(4) << 30;
  char* pool = nullptr;
  int* sink = nullptr;
  CK(cudaMalloc(&pool, kPool));
  CK(cudaMalloc(&sink, sizeof(int)));
  CK(cudaMemset(pool, 1, kPool));
  std::vector<double> xs, ys;
  for (size_t kib : {256ul, 1024ul, 4096ul, 16384ul, 65536ul, 262144ul, 1048576ul}) {
    size_t bytes = kib << 10;
    int per_graph = int(std::min<size_t>(64, kPool / bytes));
    cudaGraph_t g;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < per_graph; ++i)
      read_kernel<<<4 * sms, 512, 0, s>>>(reinterpret_cast<const int4*>(pool + size_t(i) * bytes), bytes / 16, sink);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&exec, g, 0));
    float ms = time_graph(exec, s, 5) / per_graph;
    std::printf("[stream] read %8zu KiB: %9.3f us per kernel  %7.1f GB/s\n", kib, ms * 1000.0, bytes / (ms * 1e6));
    xs.push_back(double(bytes));
    ys.push_back(ms * 1e-3);
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(g));
  }
  {  // least squares t = a + S / B over all sizes
    double n = xs.size(), sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < xs.size(); ++i) sx += xs[i], sy += ys[i], sxx += xs[i] * xs[i], sxy += xs[i] * ys[i];
    double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    double icpt = (sy - slope * sx) / n;
    std::printf("[stream] fit t = %.3f us + S / %.1f GB/s\n", icpt * 1e6, 1e-9 / slope);
  }
  CK(cudaFree(pool));

  // cuBLAS bf16 GEMM rate vs tokens N, M = K = 8192.
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) { std::printf("cublasCreate failed\n"); return 1; }
  cublasSetStream(h, s);
  const int M = 8192, K = 8192;
  __nv_bfloat16 *w, *x, *y;
  CK(cudaMalloc(&w, size_t(M) * K * 2));
  CK(cudaMalloc(&x, size_t(16384) * K * 2));
  CK(cudaMalloc(&y, size_t(16384) * M * 2));
  fill_random<<<4 * sms, 256, 0, s>>>(w, size_t(M) * K, 1u);
  fill_random<<<4 * sms, 256, 0, s>>>(x, size_t(16384) * K, 2u);
  CK(cudaStreamSynchronize(s));
  float alpha = 1.f, beta = 0.f;
  for (int N : {64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}) {
    // Column-major view: y^T[M, N] = W[M, K] (as K x M col-major, transposed) * x^T[K, N].
    auto gemm = [&] {
      return cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &alpha, w, CUDA_R_16BF, K, x, CUDA_R_16BF, K,
                          &beta, y, CUDA_R_16BF, M, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    };
    for (int i = 0; i < 3; ++i) gemm();
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    const int reps = 20;
    CK(cudaEventRecord(a, s));
    for (int i = 0; i < reps; ++i) gemm();
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    ms /= reps;
    double flops = 2.0 * M * N * double(K);
    std::printf("[gemm] bf16 M=%d K=%d N=%5d: %8.3f us  %6.1f TFLOP/s  weight read %6.1f GB/s\n", M, K, N,
                ms * 1e3, flops / (ms * 1e9), double(M) * K * 2 / (ms * 1e6));
  }
  std::printf("done\n");
  return 0;
}
