// The diagnostic empty dependent kernel (kernels/diag_empty.h): between two dependent decode
// kernels (residual_norm, launched by launch_dependent like the decode step's kernels) it keeps
// their order, in plain stream order and in a replayed CUDA graph, on fresh random inputs with
// poisoned outputs; it refuses CTA counts and SMEM sizes it cannot launch.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels/diag_empty.h"
#include "gpu/kernels/norm.h"
#include "gpu_test_util.h"
#include "kernel_test_util.h"

namespace {

using namespace dak::test;

TEST(DiagEmptyKernel, KeepsTheOrderOfTheDependentKernelsAroundIt) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  constexpr int64_t T = 8, C = 4096;
  const std::vector<float> resid = random_f32(size_t(T * C), rng);
  // Host reference of RMSNorm without weight: n = s * rsqrt(mean(s^2) + eps), s = resid.
  std::vector<double> normed(size_t(T * C));
  for (int64_t t = 0; t < T; ++t) {
    double ss = 0;
    for (int64_t j = 0; j < C; ++j) ss += double(resid[size_t(t * C + j)]) * resid[size_t(t * C + j)];
    const double r = 1.0 / std::sqrt(ss / double(C) + 1e-6);
    for (int64_t j = 0; j < C; ++j) normed[size_t(t * C + j)] = resid[size_t(t * C + j)] * r;
  }
  DeviceBuffer<float> d_resid(resid), d_zero(size_t(T * C));
  DeviceBuffer<Bf16Bits> d_out1(size_t(T * C)), d_out2(size_t(T * C));
  cudaStream_t st;
  DAK_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  // norm 1 writes out1 from the residual; the empty kernel; norm 2 reads out1 as its sublayer
  // output onto a zero residual, so its residual becomes float(out1) exactly.
  auto chain = [&](int64_t ctas, int64_t smem = 0) {
    dak::gpu::NormParams n1;
    n1.g_residual = d_resid.get();
    n1.g_out = bf(d_out1.get());
    n1.T = T;
    n1.C = C;
    dak::gpu::residual_norm(n1, st);
    dak::gpu::launch_empty_dependent(ctas, st, smem);
    dak::gpu::NormParams n2 = n1;
    n2.g_x = bf(d_out1.get());
    n2.g_residual = d_zero.get();
    n2.g_out = bf(d_out2.get());
    dak::gpu::residual_norm(n2, st);
  };
  auto check = [&](const std::string& what) {
    DAK_CUDA_CHECK(cudaStreamSynchronize(st));
    const std::vector<Bf16Bits> out1 = d_out1.download();
    const std::vector<float> r2 = d_zero.download();
    std::vector<double> got(out1.size());
    size_t differ = 0;
    for (size_t i = 0; i < out1.size(); ++i) {
      got[i] = to_f(out1[i]);
      differ += r2[i] != to_f(out1[i]);
    }
    expect_close(got, normed, 1e-6, 1.0 / 128, what + ": norm 1's output");
    EXPECT_EQ(differ, 0u) << what << ": norm 2 did not read norm 1's finished output";
  };
  for (int64_t ctas : {int64_t(1), int64_t(132), int64_t(1000)}) {
    d_out1.poison();
    d_out2.poison();
    DAK_CUDA_CHECK(cudaMemset(d_zero.get(), 0, size_t(T * C) * sizeof(float)));
    DAK_CUDA_CHECK(cudaDeviceSynchronize());  // the legacy stream's memset before the chain on `st`
    chain(ctas);
    check("stream order, " + std::to_string(ctas) + " empty CTAs");
  }
  // CTAs holding SMEM (the attn_smem diagnostic): 100 KiB (two per SM) and 227 KiB (one per SM).
  for (int64_t smem : {int64_t(100) << 10, int64_t(227) << 10}) {
    d_out1.poison();
    d_out2.poison();
    DAK_CUDA_CHECK(cudaMemset(d_zero.get(), 0, size_t(T * C) * sizeof(float)));
    DAK_CUDA_CHECK(cudaDeviceSynchronize());  // the legacy stream's memset before the chain on `st`
    chain(300, smem);
    check("stream order, 300 empty CTAs of " + std::to_string(smem) + " bytes of SMEM");
  }
  // The same chain captured in a graph and replayed twice.
  d_out1.poison();
  d_out2.poison();
  DAK_CUDA_CHECK(cudaMemset(d_zero.get(), 0, size_t(T * C) * sizeof(float)));
  DAK_CUDA_CHECK(cudaDeviceSynchronize());
  cudaGraph_t g;
  cudaGraphExec_t ge;
  DAK_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  DAK_CUDA_CHECK(cudaMemsetAsync(d_zero.get(), 0, size_t(T * C) * sizeof(float), st));
  chain(256);
  DAK_CUDA_CHECK(cudaStreamEndCapture(st, &g));
  DAK_CUDA_CHECK(cudaGraphInstantiate(&ge, g, 0));
  for (int i = 0; i < 2; ++i) DAK_CUDA_CHECK(cudaGraphLaunch(ge, st));
  check("graph replay");
  DAK_CUDA_CHECK(cudaGraphExecDestroy(ge));
  DAK_CUDA_CHECK(cudaGraphDestroy(g));
  DAK_CUDA_CHECK(cudaStreamDestroy(st));
}

TEST(DiagEmptyKernel, RefusesCtaCountsItCannotLaunch) {
  DAK_REQUIRE_GPU_OR_SKIP();
  EXPECT_THROW(dak::gpu::launch_empty_dependent(0, nullptr), dak::Error);
  EXPECT_THROW(dak::gpu::launch_empty_dependent(int64_t(1) << 31, nullptr), dak::Error);
  EXPECT_THROW(dak::gpu::launch_empty_dependent(1, nullptr, -1), dak::Error);
  EXPECT_THROW(dak::gpu::launch_empty_dependent(1, nullptr, 227 * 1024 + 1), dak::Error);
}

}  // namespace
