// Work decomposition of the tiered GEMM (the DAK paper's "SplitK GEMM", DESIGN.md §4), shared by
// the kernel (src/gpu/kernels/tiered_gemm.h) and the planner, and unit-tested on the CPU.
//
// y[N, M] = x[N, K] . W[M, K]^T with W split along M: rows [0, m_host) live in pinned host memory,
// rows [m_host, M) in HBM. Each side is cut into m-tiles of bm rows (host tiles from row 0, HBM
// tiles from row m_host), N into n-tiles of bn tokens, and K into k-blocks of tile.bk() elements.
// The k-blocks are divided into k_splits contiguous ranges (split s covers
// [s * k_blocks / S, (s + 1) * k_blocks / S)); a work unit is (m-tile, n-tile, split). With S > 1
// the units of one output tile write fp32 partials and its last split (the reducer) waits for
// them and adds them in the fixed order s = 0..S-1, so every output element is the same sum in
// the same order whatever m_host is: k_splits depends only on (M, N, K, tile, SM count), never on
// m_host, so results are bitwise identical for every offload ratio (split invariance).
// CTAs: a persistent grid of host_ctas + hbm_ctas; CTA c < host_ctas is a host CTA for its whole
// life and takes host units c, c + host_ctas, ...; the others take HBM units the same way.
// Multicast (DESIGN.md §4, large N): with cluster = C > 1 the grid is launched in clusters of C
// CTAs and each side works as (its CTAs) / C clusters. A unit is then (m-tile, n-group, split),
// n-group g covering n-tiles [g * C, g * C + C): CTA rank r of the cluster computes n-tile
// g * C + r, and each CTA loads 1/C of the W tile and multicasts it to all C, so each host W tile
// crosses PCIe once per n-group instead of once per n-tile (host memory is not cached in L2); the
// HBM clusters of such a launch share their W tiles the same way (measured neither faster nor
// slower). Each output tile is still one CTA's k-loop in the same order, so the bits do not depend
// on C either.
// Congestion control (DESIGN.md §1): a host CTA keeps at most host_stages TMA stages in flight,
// and host_clusters * host_stages * host_stage_inflight_bytes stays under the measured in-flight
// cap on the bandwidth path (64-row tiles: host CTAs capped too); on the compute path every host
// cluster keeps at least one stage, so many host clusters may exceed it.
#pragma once

#include <cstdint>
#include <string>

#if defined(__CUDACC__)
#define DAK_HD __host__ __device__
#else
#define DAK_HD
#endif

// SMEM bytes of a tiered-GEMM CTA's ring (TieredGemmTile::max_stages). Defined on the compiler
// command line only for A/B builds of the ring depth (tools/device/session10.sh).
#ifndef DAK_TIERED_GEMM_RING_BYTES
#define DAK_TIERED_GEMM_RING_BYTES (200 * 1024)
#endif
// The same for the decode tiles (64 rows, bn 8 / 16) alone; by default the ring above. A ring small
// enough that two CTAs fit one SM (e.g. 110592: 3 stages at bn 8, 2 at bn 16) lets the next GEMM's
// CTAs become resident beside the previous GEMM's and start their W loads before it ends (the
// kernel then declares 2 CTAs per SM to the compiler); tools/device/session27_c.sh builds it.
#ifndef DAK_TIERED_GEMM_BW_RING_BYTES
#define DAK_TIERED_GEMM_BW_RING_BYTES DAK_TIERED_GEMM_RING_BYTES
#endif

namespace dak {

/// Tile shapes the kernel is compiled for: (bm, bn) in {(64, 8), (64, 16), (64, 32), (64, 64),
/// (128, 128), (128, 256)}. K is read in k-blocks of bk() elements, each made of 64-element atoms
/// (one 128-byte swizzle row of bf16): bk() = 256 (4 atoms, one 3D TMA box per operand and stage)
/// for the 64-row bandwidth tiles, 64 for the 128-row compute tiles. The 128 x 256 tile (two
/// consumer warpgroups of 64 x 256, cuBLAS's choice for large bf16 GEMMs on Hopper) reads 20 KiB
/// of SMEM per 128 x 256 x 16 step against 2 x 12 KiB for two 128 x 128 steps; its 128 fp32
/// accumulators per thread fit because the producer warpgroup gives its registers to the
/// consumers (setmaxnreg 40 / 232), and it runs without k-splits.
struct TieredGemmTile {
  int32_t bm = 64;
  int32_t bn = 8;
  static constexpr int32_t kAtomK = 64;  // K elements of one swizzle atom (128 bytes of bf16)
  /// K elements per pipeline stage. Wide stages for bm 64: one CTA's single producer thread issues
  /// one 32 KiB W box per stage instead of four 8 KiB ones; measured on the H200 (gemm_probe tma,
  /// no math) 34-72 GB/s per CTA with 8 KiB boxes, 106 GB/s with 32 KiB (docs/perf-notes.md,
  /// session 8), and a decode GEMM's partial last wave streams at one CTA's rate.
  DAK_HD constexpr int32_t bk() const { return bm == 64 ? 4 * kAtomK : kAtomK; }
  /// SMEM bytes of one pipeline stage: a bm x bk() W tile and a bn x bk() x tile, bf16.
  DAK_HD constexpr int64_t stage_bytes() const { return int64_t(bm + bn) * bk() * 2; }
  /// Stages that fit one CTA's SMEM (the kernel's ring depth): min(24, 200 KiB / stage_bytes):
  /// 5 for bn 8 and 16, 4 / 3 for bn 32 / 64, 6 for the 128 x 128 tile, 4 for 128 x 256. A bandwidth-path CTA
  /// streams about (bytes in flight) / (loaded latency): B_g needs ~192 KiB in flight per SM
  /// (hbm_stream's best configuration), so the small-N rings fill the SMEM (docs/perf-notes.md).
  DAK_HD constexpr int32_t max_stages() const {
    const int64_t ring =
        bm == 64 && bn <= 16 ? int64_t(DAK_TIERED_GEMM_BW_RING_BYTES) : int64_t(DAK_TIERED_GEMM_RING_BYTES);
    const int64_t s = ring / stage_bytes();
    return s > 24 ? 24 : int32_t(s);
  }
  bool operator==(const TieredGemmTile&) const = default;
};

/// Congestion-control inputs from the hardware profile (hardware_profile.h, host_link).
struct TieredGemmLinkLimits {
  int64_t inflight_cap_bytes = 1 << 20;  // host bytes in flight GPU-wide before HBM reads slow down (the
                                          //   h200-default profile's cap, measured by dak profile)
  int64_t min_inflight_bytes = 128 << 10;  // host bytes in flight that saturate the link (B_h)
  /// CTAs of the 128 x 128 kernel that can be resident at once when launched in clusters of 4
  /// (a cluster needs 4 free SMs of one GPC; the GPU layer asks the driver:
  /// tiered_gemm_cluster_limits(); 120 of 132 on the H200); 0: every SM. Clusters of 2 are taken
  /// to fit every SM (a TPC holds two SMs).
  int64_t cluster4_ctas = 0;
  /// Largest multicast cluster plan_tiered_gemm may choose (1 turns multicast off).
  int32_t max_cluster = 4;
  /// Compute tile (N > 64) plan_tiered_gemm takes: 0 chooses by padding and cost (the default,
  /// choose_tiered_gemm_tile); 128 or 256 forces 128 x 128 or 128 x 256 (A/B measurements, tests).
  int32_t compute_bn = 0;

  /// CTAs of a launch in clusters of `cluster` that can run at once on `sm_count` SMs: sm_count
  /// (capped by cluster4_ctas for clusters of 4), rounded down to whole clusters.
  DAK_HD int64_t grid_ctas(int64_t cluster, int64_t sm_count) const {
    const int64_t n = cluster == 4 && cluster4_ctas > 0 && cluster4_ctas < sm_count ? cluster4_ctas : sm_count;
    return n / cluster * cluster;
  }
};

/// A complete launch description. Built by plan_tiered_gemm(); `dak profile` may override the
/// congestion fields (host_ctas, host_stages, hbm_stages) per shape.
struct TieredGemmSchedule {
  // Problem.
  int64_t M = 0, N = 0, K = 0;
  int64_t m_host = 0;  // rows [0, m_host) of W in host memory
  // Tiling.
  TieredGemmTile tile;
  int32_t k_splits = 1;  // S, from (M, N, K, tile, sm_count) only
  int32_t k_chunks = 1;  // P > 1 only with k_splits == 1 on the 64 x 8 / 64 x 16 tiles, from (M, N, K,
                         //   tile, sm_count) only (choose_tiered_gemm_k_chunks): every HBM unit sums
                         //   its k-blocks in P chunks (split_begin(c, P)) exactly as P k-splits would
                         //   be summed (fp32, from 0.0f, in chunk order), so the host side may split
                         //   each of its units P ways over P CTAs with the same bits: a few host
                         //   m-tiles get the read streams the loaded link needs
  // Launch (congestion control).
  int32_t host_ctas = 0;    // CTAs that only read host tiles
  int32_t hbm_ctas = 0;     // CTAs that only read HBM tiles
  int32_t host_stages = 1;  // TMA stages in flight per host CTA (<= tile.max_stages())
  int32_t hbm_stages = 1;   // TMA stages in flight per HBM CTA (<= tile.max_stages())
  int32_t cluster = 1;      // 1, 2 or 4: CTAs per cluster; > 1 only for the 128-row tiles: the CTAs
                            //   of a cluster share each W tile by TMA multicast

