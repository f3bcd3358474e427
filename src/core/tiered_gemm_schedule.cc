#include "core/tiered_gemm_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace dak {
namespace {

constexpr TieredGemmTile kCompiledTiles[] = {{64, 8}, {64, 16}, {64, 32}, {64, 64}, {128, 128}, {128, 256}};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The fields of a schedule that its tile and split counts depend on (max_output_tiles(),
/// workspace_bytes()), for the choices made before a schedule exists.
TieredGemmSchedule split_shape(int64_t M, int64_t N, int64_t K, const TieredGemmTile& tile, int32_t k_splits,
                               int32_t k_chunks = 1) {
  TieredGemmSchedule s;
  s.M = M;
  s.N = N;
  s.K = K;
  s.tile = tile;
  s.k_splits = k_splits;
  s.k_chunks = k_chunks;
  return s;
}

/// Multicast cluster of `tile` at N tokens with m_host host rows (tiered_gemm_multicast_cluster's rule).
int32_t cluster_of(const TieredGemmTile& tile, int64_t N, int64_t m_host, int64_t max_cluster) {
  if (tile.bm != 128) return 1;
  const int64_t n_tiles = ceil_div(N, tile.bn);
  const int32_t want = n_tiles >= 4 ? 4 : n_tiles >= 2 ? 2 : 1;
  const int32_t cap = max_cluster >= 4 ? 4 : max_cluster >= 2 ? 2 : 1;
  int32_t c = std::min(want, cap);
  if (c == 4) {
    // Clusters of 2 read each host W tile twice where clusters of 4 read it once, but they fit every
    // SM (clusters of 4: 120 of the 132). While the host side is bound by its bytes in flight (one
    // read stream per cluster and host m-tile, at most a ring of W tiles) rather than by the link,
    // the second read costs it no time and the HBM side keeps its 12 SMs.
    const int64_t streams = ceil_div(m_host, tile.bm) * ceil_div(n_tiles, 2);
    const int64_t inflight = streams * tile.max_stages() * int64_t(tile.bm) * tile.bk() * 2;
    if (inflight <= kLoadedHostInflightBytes) c = 2;
  }
  return c;
}

}  // namespace

int64_t TieredGemmSchedule::workspace_bytes() const {
  const int64_t partials =
      partial_slots() > 1 ? max_output_tiles() * partial_slots() * int64_t(tile.bm) * tile.bn * 4 : 0;
  return counter_bytes() + partials;
}

void TieredGemmSchedule::validate() const {
  const std::string where = "tiered GEMM schedule " + to_string();
  if (M < 1 || N < 1 || K < 1 || K % 8 != 0) {
    fail(fmt::format("tiered GEMM of M={} N={} K={} is not supported", M, N, K), where,
         "use positive sizes with K a multiple of 8 (TMA needs 16-byte row pitches)");
  }
  if (m_host < 0 || m_host > M) {
    fail(fmt::format("host rows {} outside [0, M = {}]", m_host, M), where, "give 0 <= m_host <= M");
  }
  if (std::find(std::begin(kCompiledTiles), std::end(kCompiledTiles), tile) == std::end(kCompiledTiles)) {
    fail(fmt::format("tile {}x{} is not one the kernel is compiled for", tile.bm, tile.bn), where,
         "use choose_tiered_gemm_tile() (bm 64 with bn 8/16/32/64, or bm 128 with bn 128/256)");
  }
  if (k_splits < 1 || k_splits > k_blocks()) {
    fail(fmt::format("k_splits {} outside [1, {} k-blocks]", k_splits, k_blocks()), where,
         "use choose_tiered_gemm_k_splits()");
  }
  if (k_chunks < 1 || k_chunks > k_blocks() || (k_chunks > 1 && (k_splits != 1 || tile.bm != 64 || tile.bn > 16))) {
    fail(fmt::format("k_chunks {} with k_splits {} on a {}x{} tile of {} k-blocks", k_chunks, k_splits, tile.bm,
                     tile.bn, k_blocks()),
         where, "use choose_tiered_gemm_k_chunks() (chunks only for unsplit 64 x 8 / 64 x 16 tiles)");
  }
  if (partial_slots() > 1 && max_output_tiles() > kMaxSplitTiles) {  // split partials of either side
    fail(fmt::format("k_splits {} / k_chunks {} with {} output tiles: the workspace counts at most {} split tiles",
                     k_splits, k_chunks, max_output_tiles(), kMaxSplitTiles),
         where, "use k_splits = 1 and k_chunks = 1 for this shape (choose_tiered_gemm_k_splits() / _k_chunks() do)");
  }
  if ((host_units() > 0 && host_ctas < 1) || (hbm_units() > 0 && hbm_ctas < 1) || host_ctas < 0 || hbm_ctas < 0 ||
      host_ctas + hbm_ctas < 1) {
    fail(fmt::format("{} host units on {} host CTAs and {} HBM units on {} HBM CTAs", host_units(), host_ctas,
                     hbm_units(), hbm_ctas),
         where, "give every side that has work at least one CTA");
  }
  const int32_t max_st = tile.max_stages();
  if (host_stages < 1 || host_stages > max_st || hbm_stages < 1 || hbm_stages > max_st) {
    fail(fmt::format("stages in flight host {} / HBM {} outside [1, {}]", host_stages, hbm_stages, max_st), where,
         "stay within the SMEM ring of the tile");
  }
  if (cluster != 1 && cluster != 2 && cluster != 4) {
    fail(fmt::format("cluster {} is not 1, 2 or 4", cluster), where, "use plan_tiered_gemm()'s multicast choice");
  }
  if (cluster > 1 && tile.bm != 128) {
    fail(fmt::format("multicast clusters need a 128-row tile (N > 64), not {}x{}", tile.bm, tile.bn), where,
         "use cluster 1 for N <= 64");
  }
  if (host_ctas % cluster != 0 || hbm_ctas % cluster != 0) {
    fail(fmt::format("{} host and {} HBM CTAs are not whole clusters of {}", host_ctas, hbm_ctas, cluster), where,
         "give CTA counts that are multiples of the cluster size");
  }
}

std::string TieredGemmSchedule::to_string() const {
  return fmt::format(
      "M={} N={} K={} m_host={} tile={}x{}x{} k_splits={} k_chunks={} host_ctas={}x{} stages hbm_ctas={}x{} stages "
      "cluster={}",
      M, N, K, m_host, tile.bm, tile.bn, tile.bk(), k_splits, k_chunks, host_ctas, host_stages, hbm_ctas, hbm_stages,
      cluster);
}

int64_t tiered_gemm_workspace_bound(int64_t M, int64_t K, int64_t max_n, int64_t sm_count, int32_t compute_bn) {
  int64_t most = TieredGemmSchedule::counter_bytes();
  for (int64_t N = 1; N <= max_n; ++N) {
    const TieredGemmTile tile = choose_tiered_gemm_tile(M, N, K, sm_count, compute_bn);
    most = std::max(most, split_shape(M, N, K, tile, choose_tiered_gemm_k_splits(M, N, K, tile, sm_count),
                                      choose_tiered_gemm_k_chunks(M, N, K, tile, sm_count))
                              .workspace_bytes());
  }
  return most;
}

int64_t tiered_gemm_host_rows(double x, int64_t M, int64_t unit_rows) {
  if (!(x > 0) || M < 1) return 0;
  const int64_t unit = std::max<int64_t>(1, unit_rows);
  return std::min(M, std::max<int64_t>(1, std::llround(x * double(M) / double(unit))) * unit);
}

namespace {

constexpr TieredGemmTile kNarrow{128, 128}, kWide{128, 256};

/// The compute path's k_splits for one tile: the S in [1, min(8, k_blocks / 8)] of least
/// tiered_gemm_compute_cost, a split taken only when it saves more than 3 % (it costs workspace
/// and an epilogue whose constant is the least certain), with at most kComputeSplitUnits units,
/// and within the workspace's split-tile counters. Writes the cost to *cost.
int32_t compute_k_splits(int64_t M, int64_t N, int64_t K, const TieredGemmTile& tile, int64_t sm_count, double* cost) {
  const int64_t k_blocks = ceil_div(K, tile.bk());
  const int64_t tiles = ceil_div(M, tile.bm) * ceil_div(N, tile.bn);
  const double whole = tiered_gemm_compute_cost(M, N, K, tile, 1, sm_count);
  double best_cost = whole;
  int32_t best = 1;
  const int64_t most =
      split_shape(M, N, K, tile, 1).max_output_tiles() > TieredGemmSchedule::kMaxSplitTiles ? 1
                                                                                            : std::min<int64_t>(8, k_blocks / 8);
  for (int64_t S = 2; S <= most; ++S) {
    if (tiles * S > kComputeSplitUnits * sm_count) break;
    const double c = tiered_gemm_compute_cost(M, N, K, tile, S, sm_count);
    if (c < 0.97 * whole && c < best_cost) {
      best_cost = c;
      best = int32_t(S);
    }
  }
  if (cost) *cost = best_cost;
  return best;
}

}  // namespace

double tiered_gemm_round_cost(int64_t K, const TieredGemmTile& tile, int64_t S) {
  // Constants of the H200, in units of one 128 x 128 k-block (128 x 128 x 64, ~0.39 us), fitted
  // to `gemm_probe tiles` (random inputs, 8 back-to-back launches; docs/perf-notes.md session 19)
  // on six linears at N = 512, both tiles at 1-4 k-splits (25 points, within 10 %):
  // - a 128 x 256 k-block costs 1.84 of them;
  // - every round of units adds ~15 on 128 x 128 and ~4 on 128 x 256 (its epilogue and whatever
  //   else a round costs beyond its k-blocks: fitted, not separated), and a split round the split
  //   reduction on top (the fp32 partial written, the reducer's wait and read; not overlapped with
  //   the math on the 128-row tiles): ~8 and ~37.
  // Session 18 charged the wide tile ~34 us per launch for what it lost inside Llama-2-7B's 8-layer
  // stack; with the whole-tile epilogue the stacks no longer show that loss (session 19: 342.6 us
  // per layer all-wide against 373.4 all-narrow at N = 512), so there is no launch term.
  constexpr double kWideBlockCost = 1.84;
  constexpr double kNarrowRound = 15, kWideRound = 4;
  constexpr double kNarrowSplitEpilogue = 8, kWideSplitEpilogue = 37;
  const bool wide = tile.bn > 128;
  const int64_t splits = std::max<int64_t>(S, 1);
  const double block = wide ? kWideBlockCost : 1.0;
  const double epilogue =
      (wide ? kWideRound : kNarrowRound) + (splits > 1 ? (wide ? kWideSplitEpilogue : kNarrowSplitEpilogue) : 0.0);
  return double(ceil_div(ceil_div(K, tile.bk()), splits)) * block + epilogue;
}

double tiered_gemm_compute_cost(int64_t M, int64_t N, int64_t K, const TieredGemmTile& tile, int64_t S,
                                int64_t sm_count) {
  const int64_t units = ceil_div(M, tile.bm) * ceil_div(N, tile.bn) * S;
  const int64_t rounds = ceil_div(units, std::max<int64_t>(sm_count, 1));
  return double(rounds) * tiered_gemm_round_cost(K, tile, S);
}

TieredGemmTile choose_tiered_gemm_tile(int64_t M, int64_t N, int64_t K, int64_t sm_count, int32_t compute_bn) {
  if (N <= 8) return {64, 8};
  if (N <= 16) return {64, 16};
  if (N <= 32) return {64, 32};
  if (N <= 64) return {64, 64};
  if (compute_bn == 128) return kNarrow;
  if (compute_bn == 256) return kWide;
  // The wide tile only where it pads N no further than the narrow one (N rounded up to 128 is a
  // multiple of 256) and where its best split costs no more than the narrow tile's
  // (tiered_gemm_compute_cost: waves of one unit per SM, so 4096 x 4096 at N = 512 runs 128
  // narrow units in one wave rather than 64 wide ones on half the SMs).
  const int64_t n128 = ceil_div(N, 128) * 128;
  if (n128 % 256 != 0) return kNarrow;
  double narrow = 0, wide = 0;
  compute_k_splits(M, N, K, kNarrow, sm_count, &narrow);
  compute_k_splits(M, N, K, kWide, sm_count, &wide);
  return wide <= narrow ? kWide : kNarrow;
}

double tiered_gemm_split_cost(int64_t tiles, int64_t k_blocks, int64_t S, int64_t sm_count) {
  // Constants of the H200 (docs/perf-notes.md, session 10), in units of one k-block load of an
  // unloaded CTA (a 64 x 256 bf16 W stage at ~94 GB/s, ~0.34 us).
  constexpr double kGpuShare = 0.36;     // (B_g / sm_count) / one unloaded CTA's rate
  constexpr double kLoadSlope = 0.0128;  // a CTA's rate is 1 / (1 + kLoadSlope * busy CTAs)
  constexpr double kLastUnitEpilogue = 5, kUnitEpilogue = 2;  // split epilogue, in k-block loads
  const int64_t units = tiles * S;
  const int64_t ctas = std::min(units, sm_count);
  const int64_t most = ceil_div(units, ctas), extra = units % ctas;  // `extra` CTAs run `most` units
  const double unit_blocks = double(ceil_div(k_blocks, S));
  double cost = 0;
  for (int64_t r = 0; r < most; ++r) {
    const int64_t busy = (r < most - 1 || extra == 0) ? ctas : extra;
    const double rate = std::min(1.0 / (1.0 + kLoadSlope * double(busy)), kGpuShare * double(sm_count) / double(busy));
    cost += unit_blocks / rate;
  }
  if (S > 1) cost += kLastUnitEpilogue + kUnitEpilogue * double(most - 1);
  return cost;
}

int32_t choose_tiered_gemm_k_splits(int64_t M, int64_t N, int64_t K, const TieredGemmTile& tile, int64_t sm_count) {
  if (M < 1 || N < 1 || K < 1 || sm_count < 1) return 1;
  if (N > 64) return tile.bm == 128 ? compute_k_splits(M, N, K, tile, sm_count, nullptr) : 1;
  const int64_t k_blocks = ceil_div(K, tile.bk());
  const int64_t tiles = ceil_div(M, tile.bm) * ceil_div(N, tile.bn);
  if (split_shape(M, N, K, tile, 1).max_output_tiles() > TieredGemmSchedule::kMaxSplitTiles) return 1;
  double best_cost = std::numeric_limits<double>::max();
  int32_t best = 1;
  for (int64_t s = 1; s <= std::min<int64_t>(16, std::max<int64_t>(1, k_blocks / 2)); ++s) {
    const double cost = tiered_gemm_split_cost(tiles, k_blocks, s, sm_count);
    if (cost < best_cost * (1 - 1e-9)) {
      best_cost = cost;
      best = int32_t(s);
    }
  }
  return best;
}

int32_t choose_tiered_gemm_k_chunks(int64_t M, int64_t N, int64_t K, const TieredGemmTile& tile, int64_t sm_count) {
  if (M < 1 || N < 1 || K < 1 || sm_count < 1 || tile.bm != 64 || tile.bn > 16) return 1;
  if (choose_tiered_gemm_k_splits(M, N, K, tile, sm_count) != 1) return 1;
  const TieredGemmSchedule shape = split_shape(M, N, K, tile, 1, kTieredGemmKChunks);
  if (shape.k_blocks() < 8 * kTieredGemmKChunks || shape.max_output_tiles() > TieredGemmSchedule::kMaxSplitTiles) {
    return 1;
  }
  return kTieredGemmKChunks;
}

int32_t tiered_gemm_multicast_cluster(int64_t M, int64_t N, int64_t K, int64_t m_host, int64_t sm_count,
                                      int64_t max_cluster, int32_t compute_bn) {
  return cluster_of(choose_tiered_gemm_tile(M, N, K, sm_count, compute_bn), N, m_host, max_cluster);
}

TieredGemmSchedule plan_tiered_gemm(int64_t M, int64_t N, int64_t K, int64_t m_host, int64_t sm_count,
                                    const TieredGemmLinkLimits& limits) {
  const std::string where = fmt::format("tiered GEMM M={} N={} K={} m_host={}", M, N, K, m_host);
  if (M < 1 || N < 1 || K < 1 || K % 8 != 0 || sm_count < 1) {
    fail("sizes must be positive, K a multiple of 8, and at least one SM", where,
         "check the linear layer's shape (K = in_features)");
  }
  if (m_host < 0 || m_host > M) fail(fmt::format("host rows outside [0, M = {}]", M), where, "give 0 <= m_host <= M");
  TieredGemmSchedule s;
  s.M = M;
  s.N = N;
  s.K = K;
  s.m_host = m_host;
  s.tile = choose_tiered_gemm_tile(M, N, K, sm_count, limits.compute_bn);
  s.k_splits = choose_tiered_gemm_k_splits(M, N, K, s.tile, sm_count);
  s.k_chunks = choose_tiered_gemm_k_chunks(M, N, K, s.tile, sm_count);
  const int32_t ring = s.tile.max_stages();
  s.host_stages = 1;
  s.hbm_stages = ring;
  int64_t grid = sm_count;
  if (const int32_t c = m_host > 0 ? cluster_of(s.tile, N, m_host, limits.max_cluster) : 1; c > 1) {
    s.cluster = c;
    grid = limits.grid_ctas(s.cluster, sm_count);
    if (grid < 2 * s.cluster) {  // too few SMs for two clusters: no multicast
      s.cluster = 1;
      grid = sm_count;
    }
  }
  const int64_t C = s.cluster;
  const int64_t host_units = s.host_units(), hbm_units = s.hbm_units();
  int64_t host_ctas = 0;
  if (host_units > 0) {
    const int64_t stage = s.host_stage_inflight_bytes();
    const int64_t link_ctas = C * ceil_div(limits.min_inflight_bytes, stage * std::min(4, ring));
    const int64_t compute_ctas = ceil_div(m_host * grid, M);
    host_ctas = std::max(link_ctas, compute_ctas);
    // The bandwidth path needs host CTAs only to keep the link busy: at most as many as keep one
    // stage each under the in-flight cap (with 36 KiB stages the compute share alone put 2.3 MiB in
    // flight for Llama-2-7B's qkv at 50 % host rows, where HBM reads slow down).
    if (s.tile.bm == 64) host_ctas = std::min(host_ctas, std::max(link_ctas, limits.inflight_cap_bytes / stage));
    if (s.k_chunks > 1) {
      // The host units split k_chunks ways: one read stream each, up to the cap at 3 stages a
      // stream, as long as the HBM side keeps the rounds it has beside the unsplit units' CTAs
      // (Llama-2-70B's down: 126 HBM units on 124 CTAs took two rounds, 162 -> 195 us), in rounds of
      // equal unit counts.
      const int64_t base = std::clamp<int64_t>(host_units / s.k_chunks, 1, host_ctas);
      int64_t most = host_units;
      if (hbm_units > 0) {
        const int64_t rounds = ceil_div(hbm_units, std::max<int64_t>(grid - base, 1));
        most = std::max(base, grid - ceil_div(hbm_units, rounds));
      }
      host_ctas = std::max(base, std::min(host_units, limits.inflight_cap_bytes / (stage * std::min(3, ring))));
      host_ctas = std::clamp<int64_t>(std::min(host_ctas, most), 1, host_units);
      host_ctas = ceil_div(host_units, ceil_div(host_units, host_ctas));
    }
    host_ctas = std::min(host_ctas, host_units * C);
    host_ctas = std::min(host_ctas, hbm_units > 0 ? grid - C : grid);
    host_ctas = std::max<int64_t>(ceil_div(host_ctas, C) * C, C);
    const int64_t fit = limits.inflight_cap_bytes / (host_ctas / C * stage);
    s.host_stages = int32_t(std::clamp<int64_t>(fit, 1, ring));
  }
  s.host_ctas = int32_t(host_ctas);
  s.hbm_ctas = hbm_units > 0 ? int32_t(std::min(grid - host_ctas, hbm_units * C) / C * C) : 0;
  s.validate();
  return s;
}

TieredGemmSchedule with_congestion(TieredGemmSchedule s, int64_t host_ctas, int32_t host_stages, int32_t cluster,
                                   int64_t grid_ctas) {
  if (cluster > 0) s.cluster = cluster;  // an invalid size is refused by validate() below
  const std::string where = "tiered GEMM congestion override for " + s.to_string();
  const int64_t C = s.cluster;
  const int64_t grid = grid_ctas / C * C;
  if (s.host_units() > 0) s.host_ctas = int32_t(std::max<int64_t>(ceil_div(host_ctas, C), 1) * C);
  else s.host_ctas = 0;
  s.host_stages = host_stages;
  const int64_t left = grid - s.host_ctas;
  if (s.hbm_units() > 0 && left < C) {
    fail(fmt::format("{} host CTAs leave no whole cluster of {} of the {} CTAs for the HBM rows", s.host_ctas, C, grid),
         where, fmt::format("use fewer host CTAs (at most {})", grid - C));
  }
  s.hbm_ctas = s.hbm_units() > 0 ? int32_t(std::min(left, s.hbm_units() * C) / C * C) : 0;
  s.validate();
  return s;
}

}  // namespace dak
