// apply_rope_kv_append (RoPE and KV append in one launch) against two oracles: bitwise against
// apply_rope followed by kv_append on a copy of the same inputs (the QKV rows and both two-tier
// caches, poisoned), and the rotated k written to the cache against a float64 host rotation of
// the original bf16 k (HF rotate-half, fp32 angle). Covers the 16-byte v path (D and row stride
// multiples of 8) and the element path (padded rows, D = 20), GQA and MQA, an out-of-range token,
// caches with slots in pinned mapped host memory (b_host 0, 1 and every slot), cos / sin
// multipliers 1 and yarn's 0.1 ln 4 + 1 (RopeParams::attention_factor), and launches large
// enough for 2 and 4 pairs per thread (at least 1024 threads per SM after grouping). The paired row
// order (RopeParams::paired_rows, core/rope_layout.h): bitwise the natural order's results moved.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/rope_layout.h"
#include "gpu/kernels/kv_append.h"
#include "gpu/kernels/rope.h"
#include "gpu/launch.h"
#include "gpu_test_util.h"
#include "kernel_test_util.h"
#include "kv_test_util.h"

namespace {

using namespace dak::test;

void run_case(int64_t T, int H, int Hkv, int D, int64_t pad, int64_t b_host, float m, uint64_t seed,
              int64_t slots = 3, int64_t ctx = 23) {
  const std::string what = "T=" + std::to_string(T) + " H=" + std::to_string(H) + " Hkv=" + std::to_string(Hkv) +
                           " D=" + std::to_string(D) + " pad=" + std::to_string(pad) +
                           " b_host=" + std::to_string(b_host) + " m=" + std::to_string(m) +
                           " slots=" + std::to_string(slots) + " seed=" + std::to_string(seed);
  std::mt19937_64 rng(seed);
  const int64_t qd = int64_t(H) * D, kvd = int64_t(Hkv) * D, stride = qd + 2 * kvd + pad;
  const auto qkv = random_bf16(size_t(T * stride), rng);
  std::vector<int32_t> slot(static_cast<size_t>(T)), pos(static_cast<size_t>(T)), rope_pos(static_cast<size_t>(T));
  std::vector<int64_t> cells(static_cast<size_t>(slots * ctx));
  for (size_t i = 0; i < cells.size(); ++i) cells[i] = int64_t(i);
  std::shuffle(cells.begin(), cells.end(), rng);
  for (int64_t t = 0; t < T; ++t) {
    slot[size_t(t)] = int32_t(cells[size_t(t)] / ctx);
    pos[size_t(t)] = int32_t(cells[size_t(t)] % ctx);
    rope_pos[size_t(t)] = int32_t(rng() % 131072);
  }
  if (T > 2) pos[size_t(T - 1)] = int32_t(ctx);  // out of range: rotated in the rows, not cached
  std::vector<float> inv_freq(size_t(D / 2));
  for (int i = 0; i < D / 2; ++i) inv_freq[size_t(i)] = float(1.0 / std::pow(10000.0, 2.0 * i / D));

  DeviceBuffer<int32_t> d_slot(slot), d_pos(pos), d_rope_pos(rope_pos);
  DeviceBuffer<float> d_f(inv_freq);
  auto params = [&](DeviceBuffer<Bf16Bits>& rows, const TwoTierKvCache& cache) {
    const QkvRopeAppend p = qkv_rope_append(rows.get(), stride, H, Hkv, D, d_rope_pos.get(), d_f.get(), m, false,
                                            d_slot.get(), d_pos.get(), cache.layer(), T);
    return std::pair{p.rope, p.kv};
  };
  DeviceBuffer<Bf16Bits> rows_a(qkv), rows_b(qkv);
  TwoTierKvCache cache_a(slots, b_host, Hkv, D, ctx), cache_b(slots, b_host, Hkv, D, ctx);
  cache_a.poison();
  cache_b.poison();
  const auto [ra, kva] = params(rows_a, cache_a);
  dak::gpu::apply_rope(ra, nullptr);
  dak::gpu::kv_append(kva, nullptr);
  const auto [rb, kvb] = params(rows_b, cache_b);
  dak::gpu::apply_rope_kv_append(rb, kvb, nullptr);
  const auto got_rows = rows_b.download(), got_k = cache_b.k(), got_v = cache_b.v();
  EXPECT_EQ(got_rows, rows_a.download()) << what << ": QKV rows differ from apply_rope";
  EXPECT_EQ(got_k, cache_a.k()) << what << ": k cache differs from apply_rope + kv_append";
  EXPECT_EQ(got_v, cache_a.v()) << what << ": v cache differs from kv_append";

  // Independent check of the cached k: float64 rotation of the original bf16 k heads.
  std::vector<double> got_rot, ref_rot;
  int64_t v_bad = 0, cached = 0;
  for (int64_t t = 0; t < T; ++t) {
    if (pos[size_t(t)] >= ctx) continue;
    ++cached;
    const Bf16Bits* row = qkv.data() + t * stride;
    for (int h = 0; h < Hkv; ++h) {
      const int64_t dst = ((int64_t(slot[size_t(t)]) * Hkv + h) * ctx + pos[size_t(t)]) * D;  // [slot][Hkv][ctx][D]
      for (int i = 0; i < D / 2; ++i) {
        const double a = double(float(rope_pos[size_t(t)]) * inv_freq[size_t(i)]);
        const double x1 = to_f(row[qd + h * D + i]), x2 = to_f(row[qd + h * D + i + D / 2]);
        const double c = m * std::cos(a), s = m * std::sin(a);
        ref_rot.push_back(x1 * c - x2 * s);
        ref_rot.push_back(x2 * c + x1 * s);
        got_rot.push_back(to_f(got_k[size_t(dst + i)]));
        got_rot.push_back(to_f(got_k[size_t(dst + i + D / 2)]));
      }
      for (int e = 0; e < D; ++e) v_bad += got_v[size_t(dst + e)] != row[qd + kvd + h * D + e];
    }
  }
  ASSERT_GT(cached, 0) << what;
  expect_close(got_rot, ref_rot, 1e-4, kBf16Rtol, what + " cached k");
  EXPECT_EQ(v_bad, 0) << what << ": cached v is not the original v";
}

TEST(RopeKvAppendKernel, MatchesRopeThenAppendAndFloat64Rotation) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  uint64_t k = 0;
  for (int D : {16, 20, 24, 64, 128, 256}) {
    for (auto [H, Hkv] : {std::pair{1, 1}, std::pair{4, 1}, std::pair{9, 3}, std::pair{8, 8}}) {
      for (int64_t pad : {0, 3}) {
        for (int64_t T : {1, 5, 33}) {
          const int64_t b_host = int64_t(k % 3 == 2 ? 3 : k % 3);  // 0, 1 or all 3 slots on the host
          const float m = k % 4 == 3 ? float(0.1 * std::log(4.0) + 1.0) : 1.0f;  // yarn factor 4's cos / sin multiplier
          run_case(T, H, Hkv, D, pad, b_host, m, seed + k);
          ++k;
        }
      }
    }
  }
}

