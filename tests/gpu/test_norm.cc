// residual_norm (RMSNorm / LayerNorm fused with the residual add) vs a float64 host reference
// computed from the same bf16/fp32 inputs; pre-norm and post-norm residual modes; poisoned
// outputs; awkward row widths around the 256-thread tile.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gpu/kernels/norm.h"
#include "gpu_test_util.h"
#include "kernel_test_util.h"

namespace {

using namespace dak::test;
using dak::gpu::NormResidual;
using dak::gpu::NormType;

struct Case {
  int64_t T, C;
  NormType type;
  NormResidual mode;
  bool with_x, with_weight, with_bias;
};

std::string describe(const Case& c, uint64_t seed) {
  return "T=" + std::to_string(c.T) + " C=" + std::to_string(c.C) +
         (c.type == NormType::kRms ? " rms" : " layer") + (c.mode == NormResidual::kPreNorm ? " pre" : " post") +
         " x=" + std::to_string(c.with_x) + " w=" + std::to_string(c.with_weight) + " b=" + std::to_string(c.with_bias) +
         " seed=" + std::to_string(seed);
}

void run_case(const Case& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const size_t n = size_t(c.T * c.C);
  // A residual with an offset, so that LayerNorm's mean matters and RMSNorm sees a large scale.
  std::vector<float> r = random_f32(n, rng, 3.f);
  for (auto& v : r) v += 1.5f;
  const std::vector<Bf16Bits> x = random_bf16(n, rng, 2.f);
  const std::vector<Bf16Bits> w = random_bf16(size_t(c.C), rng, 1.f);
  const std::vector<Bf16Bits> b = random_bf16(size_t(c.C), rng, 0.5f);
  const float eps = 1e-5f;

  DeviceBuffer<float> d_r(r);
  DeviceBuffer<Bf16Bits> d_x(x), d_w(w), d_b(b), d_out(n + 8);
  d_out.poison();
  dak::gpu::NormParams p;
  p.g_x = c.with_x ? bf(d_x.get()) : nullptr;
  p.g_residual = d_r.get();
  p.g_weight = c.with_weight ? bf(d_w.get()) : nullptr;
  p.g_bias = c.with_bias ? bf(d_b.get()) : nullptr;
  p.g_out = bf(d_out.get());
  p.T = c.T;
  p.C = c.C;
  p.eps = eps;
  p.type = c.type;
  p.mode = c.mode;
  dak::gpu::residual_norm(p, nullptr);
  const std::vector<float> got_r = d_r.download();
  const std::vector<Bf16Bits> got_out = d_out.download();

  std::vector<double> ref_n(n), ref_s(n);
  std::vector<float> s_f32(n);
  for (int64_t t = 0; t < c.T; ++t) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < c.C; ++i) {
      const size_t k = size_t(t * c.C + i);
      s_f32[k] = c.with_x ? r[k] + to_f(x[k]) : r[k];  // the kernel's one fp32 add
      sum += s_f32[k];
    }
    const double mean = c.type == NormType::kLayer ? sum / double(c.C) : 0.0;
    for (int64_t i = 0; i < c.C; ++i) {
      const double d = s_f32[size_t(t * c.C + i)] - mean;
      sq += d * d;
    }
    const double rstd = 1.0 / std::sqrt(sq / double(c.C) + eps);
    for (int64_t i = 0; i < c.C; ++i) {
      const size_t k = size_t(t * c.C + i);
      double v = (s_f32[k] - mean) * rstd;
      if (c.with_weight) v *= to_f(w[size_t(i)]);
      if (c.with_bias) v += to_f(b[size_t(i)]);
      ref_n[k] = v;
      ref_s[k] = s_f32[k];
    }
  }
  const std::string what = describe(c, seed);
  std::vector<double> out(n);
  for (size_t k = 0; k < n; ++k) out[k] = to_f(got_out[k]);
  // Output: one bf16 rounding after fp32 statistics; atol covers outputs near zero, where the
  // fp32 error of the mean / variance reductions (~1e-6 absolute) exceeds a bf16 ulp.
  expect_close(out, ref_n, 1e-5, kBf16Rtol, what + " out");
  std::vector<double> res(got_r.begin(), got_r.end());
  if (c.mode == NormResidual::kPreNorm) {
    expect_close(res, ref_s, 0.0, 0.0, what + " residual (bitwise: the same fp32 add)");
  } else {
    expect_close(res, ref_n, 2e-5, 2e-5, what + " residual (normalized, fp32)");
  }
  for (size_t k = n; k < n + 8; ++k) EXPECT_EQ(got_out[k], 0xffff) << what << ": wrote past the end";
}

TEST(NormKernel, RmsAndLayerNormMatchFloat64Reference) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  uint64_t k = 0;
  for (int64_t C : {1, 7, 255, 256, 257, 576, 4099}) {
    for (int64_t T : {1, 3, 17}) {
      for (NormType type : {NormType::kRms, NormType::kLayer}) {
        for (NormResidual mode : {NormResidual::kPreNorm, NormResidual::kPostNorm}) {
          const bool with_x = (k % 3) != 0;
          const bool with_w = (k % 5) != 1;
          const bool with_b = type == NormType::kLayer && (k % 2) == 0;
          run_case(Case{T, C, type, mode, with_x, with_w, with_b}, seed + k++);
        }
      }
    }
  }
}

TEST(NormKernel, EmptyBatchIsNoOp) {
  DAK_REQUIRE_GPU_OR_SKIP();
  dak::gpu::residual_norm(dak::gpu::NormParams{}, nullptr);
  DAK_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace
