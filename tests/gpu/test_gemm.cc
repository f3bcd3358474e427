// CublasLtGemm: y[N, M] = x[N, K] W[M, K]^T (+ bias) (+ ReLU), bf16 or fp32 out, vs a float64
// host reference on the same bf16 operands; awkward sizes, strided x, poisoned outputs.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "gpu/gemm_cublaslt.h"
#include "gpu_test_util.h"
#include "kernel_test_util.h"

namespace {

using namespace dak::test;
using dak::gpu::GemmOut;

struct Shape {
  int64_t N, M, K, ldx;
};

void run_case(dak::gpu::CublasLtGemm& gemm, Shape s, GemmOut out, bool bias, bool relu, uint64_t seed) {
  const std::string what = "N=" + std::to_string(s.N) + " M=" + std::to_string(s.M) + " K=" + std::to_string(s.K) +
                           " ldx=" + std::to_string(s.ldx) + " out=" + (out == GemmOut::kBf16 ? "bf16" : "f32") +
                           " bias=" + std::to_string(bias) + " relu=" + std::to_string(relu) +
                           " seed=" + std::to_string(seed);
  std::mt19937_64 rng(seed);
  const int64_t ldx = s.ldx > 0 ? s.ldx : s.K;
  const auto x = random_bf16(size_t(s.N * ldx), rng);
  const auto w = random_bf16(size_t(s.M * s.K), rng, 0.1f);
  const auto b = random_bf16(size_t(s.M), rng);
  DeviceBuffer<Bf16Bits> d_x(x), d_w(w), d_b(b);
  const size_t n_out = size_t(s.N * s.M);
  DeviceBuffer<Bf16Bits> d_y16(n_out + 8);
  DeviceBuffer<float> d_y32(n_out + 8);
  d_y16.poison();
  d_y32.poison();
  dak::gpu::GemmArgs a;
  a.g_x = bf(d_x.get());
  a.ldx = s.ldx;
  a.g_w = bf(d_w.get());
  a.g_bias = bias ? bf(d_b.get()) : nullptr;
  a.g_y = out == GemmOut::kBf16 ? static_cast<void*>(d_y16.get()) : static_cast<void*>(d_y32.get());
  a.N = s.N;
  a.M = s.M;
  a.K = s.K;
  a.out = out;
  a.relu = relu;
  gemm.run(a, nullptr);
  std::vector<double> got(n_out), ref(n_out);
  double worst_scale = 0;
  if (out == GemmOut::kBf16) {
    const auto y = d_y16.download();
    for (size_t i = 0; i < n_out; ++i) got[i] = to_f(y[i]);
    for (size_t i = n_out; i < y.size(); ++i) EXPECT_EQ(y[i], 0xffff) << what << ": wrote past the end";
  } else {
    const auto y = d_y32.download();
    for (size_t i = 0; i < n_out; ++i) got[i] = y[i];
    for (size_t i = n_out; i < y.size(); ++i) EXPECT_TRUE(std::isnan(y[i])) << what << ": wrote past the end";
  }
  for (int64_t n = 0; n < s.N; ++n) {
    for (int64_t m = 0; m < s.M; ++m) {
      double acc = 0, mag = 0;
      for (int64_t k = 0; k < s.K; ++k) {
        const double t = double(to_f(x[size_t(n * ldx + k)])) * to_f(w[size_t(m * s.K + k)]);
        acc += t;
        mag += std::abs(t);
      }
      if (bias) acc += to_f(b[size_t(m)]);
      if (relu) acc = std::max(acc, 0.0);
      ref[size_t(n * s.M + m)] = acc;
      worst_scale = std::max(worst_scale, mag);
    }
  }
  // fp32 accumulation over K products: error <= ~K * 2^-24 * sum|x w| in the worst case and
  // ~sqrt(K) * 2^-24 * sum|x w| typically; atol = 1e-5 * max sum|x w| covers K up to a few
  // thousand typical. bf16 output adds one rounding (rtol).
  // When the bias is added after the product was rounded to bf16 (the fallback when cuBLASLt
  // offers no bias epilogue, and seen from cuBLASLt's own bf16 epilogue on the H200), there is
  // one more rounding of |x W^T| <= |ref| + |bias|: at most 2^-8 of it, i.e. rtol doubles and
  // atol grows by max|bias| / 256 (a 2026-11-30 run failed with the earlier max|bias| / 512).
  double bias_max = 0;
  for (Bf16Bits v : b) bias_max = std::max(bias_max, std::abs(double(to_f(v))));
  const bool bf16_out = out == GemmOut::kBf16;
  const double rtol = bf16_out ? (bias ? 2 * kBf16Rtol : kBf16Rtol) : 1e-6;
  expect_close(got, ref, 1e-5 * worst_scale + 1e-6 + (bias && bf16_out ? bias_max / 256 : 0.0), rtol, what);
}

TEST(GemmCublasLt, MatchesFloat64Reference) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  void* ws = nullptr;
  DAK_CUDA_CHECK(cudaMalloc(&ws, dak::gpu::CublasLtGemm::kWorkspaceBytes));
  {
    dak::gpu::CublasLtGemm gemm(ws, dak::gpu::CublasLtGemm::kWorkspaceBytes);
    uint64_t k = 0;
    const Shape shapes[] = {{1, 64, 64, 0},    {1, 4096, 576, 0}, {5, 129, 72, 0},  {17, 251, 96, 0},
                            {64, 8, 16, 0},    {127, 1000, 256, 0}, {3, 144, 64, 200}, {2, 24, 64, 0},
                            {9, 49152, 576, 0}, {3, 17, 33, 0}};
    for (const Shape& s : shapes) {
      run_case(gemm, s, GemmOut::kBf16, false, false, seed + k++);
      run_case(gemm, s, GemmOut::kBf16, true, false, seed + k++);
      run_case(gemm, s, GemmOut::kBf16, true, true, seed + k++);
      run_case(gemm, s, GemmOut::kF32, false, false, seed + k++);
    }
    // A cached plan is reused with different operands of the same shape.
    run_case(gemm, shapes[2], GemmOut::kBf16, true, false, seed + k++);
  }
  DAK_CUDA_CHECK(cudaFree(ws));
}

