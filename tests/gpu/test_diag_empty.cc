// The diagnostic empty dependent kernel (kernels/diag_empty.h): launches in plain stream order and
// inside a captured CUDA graph behind other work without error, leaves memory untouched, and
// refuses CTA counts it cannot launch.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels/diag_empty.h"
#include "gpu_test_util.h"

namespace {

TEST(DiagEmptyKernel, RunsBehindOtherWorkAndInAGraphWithoutTouchingMemory) {
  DAK_REQUIRE_GPU_OR_SKIP();
  constexpr size_t kBytes = 1 << 20;
  uint8_t* d = nullptr;
  DAK_CUDA_CHECK(cudaMalloc(&d, kBytes));
  cudaStream_t st;
  DAK_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  DAK_CUDA_CHECK(cudaMemsetAsync(d, 0x5a, kBytes, st));
  for (int64_t ctas : {int64_t(1), int64_t(132), int64_t(1000)}) dak::gpu::launch_empty_dependent(ctas, st);
  DAK_CUDA_CHECK(cudaStreamSynchronize(st));
  // Captured in a graph between two memsets, replayed twice.
  cudaGraph_t g;
  cudaGraphExec_t ge;
  DAK_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  DAK_CUDA_CHECK(cudaMemsetAsync(d, 0x33, kBytes / 2, st));
  dak::gpu::launch_empty_dependent(256, st);
  DAK_CUDA_CHECK(cudaMemsetAsync(d + kBytes / 2, 0x44, kBytes / 2, st));
  DAK_CUDA_CHECK(cudaStreamEndCapture(st, &g));
  DAK_CUDA_CHECK(cudaGraphInstantiate(&ge, g, 0));
  for (int i = 0; i < 2; ++i) DAK_CUDA_CHECK(cudaGraphLaunch(ge, st));
  DAK_CUDA_CHECK(cudaStreamSynchronize(st));
  std::vector<uint8_t> h(kBytes);
  DAK_CUDA_CHECK(cudaMemcpy(h.data(), d, kBytes, cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t i = 0; i < kBytes; ++i) wrong += h[i] != (i < kBytes / 2 ? 0x33 : 0x44);
  EXPECT_EQ(wrong, 0u) << "the graph's memsets around the empty kernel did not all land";
  DAK_CUDA_CHECK(cudaGraphExecDestroy(ge));
  DAK_CUDA_CHECK(cudaGraphDestroy(g));
  DAK_CUDA_CHECK(cudaStreamDestroy(st));
  DAK_CUDA_CHECK(cudaFree(d));
}

TEST(DiagEmptyKernel, RefusesCtaCountsItCannotLaunch) {
  DAK_REQUIRE_GPU_OR_SKIP();
  EXPECT_THROW(dak::gpu::launch_empty_dependent(0, nullptr), dak::Error);
  EXPECT_THROW(dak::gpu::launch_empty_dependent(int64_t(1) << 31, nullptr), dak::Error);
}

}  // namespace
