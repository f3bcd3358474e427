// The CPU reference ops (src/core/cpu_ops.h) against closed-form values and plain loops.
#include <algorithm>
#include <bit>
#include <cmath>
#include <numbers>
#include <random>

#include <gtest/gtest.h>

#include "core/cpu_ops.h"

namespace dak::cpu {
namespace {

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

TEST(CpuOps, LinearMatchesPlainLoopsForAwkwardShapes) {
  // Token counts around the block of 4, row counts around the block of 16 and K around 8/32.
  for (int64_t t : {1, 3, 4, 5, 9}) {
    for (int64_t m : {1, 15, 16, 17, 33}) {
      for (int64_t k : {1, 7, 8, 33, 64}) {
        const auto x = random_vec(size_t(t * k), 1), w = random_vec(size_t(m * k), 2), b = random_vec(size_t(m), 3);
        std::vector<float> y(size_t(t * m), NAN), yp(size_t(t * m), NAN), yn(size_t(t * m), NAN);
        linear(x.data(), t, k, w.data(), b.data(), m, y.data());
        linear_portable(x.data(), t, k, w.data(), b.data(), m, yp.data());
        linear(x.data(), t, k, w.data(), nullptr, m, yn.data());
        for (int64_t i = 0; i < t; ++i) {
          for (int64_t r = 0; r < m; ++r) {
            double want = 0;
            for (int64_t j = 0; j < k; ++j) want += double(x[i * k + j]) * w[r * k + j];
            const double tol = 1e-5 * (1 + std::sqrt(double(k)));
            EXPECT_NEAR(y[i * m + r], want + b[r], tol) << t << "x" << k << " -> " << m;
            EXPECT_NEAR(yp[i * m + r], want + b[r], tol) << t << "x" << k << " -> " << m;
            EXPECT_NEAR(yn[i * m + r], want, tol) << t << "x" << k << " -> " << m;
          }
        }
      }
    }
  }
}

TEST(CpuOps, LinearGivesATokenTheSameBitsInAnyBatch) {
  // A token's outputs may not depend on the other tokens of the call or on its place in a block
  // of 4 (the README's promise for --max-batch on the CPU path): token i of a batch of t against
  // the same token alone, and against it at every place of a 4-token block.
  for (auto* fn : {&linear, &linear_portable}) {
    for (int64_t m : {1, 7, 16, 17, 33}) {
      for (int64_t k : {5, 8, 24, 33, 40, 64, 576, 2047, 2048, 2053}) {
        for (int64_t t : {1, 2, 3, 4, 5, 7, 8, 9}) {
          const auto x = random_vec(size_t(t * k), uint32_t(11 + t)), w = random_vec(size_t(m * k), 12),
                     b = random_vec(size_t(m), 13);
          std::vector<float> y(size_t(t * m), NAN);
          fn(x.data(), t, k, w.data(), b.data(), m, y.data());
          for (int64_t i = 0; i < t; ++i) {
            std::vector<float> alone(size_t(m), NAN);
            fn(x.data() + i * k, 1, k, w.data(), b.data(), m, alone.data());
            // The token at place p of a block of 4 (other places: the next tokens, wrapping).
            const int64_t p = i % 4;
            std::vector<float> block(size_t(4 * k)), yb(size_t(4 * m), NAN);
            for (int64_t j = 0; j < 4; ++j) {
              const int64_t src = j == p ? i : (i + j + 1) % t;
              std::copy_n(x.data() + src * k, k, block.data() + j * k);
            }
            fn(block.data(), 4, k, w.data(), b.data(), m, yb.data());
            for (int64_t r = 0; r < m; ++r) {
              const float got = y[size_t(i * m + r)];
              ASSERT_FALSE(std::isnan(got));
              ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(alone[size_t(r)]))
                  << "token " << i << " of " << t << ", row " << r << " of " << m << ", K " << k;
              ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(yb[size_t(p * m + r)]))
                  << "token " << i << " at place " << p << " of a block, row " << r << " of " << m << ", K " << k;
            }
          }
        }
      }
    }
  }
}

TEST(CpuOps, ParallelThreadsStaysSerialForSmallWork) {
  EXPECT_EQ(parallel_threads(0), 1);
  EXPECT_EQ(parallel_threads(kMinParallelMacs - 1), 1);
  const int big = parallel_threads(int64_t(1) << 40);
  EXPECT_GE(big, 1);
  EXPECT_LE(big, 1024);
}

