// mlp_activation (SiLU-gate, ReLU, GELU, GELU-tanh; gated and plain, with bias) and
// add_bias_rows vs float64 host references on the same bf16 inputs, poisoned outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/rope_layout.h"
#include "gpu/kernels/activation.h"
#include "gpu/launch.h"
#include "gpu_test_util.h"
#include "kernel_test_util.h"

namespace {

using namespace dak::test;
using dak::Activation;

double act_ref(double x, Activation a) {
  switch (a) {
    case Activation::kSilu: return x / (1.0 + std::exp(-x));
    case Activation::kRelu: return x > 0 ? x : 0.0;
    case Activation::kGelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::kGeluTanh:
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  }
  return x;
}

void run_case(int64_t T, int64_t I, Activation a, bool gated, bool bias, uint64_t seed) {
  const std::string what = "T=" + std::to_string(T) + " I=" + std::to_string(I) + " act=" + std::to_string(int(a)) +
                           " gated=" + std::to_string(gated) + " bias=" + std::to_string(bias) +
                           " seed=" + std::to_string(seed);
  std::mt19937_64 rng(seed);
  const int64_t in_w = gated ? 2 * I : I;
  const auto in = random_bf16(size_t(T * in_w), rng, 3.f);
  const auto b = random_bf16(size_t(I), rng);
  DeviceBuffer<Bf16Bits> d_in(in), d_b(b), d_out(size_t(T * I) + 4);
  d_out.poison();
  dak::gpu::ActivationParams p{bf(d_in.get()), bias ? bf(d_b.get()) : nullptr, bf(d_out.get()), T, I, a, gated};
  dak::gpu::mlp_activation(p, nullptr);
  const auto got = d_out.download();
  std::vector<double> ref(static_cast<size_t>(T * I)), g(static_cast<size_t>(T * I)), slack(static_cast<size_t>(T * I));
  const bool gelu = a == Activation::kGelu || a == Activation::kGeluTanh;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < I; ++i) {
      double y, x, scale = 1.0;
      if (gated) {
        x = to_f(in[size_t(t * in_w + i)]);
        scale = std::abs(double(to_f(in[size_t(t * in_w + I + i)])));
        y = act_ref(float(x), a) * to_f(in[size_t(t * in_w + I + i)]);
      } else {
        // The kernel adds the bias in fp32 before activating.
        const float xf = to_f(in[size_t(t * I + i)]) + (bias ? to_f(b[size_t(i)]) : 0.f);
        x = xf;
        y = act_ref(xf, a);
      }
      ref[size_t(t * I + i)] = y;
      g[size_t(t * I + i)] = to_f(got[size_t(t * I + i)]);
      // HF's fp32 GELU, 0.5 x (1 + erf(x / sqrt 2)) (tanh alike), cancels in its negative tail: 1 + erf
      // near 0 keeps the absolute error of fp32 values near 1 (a few 2^-24), which the product carries
      // as 0.5 |x| 2^-22 (times |up| when gated). Session 34 drew x ~ -3.5 against up ~ 2: 2 bf16 ulps
      // of a 1.3e-4 result.
      slack[size_t(t * I + i)] = gelu ? 0.5 * std::abs(x) * std::ldexp(1.0, -22) * scale : 0.0;
    }
  }
  // One bf16 rounding; fp32 expf/erff/tanhf are within a few ulps (atol covers values near 0).
  expect_close(g, ref, 1e-6, kBf16Rtol, what, slack);
  for (size_t k = size_t(T * I); k < got.size(); ++k) EXPECT_EQ(got[k], 0xffff) << what << ": wrote past the end";
}

TEST(ActivationKernel, GatedAndPlainMatchFloat64Reference) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  uint64_t k = 0;
  for (Activation a : {Activation::kSilu, Activation::kRelu, Activation::kGelu, Activation::kGeluTanh}) {
    for (auto [T, I] : {std::pair<int64_t, int64_t>{1, 1}, {3, 255}, {7, 257}, {33, 1376}}) {
      run_case(T, I, a, true, false, seed + k++);
      run_case(T, I, a, false, false, seed + k++);
      run_case(T, I, a, false, true, seed + k++);
    }
  }
}