// Batch-512-sized launches (Llama-3-8B heads: 32 q, 8 kv, D 128): T = 128 has enough pairs for 2 per
// thread, T = 512 for 4; a padded row stride (odd) keeps 1 pair per thread at that size. The cache
// holds every token (8 slots x 70 positions).
TEST(RopeKvAppendKernel, LargeLaunchesWithSeveralPairsPerThread) {
  DAK_REQUIRE_GPU_OR_SKIP();
  if (dak::gpu::narrow_small_kernels()) GTEST_SKIP() << "DAK_NARROW_SMALL_KERNELS=1 turns the wide paths off";
  // The pair counts against the thresholds (1024 threads per SM after grouping): T = 128 takes P = 2
  // and not 4, T = 512 takes P = 4.
  const int64_t per_sm = int64_t(dak::gpu::device_sm_count()) * 1024, pairs_128 = 128 * 40 * 64;
  ASSERT_GE(pairs_128 / 2, per_sm);
  ASSERT_LT(pairs_128 / 4, per_sm);
  ASSERT_GE(4 * pairs_128 / 4, per_sm);
  const uint64_t seed = fresh_seed();
  const float yarn_m = float(0.1 * std::log(4.0) + 1.0);
  run_case(128, 32, 8, 128, 0, 0, 1.0f, seed, 8, 70);
  run_case(512, 32, 8, 128, 0, 3, yarn_m, seed + 1, 8, 70);
  run_case(512, 32, 8, 128, 3, 8, 1.0f, seed + 2, 8, 70);
  run_case(512, 32, 32, 64, 0, 8, 1.0f, seed + 3, 8, 70);
}

/// The q / k heads of `rows` ([T, stride]: q heads at 0, k heads at qd, H + Hkv heads of D) moved
/// from the natural order into the paired one (core/rope_layout.h); v and padding unchanged.
std::vector<Bf16Bits> to_paired(const std::vector<Bf16Bits>& rows, int64_t T, int64_t stride, int64_t heads, int64_t D) {
  std::vector<Bf16Bits> out = rows;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < D; ++i) {
        out[size_t(t * stride + h * D + dak::rope_layout::paired_row(i, D))] = rows[size_t(t * stride + h * D + i)];
      }
    }
  }
  return out;
}