  /// k-blocks of tile.bk() elements (the last one may be partial: TMA zero-fills past K).
  DAK_HD int64_t k_blocks() const { return (K + tile.bk() - 1) / tile.bk(); }
  DAK_HD int64_t n_tiles() const { return (N + tile.bn - 1) / tile.bn; }
  DAK_HD int64_t host_m_tiles() const { return (m_host + tile.bm - 1) / tile.bm; }
  DAK_HD int64_t hbm_m_tiles() const { return (M - m_host + tile.bm - 1) / tile.bm; }
  /// Output tiles the workspace must hold counters for, whatever m_host is: ceil(M / bm) + 1 m-tiles.
  DAK_HD int64_t max_output_tiles() const { return ((M + tile.bm - 1) / tile.bm + 1) * n_tiles(); }
  /// n-groups: ceil(n_tiles / cluster) (n_tiles when cluster == 1).
  DAK_HD int64_t n_groups() const { return (n_tiles() + cluster - 1) / cluster; }
  /// K splits of one side's units: k_chunks on the host side when k_chunks > 1, else k_splits.
  DAK_HD int64_t side_splits(bool host_side) const { return host_side && k_chunks > 1 ? k_chunks : k_splits; }
  /// Partial slots per output tile in the workspace: the most splits either side has.
  DAK_HD int64_t partial_slots() const { return k_splits > k_chunks ? k_splits : k_chunks; }
  /// Units of each side, each computed by one cluster (one CTA when cluster == 1).
  DAK_HD int64_t host_units() const { return host_m_tiles() * n_groups() * side_splits(true); }
  DAK_HD int64_t hbm_units() const { return hbm_m_tiles() * n_groups() * side_splits(false); }
  /// Clusters of each side (the workers of its units).
  DAK_HD int64_t host_clusters() const { return host_ctas / cluster; }
  DAK_HD int64_t hbm_clusters() const { return hbm_ctas / cluster; }
  /// First k-block of split s of `splits` (s in [0, splits]; s == splits gives k_blocks()): the
  /// k-split ranges (splits = side_splits) and the HBM units' accumulation chunks (splits = k_chunks).
  DAK_HD int64_t split_begin(int64_t s, int64_t splits) const { return s * k_blocks() / splits; }

  /// Unit u of one side -> (m-tile within the side, n-group, split); CTA rank r of the cluster
  /// takes n-tile n_group * cluster + r (the n-tile itself when cluster == 1). Splits of one
  /// output tile are consecutive, so they run at the same time on neighbouring CTAs.
  struct Unit {
    int64_t m_tile, n_group, split;
  };
  DAK_HD Unit unit(int64_t u, bool host_side) const {
    const int64_t splits = side_splits(host_side);
    const int64_t s = u % splits;
    const int64_t t = u / splits;
    return Unit{t / n_groups(), t % n_groups(), s};
  }
  /// Index of an output tile in the workspace: host tiles first, then HBM tiles.
  DAK_HD int64_t output_tile(bool host_side, int64_t m_tile, int64_t n_tile) const {
    return ((host_side ? 0 : host_m_tiles()) + m_tile) * n_tiles() + n_tile;
  }