// The 16-byte path (I % 8 == 0, aligned pointers) and the element path (an output pointer one
// element off) give the same bits; a launch large enough that the vector path's grid-stride loop
// runs several iterations (T x I / 16 above 132 x 16 CTAs x 256 threads).
TEST(ActivationKernel, VectorAndElementPathsGiveTheSameBits) {
  DAK_REQUIRE_GPU_OR_SKIP();
  if (dak::gpu::narrow_small_kernels()) GTEST_SKIP() << "DAK_NARROW_SMALL_KERNELS=1 turns the vector path off";
  const uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  for (auto [T, I, gated] : {std::tuple<int64_t, int64_t, bool>{800, 11008, true}, {512, 1376, true}, {512, 1376, false}}) {
    const std::string what = "T=" + std::to_string(T) + " I=" + std::to_string(I) + " gated=" + std::to_string(gated) +
                             " seed=" + std::to_string(seed);
    // The vector path needs more elements than one pass of the element path's grid.
    ASSERT_GT(T * I, int64_t(dak::gpu::device_sm_count()) * 16 * 256) << what << ": too small for the vector path";
    const int64_t in_w = gated ? 2 * I : I;
    const auto in = random_bf16(size_t(T * in_w), rng, 3.f);
    const auto b = random_bf16(size_t(I), rng);
    DeviceBuffer<Bf16Bits> d_in(in), d_b(b), d_vec(size_t(T * I) + 8), d_elem(size_t(T * I) + 8);
    d_vec.poison();
    d_elem.poison();
    const Activation act = gated ? Activation::kSilu : Activation::kGelu;
    const auto* bias = gated ? nullptr : bf(d_b.get());
    dak::gpu::mlp_activation({bf(d_in.get()), bias, bf(d_vec.get()), T, I, act, gated}, nullptr);
    dak::gpu::mlp_activation({bf(d_in.get()), bias, bf(d_elem.get()) + 1, T, I, act, gated}, nullptr);
    const auto v = d_vec.download(), e = d_elem.download();
    int64_t differ = 0;
    for (int64_t k = 0; k < T * I; ++k) differ += v[size_t(k)] != e[size_t(k) + 1];
    EXPECT_EQ(differ, 0) << what;
    EXPECT_EQ(v[size_t(T * I)], 0xffff) << what << ": the vector path wrote past the end";
    EXPECT_EQ(e[0], 0xffff) << what;
    if (gated && T == 800) {  // spot-check the large launch against float64 (every 997th element)
      std::vector<double> got, ref;
      for (int64_t k = 0; k < T * I; k += 997) {
        const int64_t t = k / I, i = k % I;
        ref.push_back(act_ref(to_f(in[size_t(t * in_w + i)]), act) * to_f(in[size_t(t * in_w + I + i)]));
        got.push_back(to_f(v[size_t(k)]));
      }
      expect_close(got, ref, 1e-6, kBf16Rtol, what);
    }
  }
}

// The paired gate_up order (core/rope_layout.h engine_pairs_gate_up: gate i at column
// paired_row(i, 2I), up i 8 columns later) gives the natural order's bits, moved: the same input
// permuted, on both the element path (small T x I) and the 16-byte path (large), every activation.
TEST(ActivationKernel, PairedGateUpGivesTheNaturalBits) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  const bool vec_path = !dak::gpu::narrow_small_kernels();
  for (auto [T, I] : {std::pair<int64_t, int64_t>{1, 8}, {3, 1376}, {800, 1376}}) {
    for (Activation a : {Activation::kSilu, Activation::kGelu, Activation::kGeluTanh, Activation::kRelu}) {
      const std::string what = "T=" + std::to_string(T) + " I=" + std::to_string(I) + " act=" +
                               std::to_string(int(a)) + " seed=" + std::to_string(seed);
      const auto in = random_bf16(size_t(T * 2 * I), rng, 3.f);
      std::vector<Bf16Bits> paired(in.size());
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t c = 0; c < 2 * I; ++c) {
          paired[size_t(t * 2 * I + dak::rope_layout::paired_row(c, 2 * I))] = in[size_t(t * 2 * I + c)];
        }
      }
      DeviceBuffer<Bf16Bits> d_in(in), d_paired(paired), d_a(size_t(T * I) + 8), d_b(size_t(T * I) + 8);
      d_a.poison();
      d_b.poison();
      dak::gpu::mlp_activation({bf(d_in.get()), nullptr, bf(d_a.get()), T, I, a, true}, nullptr);
      dak::gpu::ActivationParams p{bf(d_paired.get()), nullptr, bf(d_b.get()), T, I, a, true};
      p.paired = true;
      dak::gpu::mlp_activation(p, nullptr);
      const auto want = d_a.download(), got = d_b.download();
      EXPECT_TRUE(want == got) << what << (vec_path && T == 800 ? " (16-byte path)" : "");
      EXPECT_EQ(got[size_t(T * I)], 0xffff) << what << ": wrote past the end";
    }
  }
  // Refused: the paired order of a plain MLP, or of I % 8 != 0.
  DeviceBuffer<Bf16Bits> d(64);
  dak::gpu::ActivationParams bad{bf(d.get()), nullptr, bf(d.get()), 1, 12, Activation::kSilu, true};
  bad.paired = true;
  EXPECT_THROW(dak::gpu::mlp_activation(bad, nullptr), dak::Error);
  bad.I = 8;
  bad.gated = false;
  EXPECT_THROW(dak::gpu::mlp_activation(bad, nullptr), dak::Error);
}

TEST(ActivationKernel, AddBiasRows) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  for (auto [T, M] : {std::pair<int64_t, int64_t>{1, 1}, {5, 129}, {64, 4096 + 7}}) {
    const auto y = random_bf16(size_t(T * M), rng), b = random_bf16(size_t(M), rng);
    DeviceBuffer<Bf16Bits> d_y(size_t(T * M) + 2), d_b(b);
    d_y.poison();
    d_y.upload(y);
    dak::gpu::add_bias_rows(bf(d_y.get()), bf(d_b.get()), T, M, nullptr);
    const auto got = d_y.download();
    int64_t bad = 0;
    for (int64_t i = 0; i < T * M; ++i) {
      const uint16_t want = dak::f32_to_bf16(to_f(y[size_t(i)]) + to_f(b[size_t(i % M)]));  // fp32 add, one rounding
      bad += got[size_t(i)] != want;
    }
    EXPECT_EQ(bad, 0) << "T=" << T << " M=" << M << " seed=" << seed;
    EXPECT_EQ(got[size_t(T * M)], 0xffff);
  }
}

}  // namespace