TEST(CpuOps, NormsMatchClosedForm) {
  const std::vector<float> x = {1, 2, 3, 4, -2, 0, 0, 2};
  std::vector<float> y(8);
  const std::vector<float> w = {1, 1, 1, 2};
  rms_norm(x.data(), 2, 4, w.data(), 0.0f, y.data());
  const double r0 = std::sqrt(7.5), r1 = std::sqrt(2.0);  // sqrt(mean(x^2)) per row
  const double want[8] = {1 / r0, 2 / r0, 3 / r0, 8 / r0, -2 / r1, 0, 0, 4 / r1};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(y[i], want[i], 1e-6);

  const std::vector<float> b = {0, 0, 1, 0};
  layer_norm(x.data(), 1, 4, w.data(), b.data(), 1e-5f, y.data());
  const double s = std::sqrt(1.25 + 1e-5);  // mean 2.5, biased variance 1.25
  EXPECT_NEAR(y[0], -1.5 / s, 1e-6);
  EXPECT_NEAR(y[1], -0.5 / s, 1e-6);
  EXPECT_NEAR(y[2], 0.5 / s + 1, 1e-6);
  EXPECT_NEAR(y[3], 2 * 1.5 / s, 1e-6);
  std::vector<float> z = x;
  layer_norm(z.data(), 2, 4, nullptr, nullptr, 1e-5f, z.data());  // in place, no affine
  EXPECT_NEAR(z[0], -1.5 / s, 1e-6);
  EXPECT_NEAR(z[4], -2 / std::sqrt(2.0 + 1e-5), 1e-6);  // row 2: mean 0, variance 2
}

TEST(CpuOps, ActivationsMatchReferenceValues) {
  std::vector<float> v = {1.0f, -1.0f, 0.0f};
  auto run = [&](Activation a) {
    std::vector<float> r = v;
    activate(r.data(), 3, a);
    return r;
  };
  // silu(x) = x sigmoid(x); gelu(1) = Phi(1); tanh-GELU(1) from its formula.
  EXPECT_NEAR(run(Activation::kSilu)[0], 0.7310585786, 1e-6);
  EXPECT_NEAR(run(Activation::kSilu)[1], -0.2689414214, 1e-6);
  EXPECT_NEAR(run(Activation::kGelu)[0], 0.8413447461, 1e-6);
  EXPECT_NEAR(run(Activation::kGelu)[1], -0.1586552539, 1e-6);
  EXPECT_NEAR(run(Activation::kGeluTanh)[0], 0.8411919906, 1e-6);
  EXPECT_EQ(run(Activation::kRelu), (std::vector<float>{1.0f, 0.0f, 0.0f}));
}

TEST(CpuOps, RopeInverseFrequencies) {
  ModelConfig c;
  c.head_dim = 8;
  c.rope_theta = 10000.0;
  EXPECT_EQ(rope_inv_freq(c), (std::vector<float>{1.0f, 0.1f, 0.01f, 0.001f}));
  c.rope_scaling = RopeScaling::kLinear;
  c.rope_factor = 4.0;
  EXPECT_EQ(rope_inv_freq(c), (std::vector<float>{0.25f, 0.025f, 0.0025f, 0.00025f}));
  // llama3 with original context 64: wavelengths 6.3 (kept, < 64/4), 62.8 (interpolated),
  // 628 and 6283 (> 64/1, divided by 8). Expected values from HF's _compute_llama3_parameters
  // evaluated with numpy in float32.
  c.rope_scaling = RopeScaling::kLlama3;
  c.rope_factor = 8.0;
  c.rope_low_freq_factor = 1.0;
  c.rope_high_freq_factor = 4.0;
  c.rope_original_max_position = 64;
  const std::vector<float> f = rope_inv_freq(c);
  const double want[4] = {1.0, 0.013042256236076355, 0.0012499999720603228, 0.0001250000059371814};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(f[i], want[i], 1e-7 * want[i]) << i;
}

