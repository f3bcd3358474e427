// Tiered GEMM work decomposition (core/tiered_gemm_schedule.h): every (output tile, k-block) is
// covered exactly once by the units of its side, k_splits and the workspace do not depend on
// m_host (split invariance), the congestion cap is respected, and bad shapes are refused.
#include <gtest/gtest.h>

#include <map>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "core/tiered_gemm_schedule.h"

namespace {

using dak::TieredGemmSchedule;

/// Counts, per (side, m-tile, n-tile, k-block), how often the units of a schedule cover it.
void expect_exact_cover(const TieredGemmSchedule& s) {
  std::map<std::tuple<int, int64_t, int64_t, int64_t>, int> seen;
  for (int side = 0; side < 2; ++side) {
    const int64_t units = side == 0 ? s.host_units() : s.hbm_units();
    const int64_t ctas = side == 0 ? s.host_ctas : s.hbm_ctas;
    int64_t visited = 0;
    // Units go to clusters, and rank r of a cluster computes n-tile group * C + r.
    const int64_t C = s.cluster;
    const int64_t workers = ctas / C;
    for (int64_t c = 0; c < workers; ++c) {
      for (int64_t u = c; u < units; u += workers) {
        ++visited;
        const auto unit = s.unit(u, side == 0);
        const int64_t splits = s.side_splits(side == 0);
        for (int64_t r = 0; r < C; ++r) {
          const int64_t n_tile = unit.n_group * C + r;
          if (n_tile >= s.n_tiles()) continue;
          for (int64_t kb = s.split_begin(unit.split, splits); kb < s.split_begin(unit.split + 1, splits); ++kb) {
            ++seen[{side, unit.m_tile, n_tile, kb}];
          }
        }
      }
    }
    EXPECT_EQ(visited, units) << s.to_string();
  }
  const int64_t expected = (s.host_m_tiles() + s.hbm_m_tiles()) * s.n_tiles() * s.k_blocks();
  EXPECT_EQ(int64_t(seen.size()), expected) << s.to_string();
  for (const auto& [key, count] : seen) ASSERT_EQ(count, 1) << s.to_string();
}

TEST(TieredGemmSchedule, ExactCoverAndInvariance) {
  const int64_t shapes[][3] = {{4096, 1, 4096}, {12288, 8, 4096}, {4096, 64, 11008}, {22016, 512, 4096},
                               {300, 13, 520},  {130, 8, 4104},   {333, 200, 264},    {8192, 8, 28672},
                               // k_splits > 1 with splits of unequal k-block counts (23 and 46 k-blocks)
                               {64, 8, 5640},   {64, 8, 11704}};
  for (const auto& sh : shapes) {
    const int64_t M = sh[0], N = sh[1], K = sh[2];
    const TieredGemmSchedule base = dak::plan_tiered_gemm(M, N, K, 0, 132);
    if (K == 5640 || K == 11704) EXPECT_GT(base.k_splits, 1) << base.to_string();
    EXPECT_EQ(base.host_ctas, 0);
    EXPECT_GT(base.hbm_ctas, 0);
    for (int64_t m_host : {int64_t(0), int64_t(1), int64_t(64), M / 100, M / 10, M / 2, M - 1, M}) {
      const TieredGemmSchedule s = dak::plan_tiered_gemm(M, N, K, m_host, 132);
      EXPECT_EQ(s.k_splits, base.k_splits) << "k_splits must not depend on m_host: " << s.to_string();
      EXPECT_EQ(s.k_chunks, base.k_chunks) << "k_chunks must not depend on m_host: " << s.to_string();
      EXPECT_EQ(s.workspace_bytes(), base.workspace_bytes()) << s.to_string();
      EXPECT_LE(s.host_ctas + s.hbm_ctas, 132) << s.to_string();
      if (m_host > 0) {
        EXPECT_GE(s.host_ctas, 1);
        // Congestion cap: more than one stage per host CTA only while under the cap; on the
        // bandwidth path (64-row tiles) the host CTAs' stages stay under it at every m_host.
        if (s.host_stages > 1 || s.tile.bm == 64) {
          EXPECT_LE(s.host_clusters() * s.host_stages * s.host_stage_inflight_bytes(),
                    dak::TieredGemmLinkLimits{}.inflight_cap_bytes)
              << s.to_string();
        }
      }
      expect_exact_cover(s);
    }
  }
}

TEST(TieredGemmSchedule, MulticastClustersForLargeN) {
  // Host rows at N > 64 (the 128-row tiles): CTAs in clusters that share each W tile; 4 with at
  // least 4 n-tiles, else 2; never at N <= 64, with one n-tile or without host rows.
  // n-tiles: 128 tokens, or 256 where N rounded up to 128 is a multiple of 256.
  EXPECT_EQ(dak::plan_tiered_gemm(12288, 512, 4096, 0, 132).cluster, 1);
  EXPECT_EQ(dak::plan_tiered_gemm(12288, 64, 4096, 1000, 132).cluster, 1);
  EXPECT_EQ(dak::plan_tiered_gemm(12288, 128, 4096, 1000, 132).cluster, 1);  // one n-tile: nothing to share
  EXPECT_EQ(dak::plan_tiered_gemm(12288, 200, 4096, 1000, 132).cluster, 1);  // one of 256 (96 units, one wave)
  EXPECT_EQ(dak::plan_tiered_gemm(12288, 300, 4096, 1000, 132).cluster, 2);  // 3 of 128
  EXPECT_EQ(dak::plan_tiered_gemm(12288, 512, 4096, 1000, 132).cluster, 4);  // 4 of 128 (waves)
  EXPECT_EQ(dak::plan_tiered_gemm(57344, 512, 8192, 1000, 132).cluster, 2);  // 2 of 256
  EXPECT_EQ(dak::plan_tiered_gemm(12288, 1024, 4096, 1000, 132).cluster, 4);  // 8 of 128
  dak::TieredGemmLinkLimits wide_only;
  wide_only.compute_bn = 256;
  EXPECT_EQ(dak::plan_tiered_gemm(12288, 200, 4096, 1000, 132, wide_only).cluster, 1);  // one 256-token n-tile
  // The cluster rule the planner's cost model shares: by the tile's n-tiles, rounded to 1 / 2 / 4
  // (M = 57344, K = 8192: 128 x 256 wherever it pads N no further than 128 x 128, else 128 x 128).
  EXPECT_EQ(dak::tiered_gemm_multicast_cluster(57344, 64, 8192, 1000, 132, 4), 1);
  EXPECT_EQ(dak::tiered_gemm_multicast_cluster(57344, 128, 8192, 1000, 132, 4), 1);
  EXPECT_EQ(dak::tiered_gemm_multicast_cluster(57344, 129, 8192, 1000, 132, 4), 1);  // one n-tile of 256
  EXPECT_EQ(dak::tiered_gemm_multicast_cluster(57344, 256, 8192, 1000, 132, 4), 1);
  EXPECT_EQ(dak::tiered_gemm_multicast_cluster(57344, 256, 8192, 1000, 132, 4, 128), 2);  // 2 of 128, forced
  EXPECT_EQ(dak::tiered_gemm_multicast_cluster(57344, 256, 8192, 1000, 132, 4, 256), 1);
  EXPECT_EQ(dak::tiered_gemm_multicast_cluster(57344, 257, 8192, 1000, 132, 4), 2);
  EXPECT_EQ(dak::tiered_gemm_multicast_cluster(57344, 384, 8192, 1000, 132, 4), 2);
  EXPECT_EQ(dak::tiered_gemm_multicast_cluster(57344, 512, 8192, 1000, 132, 4), 2);
  EXPECT_EQ(dak::tiered_gemm_multicast_cluster(57344, 513, 8192, 1000, 132, 4), 4);
  EXPECT_EQ(dak::tiered_gemm_multicast_cluster(57344, 1024, 8192, 1000, 132, 4), 4);
  EXPECT_EQ(dak::tiered_gemm_multicast_cluster(57344, 8192, 8192, 1000, 132, 4), 4);
  EXPECT_EQ(dak::tiered_gemm_multicast_cluster(57344, 8192, 8192, 1000, 132, 3), 2);
  EXPECT_EQ(dak::tiered_gemm_multicast_cluster(57344, 8192, 8192, 1000, 132, 8), 4);
  EXPECT_EQ(dak::tiered_gemm_multicast_cluster(57344, 8192, 8192, 1000, 132, 1), 1);
  dak::TieredGemmLinkLimits off;
  off.max_cluster = 1;
  EXPECT_EQ(dak::plan_tiered_gemm(12288, 1024, 4096, 1000, 132, off).cluster, 1);
  dak::TieredGemmLinkLimits resident;
  resident.cluster4_ctas = 128;  // what 4 free SMs per GPC leave of 132
  const int64_t shapes[][3] = {{12288, 512, 4096}, {22016, 2048, 4096}, {4096, 1000, 4096}, {12288, 300, 4096},
                               {333, 300, 264},    {8192, 1024, 28672}, {130, 700, 4104}};
  for (const auto& sh : shapes) {
    const int64_t M = sh[0], N = sh[1], K = sh[2];
    for (int64_t m_host : {int64_t(1), int64_t(128), M / 30, M / 2, M - 1, M}) {
      if (m_host < 1) continue;
      const TieredGemmSchedule s = dak::plan_tiered_gemm(M, N, K, m_host, 132, resident);
      EXPECT_GT(s.cluster, 1) << s.to_string();
      EXPECT_EQ(s.host_ctas % s.cluster, 0) << s.to_string();
      EXPECT_EQ(s.hbm_ctas % s.cluster, 0) << s.to_string();
      EXPECT_LE(s.host_clusters(), s.host_units()) << "a host cluster without work: " << s.to_string();
      if (s.cluster == 4) EXPECT_LE(s.host_ctas + s.hbm_ctas, 128) << s.to_string();
      EXPECT_LE(s.hbm_clusters(), std::max<int64_t>(s.hbm_units(), 1)) << s.to_string();
      EXPECT_EQ(s.n_groups(), (s.n_tiles() + s.cluster - 1) / s.cluster);
      expect_exact_cover(s);
      // The same problem without multicast covers the same tiles with the same k_splits.
      const TieredGemmSchedule plain = dak::plan_tiered_gemm(M, N, K, m_host, 132, off);
      EXPECT_EQ(plain.k_splits, s.k_splits);
      EXPECT_EQ(plain.workspace_bytes(), s.workspace_bytes());
      expect_exact_cover(plain);
    }
  }
}

TEST(TieredGemmSchedule, ClustersOfTwoWhileFewHostTilesLeaveTheLinkIdle) {
  // N = 512 on the 128 x 128 tile: 4 n-tiles, so clusters of 4 by n-tiles. Clusters of 2 keep two
  // read streams per host m-tile, 6 stages of a 16 KiB W tile each (192 KiB): up to 2 host m-tiles
  // stay within kLoadedHostInflightBytes (512 KiB), so those take clusters of 2 on every SM.
  dak::TieredGemmLinkLimits h200;
  h200.cluster4_ctas = 120;
  for (int64_t m_host : {1, 128, 129, 256}) {
    const dak::TieredGemmSchedule s = dak::plan_tiered_gemm(12288, 512, 4096, m_host, 132, h200);
    EXPECT_EQ(s.cluster, 2) << s.to_string();
    EXPECT_EQ(s.host_ctas + s.hbm_ctas, 132) << s.to_string();
    EXPECT_EQ(dak::tiered_gemm_multicast_cluster(12288, 512, 4096, m_host, 132, 4), 2) << m_host;
  }
  for (int64_t m_host : {257, 1280, 12288}) {  // 3 or more host m-tiles: the link saturates, read once
    const dak::TieredGemmSchedule s = dak::plan_tiered_gemm(12288, 512, 4096, m_host, 132, h200);
    EXPECT_EQ(s.cluster, 4) << s.to_string();
    EXPECT_LE(s.host_ctas + s.hbm_ctas, 120) << s.to_string();
    EXPECT_EQ(dak::tiered_gemm_multicast_cluster(12288, 512, 4096, m_host, 132, 4), 4) << m_host;
  }
  // More n-tiles, more streams per host m-tile: N = 2048 on 128 x 128 (16 n-tiles, 8 pairs) at one
  // host m-tile already fills the link with clusters of 2 (8 x 96 KiB).
  dak::TieredGemmLinkLimits narrow = h200;
  narrow.compute_bn = 128;
  EXPECT_EQ(dak::plan_tiered_gemm(12288, 2048, 4096, 128, 132, narrow).cluster, 4);
  // Never above max_cluster, never without host rows.
  dak::TieredGemmLinkLimits one = h200;
  one.max_cluster = 1;
  EXPECT_EQ(dak::plan_tiered_gemm(12288, 512, 4096, 128, 132, one).cluster, 1);
  EXPECT_EQ(dak::plan_tiered_gemm(12288, 512, 4096, 0, 132, h200).cluster, 1);
}

TEST(TieredGemmSchedule, CongestionOverrides) {
  const TieredGemmSchedule base = dak::plan_tiered_gemm(12288, 1024, 4096, 1000, 132);
  // Host CTAs round up to whole clusters; the rest of the grid (whole clusters) serves HBM rows.
  TieredGemmSchedule s = dak::with_congestion(base, 6, 2, 0, 132);
  EXPECT_EQ(s.cluster, 4);
  EXPECT_EQ(s.host_ctas, 8);
  EXPECT_EQ(s.host_stages, 2);
  EXPECT_EQ(s.hbm_ctas, 124);
  expect_exact_cover(s);
  s = dak::with_congestion(base, 6, 2, 1, 132);  // multicast off
  EXPECT_EQ(s.cluster, 1);
  EXPECT_EQ(s.host_ctas, 6);
  EXPECT_EQ(s.hbm_ctas, 126);
  expect_exact_cover(s);
  s = dak::with_congestion(base, 16, 1, 2, 130);
  EXPECT_EQ(s.host_ctas + s.hbm_ctas, 130);
  expect_exact_cover(s);
  EXPECT_THROW(dak::with_congestion(base, 132, 1, 4, 132), dak::Error);  // no cluster left for HBM rows
  EXPECT_THROW(dak::with_congestion(base, 8, 1, 3, 132), dak::Error);    // not a cluster size
  EXPECT_THROW(dak::with_congestion(base, 8, 99, 4, 132), dak::Error);   // beyond the SMEM ring
  const TieredGemmSchedule decode = dak::plan_tiered_gemm(12288, 8, 4096, 1000, 132);
  EXPECT_THROW(dak::with_congestion(decode, 8, 2, 2, 132), dak::Error);  // multicast needs a 128-row tile
  s = base;
  s.cluster = 4;
  s.host_ctas = 6;
  EXPECT_THROW(s.validate(), dak::Error);  // not whole clusters
}

TEST(TieredGemmSchedule, TileAndSplitChoices) {
  EXPECT_EQ(dak::choose_tiered_gemm_tile(4096, 1, 4096, 132).bn, 8);
  EXPECT_EQ(dak::choose_tiered_gemm_tile(4096, 9, 4096, 132).bn, 16);
  EXPECT_EQ(dak::choose_tiered_gemm_tile(4096, 64, 4096, 132).bn, 64);
  EXPECT_EQ(dak::choose_tiered_gemm_tile(4096, 65, 4096, 132).bm, 128);
  // The compute tiles on a large weight (many units): 128 x 256 from 129 tokens wherever it pads N
  // no more than 128 x 128 (257-384 and 513-640 are padded less by 128).
  for (const auto& [N, bn] : {std::pair{65, 128}, {128, 128}, {129, 256}, {256, 256}, {257, 128}, {384, 128},
                              {385, 256}, {512, 256}, {513, 128}, {1000, 256}, {8192, 256}}) {
    EXPECT_EQ(dak::choose_tiered_gemm_tile(57344, N, 8192, 132).bn, bn) << "N = " << N;
    EXPECT_EQ(dak::choose_tiered_gemm_tile(57344, N, 8192, 132).bm, 128) << "N = " << N;
    EXPECT_EQ(dak::choose_tiered_gemm_tile(57344, N, 8192, 132, 128).bn, 128) << "N = " << N;  // forced
    EXPECT_EQ(dak::choose_tiered_gemm_tile(64, N, 8192, 132, 256).bn, 256) << "N = " << N;      // forced
  }
  // The rule's picks for the shipped linears at N = 256 / 512, against the H200 (session 19,
  // `dak bench gemm` with random inputs, 8-layer stacks and single GEMMs, --compute-tile auto / 128
  // / 256 in one call, us per layer): Llama-2-7B 207.1 / 211.1 / 227.4 at N = 256 and 339.2 / 373.4
  // / 342.6 at 512; Llama-2-70B 701.4 / 763.1 / 760.7 and 1297.8 / 1625.1 / 1317.1; OPT-30B 546.8 /
  // 602.4 / 582.6 and 1064.9 / 1220.2 / 1039.6 (within its spread, 930-1087). Single GEMMs: OPT-30B
  // qkv at 256 148.9 us on 128 x 128 against 186.2 on 128 x 256, at 512 241.2 on 128 x 256 against
  // 287.1. At N = 256 o and down of Llama-2-7B split K in two (`gemm_probe tiles`: 30.0 -> 25.4 us,
  // 65.6 -> 46.3), so do the K = 28672 downs on 128 x 256.
  struct Pick {
    int64_t M, K;
    int32_t bn[2], splits[2];  // at N = 256, 512
  };
  for (const Pick& m : {Pick{12288, 4096, {256, 128}, {1, 1}}, Pick{4096, 4096, {128, 128}, {2, 1}},
                        Pick{22016, 4096, {128, 256}, {1, 1}}, Pick{4096, 11008, {128, 128}, {2, 1}},
                        Pick{57344, 8192, {256, 256}, {1, 1}}, Pick{8192, 28672, {256, 256}, {2, 1}},
                        Pick{21504, 7168, {128, 256}, {1, 1}}, Pick{28672, 7168, {256, 256}, {1, 1}},
                        Pick{7168, 28672, {256, 256}, {2, 1}}}) {
    const int64_t tokens[2] = {256, 512};
    for (int i = 0; i < 2; ++i) {
      const TieredGemmSchedule s = dak::plan_tiered_gemm(m.M, tokens[i], m.K, 0, 132);
      EXPECT_EQ(s.tile.bn, m.bn[i]) << s.to_string();
      EXPECT_EQ(s.k_splits, m.splits[i]) << s.to_string();
    }
  }
  // Splits keep their workspace bounded (kComputeSplitUnits units per SM at most) and the bound
  // the engine allocates covers every N.
  for (const auto& [M, K] : {std::pair{4096, 4096}, {8192, 28672}, {4096, 11008}}) {
    const int64_t bound = dak::tiered_gemm_workspace_bound(M, K, 2048, 132);
    for (int64_t N = 1; N <= 2048; N += 7) {
      const TieredGemmSchedule s = dak::plan_tiered_gemm(M, N, K, 0, 132);
      EXPECT_LE(s.workspace_bytes(), bound) << s.to_string();
      EXPECT_LE(s.host_units() + s.hbm_units(),
                std::max<int64_t>(dak::kComputeSplitUnits * 132, (s.hbm_m_tiles()) * s.n_tiles()))
          << s.to_string();
    }
  }
  dak::TieredGemmLinkLimits narrow;
  narrow.compute_bn = 128;
  const TieredGemmSchedule s128 = dak::plan_tiered_gemm(12288, 512, 4096, 1000, 132, narrow);
  EXPECT_EQ(s128.tile.bn, 128);
  EXPECT_EQ(s128.cluster, 4);  // 4 n-tiles of 128
  EXPECT_EQ(dak::plan_tiered_gemm(57344, 512, 8192, 1000, 132).cluster, 2);
  EXPECT_EQ(dak::plan_tiered_gemm(57344, 512, 8192, 1000, 132, narrow).cluster, 4);
  // A CTA streams at ~3 x its share of B_g alone but ~1.5 x with 64 CTAs loading HBM, so the
  // 64-tile decode linears of Llama-2-7B (o_proj, down) split in two over 128 CTAs, while qkv
  // (192 m-tiles), gate_up (344) and the LM head (500) keep whole tiles (measured in session 10:
  // qkv's split was 1.7 us slower in the two-layer trace, down's 5 us faster).
  const auto t = dak::choose_tiered_gemm_tile(4096, 8, 4096, 132);
  EXPECT_EQ(t.bk(), 256);
  EXPECT_EQ(dak::choose_tiered_gemm_k_splits(4096, 8, 4096, t, 132), 2);
  EXPECT_EQ(dak::choose_tiered_gemm_k_splits(4096, 1, 11008, t, 132), 2);
  EXPECT_EQ(dak::choose_tiered_gemm_k_splits(12288, 8, 4096, t, 132), 1);
  EXPECT_EQ(dak::choose_tiered_gemm_k_splits(22016, 8, 4096, t, 132), 1);
  EXPECT_EQ(dak::choose_tiered_gemm_k_splits(32000, 1, 4096, t, 132), 1);
  // The cost model: 64 tiles of 43 k-blocks on 64 CTAs are bound by their loaded rate (43 x 1.82
  // loads), on 128 by B_g (22 / 0.371) plus the epilogue.
  EXPECT_NEAR(dak::tiered_gemm_split_cost(64, 43, 1, 132), 43 * (1 + 0.0128 * 64), 1e-9);
  EXPECT_NEAR(dak::tiered_gemm_split_cost(64, 43, 2, 132), 22 / (0.36 * 132 / 128) + 5, 1e-9);
  // One workspace serves every GEMM of a pass: the counter region has the same size for every
  // schedule and holds the counters of every split schedule; shapes with more tiles do not split.
  for (const auto& [M, N, K] : {std::tuple{130, 8, 8200}, {4096, 8, 4096}, {4096, 16, 11008}, {64, 40, 16384}}) {
    const auto s = dak::plan_tiered_gemm(M, N, K, 0, 132);
    EXPECT_GT(s.k_splits, 1) << s.to_string();
    EXPECT_LE(s.max_output_tiles() * 4, dak::TieredGemmSchedule::counter_bytes()) << s.to_string();
  }
  EXPECT_EQ(dak::choose_tiered_gemm_k_splits(64 * 20000, 8, 1 << 20, t, 132), 1);
  // A few m-tiles with a long K leave most SMs idle: split (busiest CTA 64 k-blocks -> 4 + epilogue).
  EXPECT_EQ(dak::choose_tiered_gemm_k_splits(64, 8, 16384, t, 132), 16);
  EXPECT_GT(dak::choose_tiered_gemm_k_splits(130, 8, 8200, t, 132), 1);
  // Units keep at least 2 k-blocks: K = 512 (2 k-blocks) never splits.
  EXPECT_EQ(dak::choose_tiered_gemm_k_splits(64, 8, 512, t, 132), 1);
  // Compute-bound tiles never split.
  EXPECT_EQ(dak::choose_tiered_gemm_k_splits(4096, 512, 4096, dak::choose_tiered_gemm_tile(4096, 512, 4096, 132), 132), 1);
  // Ring depths: 5 / 5 / 4 / 3 stages of 64 x 256 (+ x) for bn 8 / 16 / 32 / 64, 6 / 4 of 128 x 64
  // (+ x) for bn 128 / 256.
  const std::pair<dak::TieredGemmTile, int32_t> rings[] = {
      {{64, 8}, 5}, {{64, 16}, 5}, {{64, 32}, 4}, {{64, 64}, 3}, {{128, 128}, 6}, {{128, 256}, 4}};
  for (const auto& [tile, stages] : rings) {
    EXPECT_EQ(tile.max_stages(), stages) << tile.bm << "x" << tile.bn;
    EXPECT_LE(tile.max_stages() * tile.stage_bytes(), 200 * 1024);
  }
  EXPECT_EQ((dak::TieredGemmTile{128, 128}.bk()), 64);
  EXPECT_EQ((dak::TieredGemmTile{128, 256}.bk()), 64);
  // k-blocks of a schedule count bk()-wide blocks, the last one partial.
  EXPECT_EQ(dak::plan_tiered_gemm(300, 8, 576, 0, 132).k_blocks(), 3);
  EXPECT_EQ(dak::plan_tiered_gemm(300, 100, 576, 0, 132).k_blocks(), 9);
}

TEST(TieredGemmSchedule, AccumulationChunksSplitFewHostTiles) {
  // Unsplit 64 x 8 / 64 x 16 tiles with K >= 8192 sum K in 4 chunks; the host side splits its units
  // 4 ways, so Llama-2-70B's down (K = 28672) with 128 host rows reads them on 8 CTAs, not 2.
  const auto t8 = dak::choose_tiered_gemm_tile(8192, 8, 28672, 132);
  EXPECT_EQ(dak::choose_tiered_gemm_k_chunks(8192, 8, 28672, t8, 132), dak::kTieredGemmKChunks);
  EXPECT_EQ(dak::choose_tiered_gemm_k_chunks(8192, 16, 28672, dak::choose_tiered_gemm_tile(8192, 16, 28672, 132), 132),
            dak::kTieredGemmKChunks);
  EXPECT_EQ(dak::choose_tiered_gemm_k_chunks(57344, 8, 8192, t8, 132), dak::kTieredGemmKChunks);
  // Not: K = 4096 (16 k-blocks), a shape that already splits K (Llama-2-7B's down), bn 32 / 64, the
  // compute tiles.
  EXPECT_EQ(dak::choose_tiered_gemm_k_chunks(12288, 8, 4096, t8, 132), 1);
  EXPECT_EQ(dak::choose_tiered_gemm_k_chunks(4096, 8, 11008, t8, 132), 1);
  for (int64_t N : {32, 64, 512}) {
    EXPECT_EQ(dak::plan_tiered_gemm(8192, N, 28672, 128, 132).k_chunks, 1) << "N = " << N;
  }
  const TieredGemmSchedule base = dak::plan_tiered_gemm(8192, 8, 28672, 0, 132);
  EXPECT_EQ(base.k_splits, 1);
  EXPECT_EQ(base.k_chunks, 4);
  EXPECT_EQ(base.hbm_units(), 128);
  EXPECT_GT(base.workspace_bytes(), TieredGemmSchedule::counter_bytes());  // host partials, any m_host
  // 126 HBM units keep one round: 4 host CTAs of 2 units (measured on an H100: 8 host CTAs left
  // 124 for the 126 HBM units, 195 us against 162 at x = 0). OPT-30B's down (112 HBM units) takes 8.
  const TieredGemmSchedule s = dak::plan_tiered_gemm(8192, 8, 28672, 128, 132);
  EXPECT_EQ(s.host_units(), 8) << s.to_string();
  EXPECT_EQ(s.host_ctas, 4) << s.to_string();
  EXPECT_EQ(s.host_stages, 5) << s.to_string();
  EXPECT_EQ(s.hbm_units(), 126) << s.to_string();
  EXPECT_EQ(s.hbm_ctas, 126) << s.to_string();
  EXPECT_EQ(s.workspace_bytes(), base.workspace_bytes());
  const TieredGemmSchedule opt = dak::plan_tiered_gemm(7168, 8, 28672, 128, 132);
  EXPECT_EQ(opt.host_ctas, 8) << opt.to_string();
  EXPECT_EQ(opt.host_stages, 3) << opt.to_string();
  // Llama-2-70B's gate_up (892 HBM units in 7 rounds) keeps 7 rounds.
  const TieredGemmSchedule gu = dak::plan_tiered_gemm(57344, 8, 8192, 256, 132);
  EXPECT_EQ(dak::plan_tiered_gemm(57344, 8, 8192, 0, 132).k_chunks, 4);
  EXPECT_LE((gu.hbm_units() + gu.hbm_ctas - 1) / gu.hbm_ctas, 7) << gu.to_string();
  // Host units in rounds of equal counts: 24 units (384 rows) on 8 CTAs, not 9.
  const TieredGemmSchedule s384 = dak::plan_tiered_gemm(8192, 8, 28672, 384, 132);
  EXPECT_EQ(s384.host_units() % s384.host_ctas, 0) << s384.to_string();
  for (int64_t m_host : {int64_t(0), int64_t(1), int64_t(64), int64_t(128), int64_t(384), int64_t(4000), int64_t(8192)}) {
    expect_exact_cover(dak::plan_tiered_gemm(8192, 8, 28672, m_host, 132));
    expect_exact_cover(dak::plan_tiered_gemm(8192, 13, 8200, m_host, 132));
  }
  // Chunks with k-splits, or on a tile without the chunked accumulation, are refused.
  TieredGemmSchedule bad = base;
  bad.k_splits = 2;
  EXPECT_THROW(bad.validate(), dak::Error);
  bad = dak::plan_tiered_gemm(8192, 32, 28672, 0, 132);
  bad.k_chunks = 4;
  EXPECT_THROW(bad.validate(), dak::Error);
}

TEST(TieredGemmSchedule, RefusesBadShapes) {
  EXPECT_THROW(dak::plan_tiered_gemm(0, 8, 64, 0, 132), dak::Error);
  EXPECT_THROW(dak::plan_tiered_gemm(64, 0, 64, 0, 132), dak::Error);
  EXPECT_THROW(dak::plan_tiered_gemm(64, 8, 60, 0, 132), dak::Error);  // K % 8 != 0
  EXPECT_THROW(dak::plan_tiered_gemm(64, 8, 64, 65, 132), dak::Error);
  EXPECT_THROW(dak::plan_tiered_gemm(64, 8, 64, -1, 132), dak::Error);
  EXPECT_THROW(dak::plan_tiered_gemm(64, 8, 64, 0, 0), dak::Error);
  TieredGemmSchedule s = dak::plan_tiered_gemm(640, 8, 640, 64, 132);
  s.tile = {64, 48};
  EXPECT_THROW(s.validate(), dak::Error);
  s = dak::plan_tiered_gemm(640, 8, 640, 64, 132);
  s.host_stages = s.tile.max_stages() + 1;
  EXPECT_THROW(s.validate(), dak::Error);
  s = dak::plan_tiered_gemm(640, 8, 640, 64, 132);
  s.hbm_ctas = 0;
  EXPECT_THROW(s.validate(), dak::Error);
}

}  // namespace