  /// Bytes of the workspace's counter part, the same for every schedule: one int32 per output tile
  /// of a k-split schedule (at most kMaxSplitTiles), then the fp32 partials. A fixed size, because
  /// one workspace serves every GEMM of a forward pass in turn: with a per-schedule size, the
  /// partials of one GEMM lay over the counters of a GEMM with more tiles, whose reducer then read
  /// partial floats as counts (a hang or an early reduction; found in session 10 when o_proj and
  /// down first split in the engine).
  static constexpr int64_t kMaxSplitTiles = 16384;
  DAK_HD static constexpr int64_t counter_bytes() { return kMaxSplitTiles * 4; }
  /// Bytes of HBM workspace the kernel needs: counter_bytes(), plus fp32 partials
  /// [output tiles][partial_slots()][bm * bn] when k_splits or k_chunks > 1. Independent of m_host.
  int64_t workspace_bytes() const;

  /// Host bytes one host cluster keeps in flight per stage: the W tile (bm x bk bf16, loaded once
  /// per cluster by multicast) when cluster > 1, else the whole stage (W and x tile).
  DAK_HD int64_t host_stage_inflight_bytes() const {
    return cluster > 1 ? int64_t(tile.bm) * tile.bk() * 2 : tile.stage_bytes();
  }

  /// Throws dak::Error (naming the field) for an inconsistent schedule: sizes, a tile the kernel
  /// is not compiled for, k_splits outside [1, k_blocks], a side with units but no CTA, stages
  /// outside [1, max_stages], a cluster other than 1 / 2 / 4, a cluster > 1 on a 64-row tile,
  /// or CTA counts that are not whole clusters.
  void validate() const;