// RoPE + KV append on q / k heads in the paired row order: rotating the moved values gives the
// natural order's bits moved the same way, in the rows and in the cached k (v unchanged), for
// apply_rope + kv_append and for the fused launch, at 1, 2 and 4 pairs per thread.
void run_paired_case(int64_t T, int H, int Hkv, int D, int64_t b_host, float m, uint64_t seed, int64_t slots,
                     int64_t ctx) {
  const std::string what = "paired T=" + std::to_string(T) + " H=" + std::to_string(H) + " Hkv=" +
                           std::to_string(Hkv) + " D=" + std::to_string(D) + " b_host=" + std::to_string(b_host) +
                           " seed=" + std::to_string(seed);
  std::mt19937_64 rng(seed);
  const int64_t qd = int64_t(H) * D, kvd = int64_t(Hkv) * D, stride = qd + 2 * kvd;
  const auto natural = random_bf16(size_t(T * stride), rng);
  std::vector<int32_t> slot(static_cast<size_t>(T)), pos(static_cast<size_t>(T)), rope_pos(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    slot[size_t(t)] = int32_t(t % slots);
    pos[size_t(t)] = int32_t((t / slots) % ctx);
    rope_pos[size_t(t)] = int32_t(rng() % 131072);
  }
  std::vector<float> inv_freq(size_t(D / 2));
  for (int i = 0; i < D / 2; ++i) inv_freq[size_t(i)] = float(1.0 / std::pow(10000.0, 2.0 * i / D));
  DeviceBuffer<int32_t> d_slot(slot), d_pos(pos), d_rope_pos(rope_pos);
  DeviceBuffer<float> d_f(inv_freq);
  auto params = [&](DeviceBuffer<Bf16Bits>& rows, const TwoTierKvCache& cache, bool paired) {
    const QkvRopeAppend p = qkv_rope_append(rows.get(), stride, H, Hkv, D, d_rope_pos.get(), d_f.get(), m, paired,
                                            d_slot.get(), d_pos.get(), cache.layer(), T);
    return std::pair{p.rope, p.kv};
  };
  DeviceBuffer<Bf16Bits> rows_n(natural), rows_a(to_paired(natural, T, stride, H + Hkv, D)),
      rows_b(to_paired(natural, T, stride, H + Hkv, D));
  TwoTierKvCache cache_n(slots, b_host, Hkv, D, ctx), cache_a(slots, b_host, Hkv, D, ctx),
      cache_b(slots, b_host, Hkv, D, ctx);
  cache_n.poison();
  cache_a.poison();
  cache_b.poison();
  const auto [rn, kvn] = params(rows_n, cache_n, false);
  dak::gpu::apply_rope_kv_append(rn, kvn, nullptr);
  const auto [ra, kva] = params(rows_a, cache_a, true);
  dak::gpu::apply_rope(ra, nullptr);
  dak::gpu::kv_append(kva, nullptr);
  const auto [rb, kvb] = params(rows_b, cache_b, true);
  dak::gpu::apply_rope_kv_append(rb, kvb, nullptr);
  const auto want_rows = to_paired(rows_n.download(), T, stride, H + Hkv, D);
  // The cache's k rows [slots][Hkv][ctx][D] are heads of D: the same move, row by row.
  const int64_t cache_rows = slots * Hkv * ctx;
  const auto want_k = to_paired(cache_n.k(), cache_rows, D, 1, D);
  EXPECT_EQ(rows_a.download(), want_rows) << what << ": apply_rope's rows are not the natural ones moved";
  EXPECT_EQ(rows_b.download(), want_rows) << what << ": apply_rope_kv_append's rows are not the natural ones moved";
  EXPECT_EQ(cache_a.k(), want_k) << what << ": cached k (apply_rope + kv_append) is not the natural one moved";
  EXPECT_EQ(cache_b.k(), want_k) << what << ": cached k (fused launch) is not the natural one moved";
  EXPECT_EQ(cache_a.v(), cache_n.v()) << what << ": cached v differs";
  EXPECT_EQ(cache_b.v(), cache_n.v()) << what << ": cached v differs (fused launch)";
}

TEST(RopeKvAppendKernel, PairedRowsGiveTheNaturalBitsMoved) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  const float yarn_m = float(0.1 * std::log(4.0) + 1.0);
  uint64_t k = 0;
  for (int D : {16, 64, 80, 128, 256}) {
    for (auto [H, Hkv] : {std::pair{1, 1}, std::pair{4, 1}, std::pair{8, 8}}) {
      for (int64_t T : {1, 5, 33}) {
        run_paired_case(T, H, Hkv, D, int64_t(k % 3), k % 4 == 3 ? yarn_m : 1.0f, seed + k, 3, 23);
        ++k;
      }
    }
  }
  // Launches wide enough for 2 and 4 pairs per thread (Llama-3-8B heads), host slots included.
  if (!dak::gpu::narrow_small_kernels()) {
    run_paired_case(128, 32, 8, 128, 2, 1.0f, seed + 100, 8, 70);
    run_paired_case(512, 32, 8, 128, 3, yarn_m, seed + 101, 8, 70);
  }
}

}  // namespace