namespace {
TEST(TieredGemmSchedule, HostRowsInWholeUnits) {
  // The nearest number of 128-row units, at least one when x > 0, at most M.
  EXPECT_EQ(dak::tiered_gemm_host_rows(0.0, 22016, 128), 0);
  EXPECT_EQ(dak::tiered_gemm_host_rows(-0.5, 22016, 128), 0);
  EXPECT_EQ(dak::tiered_gemm_host_rows(0.005, 22016, 128), 128);   // 110 rows: 0.86 units -> 1
  EXPECT_EQ(dak::tiered_gemm_host_rows(0.02, 22016, 128), 384);    // 440 rows: 3.44 units -> 3
  EXPECT_EQ(dak::tiered_gemm_host_rows(0.1, 22016, 128), 2176);    // 2201.6 rows: 17.2 -> 17
  EXPECT_EQ(dak::tiered_gemm_host_rows(1e-9, 4096, 128), 128);     // any host share is one unit
  EXPECT_EQ(dak::tiered_gemm_host_rows(1.0, 22016, 128), 22016);
  EXPECT_EQ(dak::tiered_gemm_host_rows(0.999, 960, 128), 896);     // 7.49 units -> 7 of 7.5
  EXPECT_EQ(dak::tiered_gemm_host_rows(1.0, 960, 128), 960);       // capped at M
  EXPECT_EQ(dak::tiered_gemm_host_rows(0.5, 100, 128), 100);       // one unit, more than M
}
}  // namespace