TEST(GemmCublasLt, TuningKeepsTheBitsOfTheFirstHeuristic) {
  // set_tuning: a plan may take another of cuBLASLt's candidates, but only one that reduces as the
  // first heuristic does and gives its bits; checked on the tuning's operands and then on fresh
  // ones. The decode shapes of session 48's probe (qkv at 40 tokens, gate_up at 64, where it found
  // candidates 6-7 % faster on an H100), down into a strided y, and weights too small to tune (below
  // 1.5 L2 sizes), one of them with a bias and ReLU (whose fused epilogue cuBLASLt may lack: then no
  // tuning either, and no strided y, which run() refuses without it).
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  int device = 0, l2 = 0;
  DAK_CUDA_CHECK(cudaGetDevice(&device));
  DAK_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  void* ws = nullptr;
  DAK_CUDA_CHECK(cudaMalloc(&ws, 2 * dak::gpu::CublasLtGemm::kWorkspaceBytes));
  {
    dak::gpu::CublasLtGemm plain(ws, dak::gpu::CublasLtGemm::kWorkspaceBytes);
    dak::gpu::CublasLtGemm tuned(static_cast<char*>(ws) + dak::gpu::CublasLtGemm::kWorkspaceBytes,
                                 dak::gpu::CublasLtGemm::kWorkspaceBytes);
    tuned.set_tuning(true);
    struct Case {
      Shape s;
      GemmOut out;
      bool bias, relu;
      int64_t ldy;
    };
    const Case cases[] = {{{40, 12288, 4096, 0}, GemmOut::kBf16, false, false, 0},
                          {{64, 22016, 4096, 0}, GemmOut::kBf16, false, false, 0},
                          {{64, 4096, 11008, 0}, GemmOut::kBf16, false, false, 4096 + 64},
                          {{5, 129, 72, 0}, GemmOut::kBf16, true, true, 0},
                          {{48, 4096, 4096, 0}, GemmOut::kF32, false, false, 0}};
    int64_t tunable = 0;
    std::mt19937_64 rng(seed);
    for (const Case& c : cases) {
      const Shape& s = c.s;
      const bool large = double(s.M) * double(s.K) * 2 >= dak::gpu::CublasLtGemm::kTuneMinL2Multiple * l2;
      if (large && !c.bias && !c.relu) ++tunable;  // the large cases have no epilogue to lack
      const std::string what = "N=" + std::to_string(s.N) + " M=" + std::to_string(s.M) + " K=" +
                               std::to_string(s.K) + " seed=" + std::to_string(seed);
      const int64_t ldy = c.ldy > 0 ? c.ldy : s.M;
      const size_t elt = c.out == GemmOut::kBf16 ? 2 : 4;
      const auto w = random_bf16(size_t(s.M * s.K), rng, 0.1f);
      const auto b = random_bf16(size_t(s.M), rng);
      DeviceBuffer<Bf16Bits> d_w(w), d_b(b);
      DeviceBuffer<uint8_t> y_plain(size_t(s.N * ldy) * elt), y_tuned(size_t(s.N * ldy) * elt);
      for (int round = 0; round < 2; ++round) {  // round 0 makes (and tunes) the plans, round 1 reuses them
        const auto x = random_bf16(size_t(s.N * s.K), rng);
        DeviceBuffer<Bf16Bits> d_x(x);
        y_plain.poison();
        y_tuned.poison();
        dak::gpu::GemmArgs a;
        a.g_x = bf(d_x.get());
        a.g_w = bf(d_w.get());
        a.g_bias = c.bias ? bf(d_b.get()) : nullptr;
        a.relu = c.relu;
        a.ldy = c.ldy;
        a.N = s.N;
        a.M = s.M;
        a.K = s.K;
        a.out = c.out;
        a.g_y = y_plain.get();
        plain.run(a, nullptr);
        a.g_y = y_tuned.get();
        DAK_CUDA_CHECK(cudaDeviceSynchronize());
        const auto t0 = std::chrono::steady_clock::now();
        tuned.run(a, nullptr);
        DAK_CUDA_CHECK(cudaDeviceSynchronize());
        if (round == 0) {
          std::printf("[cublaslt] %s: plan made (tuned where large enough) in %.1f ms\n", what.c_str(),
                      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        const auto p = y_plain.download(), t = y_tuned.download();
        size_t differ = 0;
        for (size_t i = 0; i < p.size(); ++i) differ += p[i] != t[i];  // the gaps of a strided y: poison in both
        EXPECT_EQ(differ, 0u) << what << " round " << round << ": bytes that differ from the first heuristic's";
      }
    }
    EXPECT_EQ(tuned.tuned_plans(), tunable);
    EXPECT_GE(tunable, 1) << "no case large enough to tune on this GPU (L2 " << l2 << " bytes)";
    EXPECT_EQ(plain.tuned_plans(), 0);
    std::printf("[cublaslt] tuned %lld plans, %lld took another candidate than the first heuristic\n",
                (long long)tuned.tuned_plans(), (long long)tuned.retuned_plans());
  }
  DAK_CUDA_CHECK(cudaFree(ws));
}

TEST(GemmCublasLt, RejectsFp32OutputWithBias) {
  DAK_REQUIRE_GPU_OR_SKIP();
  void* ws = nullptr;
  DAK_CUDA_CHECK(cudaMalloc(&ws, 1 << 20));
  {
    dak::gpu::CublasLtGemm gemm(ws, 1 << 20);
    dak::gpu::GemmArgs a;
    a.N = 1;
    a.M = 8;
    a.K = 8;
    a.g_bias = reinterpret_cast<const __nv_bfloat16*>(ws);
    a.out = GemmOut::kF32;
    EXPECT_THROW(gemm.run(a, nullptr), dak::Error);
  }
  DAK_CUDA_CHECK(cudaFree(ws));
}

}  // namespace