  std::string to_string() const;
};

/// Host rows of an M-row weight at offload fraction x in [0, 1], in whole units of `unit_rows` rows
/// as the planner places them (StepShape::tile_rows, 128): the nearest number of units to
/// x * M / unit_rows (halves away from zero), at least one unit when x > 0, at most M. Used by
/// `dak bench gemm` (--host-rows tile) and `dak profile`'s GEMM sweep.
int64_t tiered_gemm_host_rows(double x, int64_t M, int64_t unit_rows);
/// Tile of an M x K weight at N tokens on `sm_count` SMs (any m_host: the tile never depends on
/// it). N <= 64 -> bm 64 and the smallest bn in {8, 16, 32, 64} >= N (the bandwidth path: the W
/// tile dominates SMEM traffic). N > 64 (the compute path) -> (128, 256) where N rounded up to
/// 128 is a multiple of 256 (129-256, 385-512, ...: no more padding than bn 128) and its best
/// k-split costs no more than (128, 128)'s (tiered_gemm_compute_cost); else (128, 128). On 132
/// SMs at N = 512: every Llama-2-70B linear but qkv (10240 x 8192) and Llama-2-7B's gate_up
/// (22016 x 4096) are wide, Llama-2-7B's qkv, o and down narrow; at N = 256 4096 x 4096 runs narrow
/// in 2 k-splits, 12288 x 4096 wide (96 units: one round). compute_bn 128 or
/// 256 (TieredGemmLinkLimits) forces that tile for every N > 64.
TieredGemmTile choose_tiered_gemm_tile(int64_t M, int64_t N, int64_t K, int64_t sm_count, int32_t compute_bn = 0);

/// Units of a compute-path launch (N > 64) that k-splits may create, per SM: the split's fp32
/// partials need workspace (up to 128 KiB per unit of the 128 x 256 tile), and past a few waves a
/// split no longer shortens the last one.
constexpr int64_t kComputeSplitUnits = 3;

/// Estimated time of an all-HBM compute-path launch (N > 64) of `tile` with S k-splits on
/// sm_count SMs, in 128 x 128 k-blocks (~0.39 us each on the H200): rounds of one unit per SM
/// (ceil(m-tiles x n-tiles x S / sm_count)) times a unit's time: its k-blocks (ceil(K / 64 / S)),
/// 1.84 each on the 128 x 256 tile, plus the round's epilogue (15 on 128 x 128, 4 on 128 x 256),
/// plus, when S > 1, the split reduction (8 / 37: the partial's write, the reducer's wait and
/// read). Fitted on the H200 to `gemm_probe tiles` (random inputs, 25 points within 10 %) and
/// checked on `dak bench gemm`'s 8-layer stacks (docs/perf-notes.md session 19).
double tiered_gemm_compute_cost(int64_t M, int64_t N, int64_t K, const TieredGemmTile& tile, int64_t S,
                                int64_t sm_count);

/// Cost of one round of a compute-path launch (N > 64): one unit of `tile` (bm x bn output tile over
/// K / S) per CTA, in 128 x 128 k-blocks (tiered_gemm_compute_cost's unit): its k-blocks, the
/// round's epilogue, and the split reduction when S > 1.
double tiered_gemm_round_cost(int64_t K, const TieredGemmTile& tile, int64_t S);

/// Host bytes in flight the link needs to run at B_h while the HBM side of a tiered GEMM runs
/// compute-bound tiles. Under that load a host read takes ~12-14 us (measured on the H200,
/// Llama-2-7B's linears at N = 512 with one host m-tile each, docs/perf-notes.md session 20: one
/// multicast cluster with 96 KiB of W in flight moved 6.7 GB/s, two with 192 KiB 15.7 GB/s), so
/// B_h (51 GB/s) needs ~600 KB in flight; the probe's best host-read configuration holds 512 KiB.
/// Below it the host side's time is its bytes in flight over that latency, not its bytes over B_h.
inline constexpr int64_t kLoadedHostInflightBytes = 512 << 10;

/// Multicast cluster of a tiered GEMM with m_host host rows (M x K weight, N tokens, sm_count SMs):
/// 4 when the 128-row tile of N > 64 (choose_tiered_gemm_tile) has at least 4 n-tiles, 2 for 2 or
/// 3 n-tiles, else 1; never above max_cluster (rounded down to 1, 2 or 4). A 4 becomes 2 when
/// the host read streams of clusters of 2 (one per host m-tile and pair of n-tiles, a ring of W
/// tiles each) keep at most kLoadedHostInflightBytes in flight: there the host side is bound by
/// its bytes in flight, so reading each host tile twice costs it nothing, and clusters of 2 fit
/// every SM where clusters of 4 fit 120 of 132 (measured: Llama-2-7B's 8-layer stack at N = 512,
/// 0.5 % host rows, 455-489 us per layer with clusters of 2 against 515-519 with 4; at 10 %, 16
/// host m-tiles, 1294-1304 against 821-824). plan_tiered_gemm and the planner's cost model both
/// use it.
int32_t tiered_gemm_multicast_cluster(int64_t M, int64_t N, int64_t K, int64_t m_host, int64_t sm_count,
                                      int64_t max_cluster, int32_t compute_bn = 0);

/// The most HBM workspace (TieredGemmSchedule::workspace_bytes) a GEMM of an M x K weight needs at
/// any N in [1, max_n] on sm_count SMs (with compute_bn as in TieredGemmLinkLimits): the engine
/// allocates one workspace for every token count a pass may have. Bytes.
int64_t tiered_gemm_workspace_bound(int64_t M, int64_t K, int64_t max_n, int64_t sm_count, int32_t compute_bn = 0);

/// Estimated time of an all-HBM run of `tiles` output tiles of `k_blocks` k-blocks each, cut into
/// S k-splits, on a persistent grid of min(tiles * S, sm_count) CTAs, in k-block loads of one
/// unloaded CTA (a 64 x 256 bf16 W stage, ~0.34 us at ~94 GB/s on the H200). CTA c takes units c,
/// c + ctas, ...; in round r every CTA that still has a unit streams ceil(k_blocks / S) k-blocks at
///   min(1 / (1 + 0.0128 * busy), 0.36 * sm_count / busy)
/// of the unloaded rate: a CTA's ring (~180 KiB in flight) gets less per CTA as more CTAs load HBM
/// (loaded latency; measured ~52 GB/s per CTA with 64 CTAs streaming), and all of them together
/// get at most B_g (0.36 = (B_g / sm_count) / one CTA's rate). So 64 busy CTAs reach ~3.3 of
/// the 4.6 TB/s, and splitting a 64-tile GEMM over 128 CTAs pays. Plus the split epilogue when
/// S > 1 (fp32 partials, counter, the reducer's sum): 5 loads for a CTA's last unit, 2 for each
/// other one. Constants fitted to bench/tiered_gemm_probe.cu's two-layer trace on the H200
/// (docs/perf-notes.md, session 10).
double tiered_gemm_split_cost(int64_t tiles, int64_t k_blocks, int64_t S, int64_t sm_count);

/// Accumulation chunks (TieredGemmSchedule::k_chunks) of a shape: kTieredGemmKChunks when the
/// shape runs unsplit (choose_tiered_gemm_k_splits == 1) on a 64 x 8 or 64 x 16 tile with at least
/// 8 k-blocks of 256 per chunk (32 k-blocks: K > 7936), else 1. Why: a host m-tile is read by one CTA per split, and
/// one CTA's ring (5 stages, 180 KiB) keeps too few bytes in flight for the link while the HBM
/// side loads the memory system (a host read then takes ~8-14 us): Llama-2-70B's down (K = 28672)
/// with 128 host rows read them at ~41 GB/s of 51 on two CTAs (docs/perf-notes.md, session 36).
/// Depends only on the arguments, so it is the same for every m_host (split invariance).
inline constexpr int32_t kTieredGemmKChunks = 4;
int32_t choose_tiered_gemm_k_chunks(int64_t M, int64_t N, int64_t K, const TieredGemmTile& tile, int64_t sm_count);

/// k_splits in [1, min(16, k_blocks / 2)] minimizing tiered_gemm_split_cost (ties: the smallest S);
/// when N > 64 (the 128-row tiles) the S in [1, min(8, k_blocks / 8)] minimizing
/// tiered_gemm_compute_cost, taken only if it saves more than 3 % and makes at most
/// kComputeSplitUnits x sm_count units. On the Llama-2-7B decode shapes at N = 8 on 132
/// SMs: S = 2 for o_proj and down (64 m-tiles each), 1 for qkv, gate_up and the LM head; no split
/// for a shape with more than TieredGemmSchedule::kMaxSplitTiles output tiles. Depends only on the
/// arguments, so it is the same for every m_host (split invariance).
int32_t choose_tiered_gemm_k_splits(int64_t M, int64_t N, int64_t K, const TieredGemmTile& tile, int64_t sm_count);

/// The default schedule for a shape and host row count on `sm_count` SMs:
/// - k_splits and k_chunks from the shape (choose_tiered_gemm_k_splits / _k_chunks);
/// - no host rows: every SM an HBM CTA with all stages of the ring in flight;
/// - host rows: host CTAs = max(enough to keep min_inflight_bytes in flight with up to 4 stages
///   each, the host share of the compute ceil(m_host / M * grid)), on the bandwidth path (64-row
///   tiles) no more than inflight_cap_bytes / host_stage_inflight_bytes(), capped by the host units and
///   by grid - cluster when HBM rows remain (grid: sm_count, or the CTAs co-resident in
///   clusters); stages per host CTA = the most that keep
///   host_clusters * stages * host_stage_inflight_bytes() <= inflight_cap_bytes (at least 1);
///   the remaining SMs are HBM CTAs (no more than the HBM units). With k_chunks > 1 the host side
///   takes one CTA per host unit up to inflight_cap_bytes / (3 stages), no more than leave the HBM
///   side the rounds it has beside the unsplit units' CTAs, in rounds of equal unit counts (128
///   host rows of a 64 x 8 tile: 8 units on 8 CTAs of 3 stages where 112 HBM units leave 20 SMs
///   free, on 4 CTAs of 5 stages where 126 HBM units leave 6).
/// - multicast: with a 128-row tile (N > 64), host rows and at least 2 n-tiles, cluster = 4
///   when n_tiles >= 4, else 2 (capped by limits.max_cluster); host CTAs are rounded up to whole
///   clusters (at most one cluster per host unit), HBM CTAs down to whole clusters, and with
///   clusters of 4 the grid is capped at limits.cluster4_ctas (co-residency). Without host rows
///   no clusters: on the H200, clusters of 2 sharing HBM W tiles made the all-HBM GEMM 5 % slower
///   (Llama-2-7B gate_up, N = 512: 172 vs 164 us; docs/perf-notes.md).
/// Throws dak::Error for non-positive sizes, m_host outside [0, M], K not a multiple of 8 (TMA
/// needs 16-byte row pitches) or sm_count < 1.
TieredGemmSchedule plan_tiered_gemm(int64_t M, int64_t N, int64_t K, int64_t m_host, int64_t sm_count,
                                    const TieredGemmLinkLimits& limits = {});

/// `s` with the congestion parameters replaced (dak profile's sweep, dak bench gemm's
/// --congestion): `host_ctas` host CTAs (rounded up to whole clusters of `cluster`
/// CTAs) with `host_stages` stages each; the other CTAs of `grid_ctas` (whole clusters, up to the
/// HBM units) become HBM CTAs. cluster 0 keeps s.cluster. Throws dak::Error (from validate(), or
/// when no CTA is left for the HBM rows) for a combination the kernel cannot run.
TieredGemmSchedule with_congestion(TieredGemmSchedule s, int64_t host_ctas, int32_t host_stages, int32_t cluster,
                                   int64_t grid_ctas);

}  // namespace dak
