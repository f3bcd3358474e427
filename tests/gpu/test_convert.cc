// convert_f32_to_bf16 on the GPU vs dak::f32_to_bf16 on the host: bitwise, on fresh random
// inputs (with specials), poisoned outputs, awkward sizes, aligned and misaligned operands.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels/convert.h"
#include "gpu_test_util.h"

namespace {

void run_case(int64_t n, int64_t misalign, std::mt19937& rng) {
  std::vector<float> x(size_t(n + misalign));
  std::normal_distribution<float> nd(0.f, 3.f);
  for (auto& v : x) v = nd(rng) * std::exp2(float(int(rng() % 40) - 20));
  if (n > 4) {
    x[misalign + 0] = std::numeric_limits<float>::quiet_NaN();
    x[misalign + 1] = std::numeric_limits<float>::infinity();
    x[misalign + 2] = -0.0f;
    x[misalign + 3] = 1.00390625f;  // exactly halfway between two bf16 values: ties to even
  }
  float* d_in = nullptr;
  __nv_bfloat16* d_out = nullptr;
  DAK_CUDA_CHECK(cudaMalloc(&d_in, (x.size() + 1) * sizeof(float)));
  DAK_CUDA_CHECK(cudaMalloc(&d_out, (x.size() + 2) * sizeof(__nv_bfloat16)));
  DAK_CUDA_CHECK(cudaMemcpy(d_in, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  DAK_CUDA_CHECK(cudaMemset(d_out, 0xff, (x.size() + 2) * sizeof(__nv_bfloat16)));  // poison
  dak::gpu::ConvertParams p{d_in + misalign, d_out + misalign, n};
  dak::gpu::convert_f32_to_bf16(p, nullptr);
  DAK_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint16_t> got(x.size() + 2);
  DAK_CUDA_CHECK(cudaMemcpy(got.data(), d_out, got.size() * 2, cudaMemcpyDeviceToHost));
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t want = dak::f32_to_bf16(x[size_t(misalign + i)]);
    const uint16_t g = got[size_t(misalign + i)];
    const bool both_nan = std::isnan(dak::bf16_to_f32(want)) && std::isnan(dak::bf16_to_f32(g));
    if (g != want && !both_nan && bad++ < 5) {
      ADD_FAILURE() << "n=" << n << " misalign=" << misalign << " i=" << i << " x=" << x[size_t(misalign + i)]
                    << " got=0x" << std::hex << g << " want=0x" << want;
    }
  }
  EXPECT_EQ(bad, 0) << "n=" << n << " misalign=" << misalign;
  // Nothing outside [0, n) was written.
  for (int64_t i = 0; i < misalign; ++i) EXPECT_EQ(got[size_t(i)], 0xffff);
  EXPECT_EQ(got[size_t(misalign + n)], 0xffff) << "wrote past the end, n=" << n;
  DAK_CUDA_CHECK(cudaFree(d_in));
  DAK_CUDA_CHECK(cudaFree(d_out));
}

TEST(ConvertKernel, BitwiseEqualToHostRoundNearestEven) {
  DAK_REQUIRE_GPU_OR_SKIP();
  std::mt19937 rng(std::random_device{}());
  for (int64_t n : {1, 5, 1023, 1024, 1025, 4096 + 17, 1000003, 3 * 1024 * 1024 + 1}) {
    run_case(n, 0, rng);
    run_case(n, 1, rng);
  }
}

TEST(ConvertKernel, EmptyIsNoOp) {
  DAK_REQUIRE_GPU_OR_SKIP();
  dak::gpu::convert_f32_to_bf16(dak::gpu::ConvertParams{nullptr, nullptr, 0}, nullptr);
  DAK_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace
