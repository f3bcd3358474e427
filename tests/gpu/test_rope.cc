// apply_rope vs a float64 host reference of HF's rotate-half RoPE, on the same bf16 q/k and
// the same fp32 angle (float(pos) * inv_freq rounded to fp32, as HF computes it), with cos and
// sin times the attention factor m (1, and yarn's 0.1 ln 4 + 1); v columns and other tokens'
// rows must stay bitwise untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gpu/kernels/rope.h"
#include "gpu_test_util.h"
#include "kernel_test_util.h"

namespace {

using namespace dak::test;

void run_case(int64_t T, int H, int Hkv, int D, float m, uint64_t seed) {
  const std::string what = "T=" + std::to_string(T) + " H=" + std::to_string(H) + " Hkv=" + std::to_string(Hkv) +
                           " D=" + std::to_string(D) + " m=" + std::to_string(m) + " seed=" + std::to_string(seed);
  std::mt19937_64 rng(seed);
  const int64_t qd = int64_t(H) * D, kvd = int64_t(Hkv) * D, stride = qd + 2 * kvd + 3;  // +3: padding columns
  const auto qkv = random_bf16(size_t(T * stride), rng);
  std::vector<int32_t> positions(static_cast<size_t>(T));
  for (auto& p : positions) p = int32_t(rng() % 131072);
  positions[0] = 0;
  std::vector<float> inv_freq(size_t(D / 2));
  for (int i = 0; i < D / 2; ++i) inv_freq[size_t(i)] = float(1.0 / std::pow(500000.0, 2.0 * i / D));
  DeviceBuffer<Bf16Bits> d_qkv(qkv);
  DeviceBuffer<int32_t> d_pos(positions);
  DeviceBuffer<float> d_f(inv_freq);
  dak::gpu::RopeParams p;
  p.g_qkv = bf(d_qkv.get());
  p.row_stride = stride;
  p.q_offset = 0;
  p.k_offset = qd;
  p.g_positions = d_pos.get();
  p.g_inv_freq = d_f.get();
  p.T = T;
  p.num_q_heads = H;
  p.num_k_heads = Hkv;
  p.head_dim = D;
  p.attention_factor = m;
  dak::gpu::apply_rope(p, nullptr);
  const auto got = d_qkv.download();

  std::vector<double> got_rot, ref_rot;
  int64_t untouched_bad = 0;
  for (int64_t t = 0; t < T; ++t) {
    const Bf16Bits* row = qkv.data() + t * stride;
    const Bf16Bits* grow = got.data() + t * stride;
    for (int head = 0; head < H + Hkv; ++head) {
      const int64_t base = head < H ? int64_t(head) * D : qd + int64_t(head - H) * D;
      for (int i = 0; i < D / 2; ++i) {
        const double a = double(float(positions[size_t(t)]) * inv_freq[size_t(i)]);  // fp32 angle, as HF
        const double x1 = to_f(row[base + i]), x2 = to_f(row[base + i + D / 2]);
        const double c = m * std::cos(a), s = m * std::sin(a);
        ref_rot.push_back(x1 * c - x2 * s);
        ref_rot.push_back(x2 * c + x1 * s);
        got_rot.push_back(to_f(grow[base + i]));
        got_rot.push_back(to_f(grow[base + i + D / 2]));
      }
    }
    for (int64_t cidx = qd + kvd; cidx < stride; ++cidx) untouched_bad += grow[cidx] != row[cidx];
  }
  // One bf16 rounding of an fp32 rotation; sincosf of arguments up to ~1.3e5 rad is accurate to
  // a few fp32 ulps of the argument's reduction, i.e. ~1e-6 absolute on cos/sin.
  expect_close(got_rot, ref_rot, 1e-4, kBf16Rtol, what);
  EXPECT_EQ(untouched_bad, 0) << what << ": v or padding columns changed";
}

TEST(RopeKernel, RotateHalfMatchesFloat64Reference) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  uint64_t k = 0;
  for (int D : {16, 24, 64, 80, 96, 128, 256}) {
    for (auto [H, Hkv] : {std::pair{1, 1}, std::pair{4, 1}, std::pair{9, 3}, std::pair{8, 8}}) {
      for (int64_t T : {1, 5, 33}) run_case(T, H, Hkv, D, 1.0f, seed + k++);
      run_case(5, H, Hkv, D, float(0.1 * std::log(4.0) + 1.0), seed + k++);  // yarn, factor 4
    }
  }
}

}  // namespace