// Expected values: transformers 5.17's _compute_yarn_parameters (ROPE_INIT_FUNCTIONS["yarn"]) run
// on these configs on the CPU, printed as fp32.
TEST(CpuOps, RopeYarnInverseFrequenciesAndAttentionFactorMatchTransformers) {
  ModelConfig c;
  c.head_dim = 16;
  c.rope_theta = 10000.0;
  c.rope_scaling = RopeScaling::kYarn;
  c.rope_factor = 4.0;
  c.rope_original_max_position = 32;  // correction range [0, 2] of 16 dims: two ramp steps
  c.rope_attention_factor = 1.138629436111989;
  const std::vector<double> want = {1.0, 0.19764235615730286, 0.02500000037252903, 0.007905694656074047,
                                    0.0024999999441206455, 0.0007905694656074047, 0.0002500000118743628,
                                    7.905694656074047e-05};
  std::vector<float> f = rope_inv_freq(c);
  ASSERT_EQ(f.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(f[i], want[i], 2e-7 * want[i]) << i;
  EXPECT_EQ(rope_attention_factor(c), 1.138629436111989f);

  // Untruncated range, other betas, theta 5e5, head_dim 32 (mscale / mscale_all_dim only move
  // the attention factor, which the config parser computes).
  c.head_dim = 32;
  c.rope_theta = 500000.0;
  c.rope_factor = 8.0;
  c.rope_original_max_position = 64;
  c.rope_beta_fast = 16.0;
  c.rope_beta_slow = 2.0;
  c.rope_truncate = false;
  const std::vector<double> want2 = {
      1.0,                    0.24623434245586395,    0.024240344762802124,  0.010674637742340565,
      0.004700753837823868,   0.0020700551103800535,  0.0009115831344388425, 0.00040143076330423355,
      0.00017677668074611574, 7.784655463183299e-05,  3.428102354519069e-05, 1.5096217794052791e-05,
      6.647869668086059e-06,  2.927499735960737e-06,  1.289173155782919e-06, 5.677088097399974e-07};
  f = rope_inv_freq(c);
  ASSERT_EQ(f.size(), want2.size());
  for (size_t i = 0; i < want2.size(); ++i) EXPECT_NEAR(f[i], want2[i], 2e-7 * want2[i]) << i;
  c.rope_scaling = RopeScaling::kLinear;  // the multiplier belongs to yarn alone
  EXPECT_EQ(rope_attention_factor(c), 1.0f);
}

TEST(CpuOps, RopeAttentionFactorScalesCosAndSin) {
  const std::vector<float> freq = {1.0f, 0.5f};
  const std::vector<float> x = {1, 2, 3, 4};  // 1 head of D = 4
  std::vector<float> y = x, z = x;
  apply_rope(y.data(), 1, 4, freq.data(), 3);
  apply_rope(z.data(), 1, 4, freq.data(), 3, 1.5f);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(z[i], 1.5 * y[i], 1e-6) << i;
  std::vector<float> w = x;
  apply_rope(w.data(), 1, 4, freq.data(), 0, 1.5f);  // position 0: cos 1, sin 0, times m
  for (int i = 0; i < 4; ++i) EXPECT_EQ(w[i], 1.5f * x[i]) << i;
}

TEST(CpuOps, RopeRotatesHalvesByPositionTimesFrequency) {
  const std::vector<float> freq = {1.0f, 0.5f};
  const std::vector<float> x = {1, 2, 3, 4, -1, 0.5f, 2, 0};  // 2 heads of D = 4
  std::vector<float> y = x;
  apply_rope(y.data(), 2, 4, freq.data(), 0);
  EXPECT_EQ(y, x);
  apply_rope(y.data(), 2, 4, freq.data(), 3);
  for (int h = 0; h < 2; ++h) {
    for (int i = 0; i < 2; ++i) {
      // (x_i, x_{i+2}) rotated by angle 3 * f_i, as the complex product (x_i + i x_{i+2}) e^{i a}.
      const double a = 3.0 * freq[i];
      const double re = x[h * 4 + i], im = x[h * 4 + i + 2];
      EXPECT_NEAR(y[h * 4 + i], re * std::cos(a) - im * std::sin(a), 1e-6);
      EXPECT_NEAR(y[h * 4 + i + 2], im * std::cos(a) + re * std::sin(a), 1e-6);
    }
  }
}

TEST(CpuOps, AttendHeadIsSoftmaxWeightedValues) {
  // D = 2, 3 keys with a row stride of 4 floats (other heads interleaved).
  const std::vector<float> q = {1.0f, 2.0f};
  const std::vector<float> k = {0, 0, 9, 9, 1, 0, 9, 9, 0, 1, 9, 9};
  const std::vector<float> v = {1, 0, 9, 9, 0, 1, 9, 9, 2, 2, 9, 9};
  std::vector<float> out(2), scratch(3);
  attend_head(q.data(), k.data(), v.data(), 4, 3, 2, 0.5f, out.data(), scratch.data());
  // scores 0.5 * (0, 1, 2) -> weights e^{0, .5, 1} / z
  const double z = 1 + std::exp(0.5) + std::exp(1.0);
  EXPECT_NEAR(out[0], (1 + 2 * std::exp(1.0)) / z, 1e-6);
  EXPECT_NEAR(out[1], (std::exp(0.5) + 2 * std::exp(1.0)) / z, 1e-6);
  attend_head(q.data(), k.data(), v.data(), 4, 1, 2, 0.5f, out.data(), scratch.data());
  EXPECT_EQ(out, (std::vector<float>{1, 0}));
}

}  // namespace
}  // namespace dak::cpu
