// The tiered GEMM kernel template (operands, pipeline and invariants: tiered_gemm.h; work
// decomposition: core/tiered_gemm_schedule.h). Included only by the tiered_gemm*.cu files, which
// instantiate it for the compiled tiles.
//
// CTA = 1 producer warpgroup (warp 0 issues TMA; the rest idle; on the 128 x 256 tile it gives its
// registers to the consumers by setmaxnreg) + kMathGroups math groups of kBm / 64 consumer
// warpgroups each. With two math groups (the 64-row tiles of the decode path) the groups
// take the CTA's units in turn ("ping-pong"): their main loops run one after the other in ring
// order, handed over by the `turn` mbarriers, so one group's epilogue (the split reduction's
// fence, counter and partial reads, each a round trip through a saturated memory system) overlaps
// the other group's main loop instead of stalling the ring. The split reduction has a fixed
// reducer per tile (its last split), so only it waits, and it reads the partials in batches.
// SMEM: sW [kBm, kBkStage, kStages] and sX [kBn, kBkStage, kStages] bf16, 128-byte swizzled K-major
// (the wgmma operand layout: kAtoms blocks of 64 K-columns per stage, each [rows, 64]), one "full"
// and one "empty" mbarrier per stage, one "turn" mbarrier per math group. The 128-row tiles
// (kAtoms = 1) fill a stage with CuTe's 2D TMA copies; the 64-row tiles (wide stages, kAtoms = 4,
// TieredGemmTile::bk()) with one 3D TMA box per operand, over a [K / 64, rows, 64] view of the
// operand (the last stage's atoms past K are zero-filled by TMA, so the math is the same
// unconditional wgmma sequence for every stage: no branch around wgmma, which ptxas would
// serialize), or, when K is not a multiple of 64, with one 2D box per atom. The ring is kStages
// deep; a CTA uses only its side's `stages` (<= kStages) of it, which caps the TMA bytes it has in
// flight (congestion control on the host side).
// Consumers keep one k-block of wgmma in flight while they wait for the next stage (a stage is
// released once the wgmma after it have been issued and it has completed); a one-stage ring waits
// for each k-block's wgmma before releasing its stage.
// Multicast (schedule.cluster = C > 1, 128-row tiles): the grid runs in clusters of C CTAs (host
// clusters first). In a cluster, CTA rank r loads rows [r * kBm / C, (r + 1) * kBm / C) of each W
// tile of its side with a multicast TMA into the same stage of all C CTAs (one PCIe or L2 read per
// tile and n-group) and its own x tile (a slice entirely past the side's last row loads rows of x
// instead: never stored, and never a TMA box out of bounds); each CTA's "full" barrier expects the
// whole stage, its "empty" barrier counts the releases of the consumers of all C CTAs (a slot is
// refilled only when every CTA that receives the multicast is done with it), consumers arrive on
// the empty barriers of every CTA of the cluster, and a producer drains its ring (waits for the
// last releases) before exiting, so no CTA leaves while a peer may still signal it. Barriers are
// initialized cluster-wide before any use.
#pragma once

#include <cuda.h>

#include <cuda/atomic>
#include <cuda/ptx>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <type_traits>
// NOTE: cute/tensor.hpp must come before the other CuTe headers.
#include <cute/tensor.hpp>
#include <cute/atom/copy_atom.hpp>
#include <cute/atom/mma_atom.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/cuda_host_adapter.hpp>
#include <cutlass/numeric_types.h>

#include "core/env.h"
#include "core/error.h"
#include "core/hopper_limits.h"
#include "core/rope_layout.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels/activation.cuh"
#include "gpu/kernels/rope_pair.cuh"
#include "gpu/kernels/tiered_gemm.h"
#include "gpu/launch.h"

namespace dak::gpu::tiered_gemm_detail {

using namespace cute;
using Element = cutlass::bfloat16_t;

constexpr int kAtomK = TieredGemmTile::kAtomK;  // K elements of one swizzle atom

template <int kBm, int kBn>
struct Config {
  static constexpr int kConsumerWarpgroups = kBm / 64;  // per math group (one wgmma tile)
  static constexpr int kMathGroups = kBm == 64 ? 2 : 1;
  static constexpr int kGroupThreads = 128 * kConsumerWarpgroups;
  static constexpr int kThreads = 128 + kMathGroups * kGroupThreads;
  static constexpr int kStages = TieredGemmTile{kBm, kBn}.max_stages();
  static constexpr int kBkStage = TieredGemmTile{kBm, kBn}.bk();  // K elements per stage
  static constexpr int kAtoms = kBkStage / kAtomK;                // swizzle atoms per stage row
  static_assert(kAtoms == 1 || kBm == 64, "wide stages are built for the 64-row tiles (no multicast)");
  using SmemLayoutW = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<Element>{},
                                             make_shape(Int<kBm>{}, Int<kBkStage>{}, Int<kStages>{})));
  using SmemLayoutX = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<Element>{},
                                             make_shape(Int<kBn>{}, Int<kBkStage>{}, Int<kStages>{})));
  // One atom column of a stage: the box of CuTe's 2D TMA copies (kAtoms == 1).
  using SmemLayoutWAtom = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<Element>{},
                                                 make_shape(Int<kBm>{}, Int<kAtomK>{})));
  using SmemLayoutXAtom = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<Element>{},
                                                 make_shape(Int<kBn>{}, Int<kAtomK>{})));
  using MmaOp = decltype(GMMA::ss_op_selector<Element, Element, float, Shape<_64, Int<kBn>, Int<kAtomK>>,
                                              GMMA::Major::K, GMMA::Major::K>());
  using TiledMma = decltype(make_tiled_mma(MmaOp{}, Layout<Shape<Int<kConsumerWarpgroups>, _1, _1>>{}));
#ifdef DAK_PROBE_NO_X
  // Diagnostics only (bench/tiered_gemm_probe.cu built by tools/device/session26_c.sh): x is never
  // loaded, so the results are garbage; the time says what the x tiles' L2 -> SMEM traffic costs.
  static constexpr uint32_t kStageTxBytes = uint32_t(kBm * kBkStage * sizeof(Element));
#else
  static constexpr uint32_t kStageTxBytes = uint32_t((kBm + kBn) * kBkStage * sizeof(Element));
#endif
  // Independent fp32 accumulators per consumer thread on the wide stages: the wgmma of a stage go
  // to them in turn (k-step j to accumulator j % kAccumulators), so consecutive wgmma do not wait
  // for each other's result; they are added in a fixed order after the unit's main loop. Measured
  // on the H200 (tools/device/session9_consumer.sh, one 64 x 16384 tile): 1 accumulator 27.3 us,
  // 4 (bn <= 16) with one stage of wgmma kept in flight 22.2 us; the full-GPU decode shapes are
  // unchanged (HBM-bound).
  static constexpr int kAccumulators = kAtoms == 1 ? 1 : kBn <= 16 ? 4 : 2;
  // The 128 x 256 tile: 128 fp32 accumulators per consumer thread do not fit the 168 registers a
  // 384-thread CTA gives every thread, so the producer warpgroup (one thread issues TMA) drops to
  // 40 and the consumers rise to 232 (setmaxnreg; 128 * 40 + 256 * 232 <= 64 Ki, as CUTLASS's
  // warp-specialized kernels do).
  static constexpr bool kRegisterRealloc = kBn > 128;
  static_assert(kBn <= 256, "TMA boxes and wgmma take at most 256 tokens");

  // The 128-row tiles' bf16 epilogue stages each consumer warp's 16 x kBn slab of y through SMEM
  // (128 columns at a time) so that y is written in 16-byte vectors, a whole 32-byte sector per
  // token: a thread's accumulators are adjacent tokens (rows of y), never adjacent W rows (columns
  // of y), so the direct stores wrote 16-byte pieces of 4 rows per warp instruction. Measured on the
  // H200 with those stores predicated off (docs/perf-notes.md session 20): 2-10 % of the GEMM.
  static constexpr int kStagedCols = 128;                     // tokens per staging pass
  static constexpr int kWarpStageElems = 16 * kStagedCols;    // one warp's slab: [128 tokens][16 rows]
  static constexpr int kStageYElems = kMathGroups == 1 ? kConsumerWarpgroups * 4 * kWarpStageElems : 8;

  // The RMSNorm epilogues (TieredGemmNormOut / NormIn; 64-row tiles only): each warp's per-token
  // sums of resid^2 over its 16 rows per math group, and the norm-in GEMM's 1 / rms per token.
  static constexpr int kNormElems = kBm == 64 ? kMathGroups * 4 * kBn : 1;
  static constexpr int kRinvElems = kBm == 64 ? kBn : 1;
  // Norm-out: the tile's residual and norm weight are loaded before the unit's main loop (their
  // L2 round trip off the epilogue) up to this many tokens per tile (registers: 2 per value).
  static constexpr bool kNormPrefetch = kBn <= 32;
  // Accumulation chunks (TieredGemmSchedule::k_chunks) are compiled for the 64 x 8 / 64 x 16 tiles
  // only: kBm * kBn / 128 more fp32 registers per thread (4 / 8).
  static constexpr bool kChunked = kBm == 64 && kBn <= 16;

  struct alignas(1024) SharedStorage {
    alignas(1024) ArrayEngine<Element, cosize_v<SmemLayoutW>> w;
    alignas(1024) ArrayEngine<Element, cosize_v<SmemLayoutX>> x;
    alignas(128) __nv_bfloat16 y_stage[kStageYElems];
    float norm_red[kNormElems];  // [group][warp][token]
    float norm_rinv[kRinvElems]; // [token]
    uint64_t rinv_ready;         // norm_rinv is written (producer warp 1, norm-in only)
    uint64_t full[kStages];
    uint64_t empty[kStages];
    uint64_t turn[kMathGroups];  // group g may start its next main loop (kMathGroups > 1)
  };
  static constexpr size_t kSmemBytes = sizeof(SharedStorage) + 1024;  // + alignment slack
  // CTAs per SM declared to the compiler (__launch_bounds__): 2 where two fit the SM's SMEM (a
  // bandwidth ring built small, DAK_TIERED_GEMM_BW_RING_BYTES), so that registers allow the next
  // GEMM's CTA beside this one; else 1 (the default rings). The test counts 1 KiB less than the SM
  // has (kSmemPerCtaMaxBytes, not kSmemPerSmBytes), as it did when the bandwidth rings were measured.
  static constexpr int kMinBlocksPerSm =
      2 * (int64_t(kSmemBytes) + hopper::kSmemReservedPerCtaBytes) <= hopper::kSmemPerCtaMaxBytes ? 2 : 1;

  // TMA atoms for W (either side; the same type, row count is a runtime value) and x.
  static auto make_tma_w(const Element* ptr, int rows, int K) {
    auto g = make_tensor(make_gmem_ptr(ptr), make_shape(rows, K), make_stride(int64_t(K), Int<1>{}));
    return make_tma_atom(SM90_TMA_LOAD{}, g, SmemLayoutWAtom{}, make_shape(Int<kBm>{}, Int<kAtomK>{}));
  }
  static auto make_tma_x(const Element* ptr, int rows, int K, int64_t ld) {
    auto g = make_tensor(make_gmem_ptr(ptr), make_shape(rows, K), make_stride(ld, Int<1>{}));
    return make_tma_atom(SM90_TMA_LOAD{}, g, SmemLayoutXAtom{}, make_shape(Int<kBn>{}, Int<kAtomK>{}));
  }
  using TmaW = decltype(make_tma_w(nullptr, 1, 8));
  using TmaX = decltype(make_tma_x(nullptr, 1, 8, 8));
};

template <int kBm, int kBn>
struct KernelParams {
  using Cfg = Config<kBm, kBn>;
  typename Cfg::TmaW tma_w_host;  // [m_host, K] host rows of W (unused without host units)
  typename Cfg::TmaW tma_w_hbm;   // [M - m_host, K] HBM rows of W (unused without HBM units)
  typename Cfg::TmaX tma_x;       // [N, K] activations, HBM
  CUtensorMap tma_w_host_slice;   // [m_host, K] host rows, box kBm / cluster x 64 (multicast; cluster > 1)
  CUtensorMap tma_w_hbm_slice;    // [M - m_host, K] HBM rows, the same box
  CUtensorMap tma_x_filler;       // [N, K] rows of x, the same box: loaded in place of a W slice past the last row
  CUtensorMap w_host_wide;        // wide stages (kAtoms > 1): [K / 64, m_host, 64] host rows, box 4 x kBm x 64
  CUtensorMap w_hbm_wide;         //   [K / 64, M - m_host, 64] HBM rows, the same box
  CUtensorMap x_wide;             //   [K / 64, N, 64] activations, box 4 x kBn x 64
  bool atom_boxes;                //   K % 64 != 0: the three maps are 2D [rows, K] with a [rows, 64]
                                  //   box, loaded once per atom
  TieredGemmSchedule sched;
  const __nv_bfloat16* g_bias;    // [M] or null
  void* g_y;                      // [N, ldy] bf16 or fp32
  int64_t ldy;
  TieredGemmOut out;
  bool relu;
  int32_t* g_counters;            // [kMaxSplitTiles] zero between runs (split partials only)
  float* g_partials;              // [max_output_tiles, partial_slots(), kBm * kBn] (k_splits or k_chunks > 1)
  TieredGemmNormOut norm_out;     // g_residual non-null: the norm-out epilogue (64-row tiles)
  TieredGemmNormIn norm_in;       // g_sumsq non-null: the norm-in epilogue (64-row tiles, one n-tile)
  TieredGemmRopeOut rope;         // g_positions non-null: the RoPE + KV append epilogue (64-row tiles)
  TieredGemmActOut act_out;       // g_out non-null: the gated activation epilogue (64-row tiles)
  uint64_t* g_trace;              // [grid, kGemmTraceFields] timestamps (diagnostics) or null
  TMA::CacheHintSm90 w_hint;      // L2 eviction policy of the W loads (weight_cache_hint())
  int32_t early_stages;           // stages an HBM CTA requests before waiting for the previous grid
};


__device__ inline uint64_t trace_now() { return cuda::ptx::get_sreg_globaltimer(); }

__device__ inline void wait_parity(uint64_t* bar, uint32_t parity) {
  while (!cuda::ptx::mbarrier_try_wait_parity(bar, parity)) {
  }
}

// L2 eviction policy of the W tiles' TMA loads (KernelParams::w_hint). A decode step streams every
// weight once (13 GB for Llama-2-7B) through the 60 MB L2; with the default policy those lines push
// out what the step's small kernels re-read (the fp32 residual stream, norm weights, this step's
// activations, the KV cache at short contexts), so each of them waits for HBM behind the next
// GEMM's W prefetch. EVICT_FIRST makes the streamed W lines the first to go, where each W tile is
// read once per launch (one n-tile: N <= bn); with several n-tiles (N > 64 without multicast) the
// CTAs of the other n-tiles re-read it from L2, so it keeps the default (so do multicast launches).
// Measured on the H200 (Llama-2-7B decode, docs/perf-notes.md session 13, same call): TPOT 3.893 ->
// 3.743 ms at batch 1, 4.077 -> 3.934 ms at batch 8; the offload points unchanged.
// DAK_W_EVICT_NORMAL=1 in the environment keeps the default policy everywhere (for A/B
// measurements, as DAK_NO_PDL).
inline TMA::CacheHintSm90 weight_cache_hint(const TieredGemmSchedule& s) {
  static const bool normal = env_flag("DAK_W_EVICT_NORMAL", false);
  return normal || s.n_tiles() > 1 ? TMA::CacheHintSm90::EVICT_NORMAL : TMA::CacheHintSm90::EVICT_FIRST;
}

// W stages an HBM CTA of the 64-row (decode) tiles requests before waiting for the previous grid
// (3 of its 5-stage ring at N <= 16: 96 KiB of W, ~13 MB over 132 CTAs). The early requests of
// every CTA reach HBM together as the previous kernels finish; the whole ring (~24 MB, ~5 us of
// HBM time) queued the loads of the small kernels still running (norm, RoPE, attention) behind it.
// Measured on the H200 (Llama-2-7B decode, docs/perf-notes.md session 14, same call): ring 3.791 /
// 3.999 ms at batch 1 / 8, 1 stage 3.821 / 3.927, 2: 3.750 / 3.880, 3: 3.700 / 3.872, 4: 3.724 /
// 3.897. The 128-row tiles (N > 64) keep its whole ring (unmeasured there). Host CTAs always
// request their whole ring.
constexpr int kEarlyWideStages = 3;

/// Stores one output element of y (row gm < M, token n < N): bias, ReLU, dtype.
template <class Params>
__device__ inline void store_y(const Params& p, int64_t n, int64_t gm, float v) {
  if (p.g_bias) v += __bfloat162float(p.g_bias[gm]);
  if (p.relu) v = fmaxf(v, 0.0f);
  if (p.out == TieredGemmOut::kF32) {
    static_cast<float*>(p.g_y)[n * p.ldy + gm] = v;
  } else {
    static_cast<__nv_bfloat16*>(p.g_y)[n * p.ldy + gm] = __float2bfloat16(v);
  }
}

/// Norm-out (TieredGemmNormOut): loads the residual and the norm weight of the values of a 64-row
/// output tile (rows [row0, row0 + 64) of y, `rows_left` inside the side, tokens from n0) that this
/// consumer thread holds (`tCcC`), into `resid` / `weight` (kFrag each; out of range: 0 / 1).
template <class Params, class Coord, int kN>
__device__ inline void norm_out_load(const Params& p, const Coord& tCcC, int64_t row0, int64_t rows_left, int64_t n0,
                                     float (&resid)[kN], float (&weight)[kN]) {
  const TieredGemmSchedule& s = p.sched;
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    const int64_t m = get<0>(tCcC(i)), n = n0 + get<1>(tCcC(i));
    const bool in = m < rows_left && n < s.N;
    resid[i] = in ? __ldcg(&p.norm_out.g_residual[n * s.M + row0 + m]) : 0.0f;
    weight[i] = in && p.norm_out.g_weight ? __bfloat162float(p.norm_out.g_weight[row0 + m]) : 1.0f;
  }
}

/// The norm-out epilogue of one 64-row output tile (TieredGemmNormOut; rows [row0, row0 + 64) of
/// y, `rows_left` of them inside the side, tokens from n0) by one math group of 128 threads
/// (`ctid`), with the tile's residual and weight from norm_out_load; `red`: the group's [4 warps][kBn]
/// floats of SMEM. wgmma's fp32 C fragment of a 64 x kBn tile: warp w holds rows 16 w + lane / 4
/// and + 8, value i = c + 2 r + 4 j is token 8 j + 2 (lane % 4) + c of row + 8 r, so values i and
/// i + 2 are one token's two rows. A token's sum of squares: fmaf over the thread's two rows (row,
/// then row + 8), then the 8 lanes that share lane % 4 (xor butterfly over lanes 4, 8, 16: every
/// lane ends with the same bits), then the 4 warps in order. rms_norm_out (kernels/norm.h) computes
/// the same bits in its own launch, for the tiles this epilogue cannot serve.
template <int kBn, class Params, class Acc, class Coord, int kN>
__device__ inline void norm_out_epilogue(const Params& p, const Acc& acc, const Coord& tCcC, const float (&resid)[kN],
                                         const float (&weight)[kN], float* red, int ctid, int group, int64_t row0,
                                         int64_t rows_left, int64_t n0) {
  constexpr int kFrag = decltype(size(acc))::value;
  static_assert(kN == kFrag, "one residual and weight per accumulator");
  constexpr int kTok = kFrag / 2;
  const TieredGemmSchedule& s = p.sched;
  const TieredGemmNormOut& o = p.norm_out;
  float sq[kTok];
#pragma unroll
  for (int q = 0; q < kTok; ++q) sq[q] = 0.0f;
#pragma unroll
  for (int i = 0; i < kFrag; ++i) {
    const int64_t m = get<0>(tCcC(i)), n = n0 + get<1>(tCcC(i));
    if (m < rows_left && n < s.N) {
      const int64_t at = n * s.M + row0 + m;
      float v = acc(i);
      if (p.g_bias) v = __fadd_rn(v, __bfloat162float(p.g_bias[row0 + m]));
      const float r = __fadd_rn(resid[i], __bfloat162float(__float2bfloat16(v)));
      o.g_residual[at] = r;
      o.g_scaled[at] = __float2bfloat16(__fmul_rn(r, weight[i]));
      const int q = (i & 1) + 2 * (i >> 2);
      sq[q] = fmaf(r, r, sq[q]);
    }
  }
#pragma unroll
  for (int q = 0; q < kTok; ++q) {
#pragma unroll
    for (int lanes = 4; lanes < 32; lanes <<= 1) sq[q] = __fadd_rn(sq[q], __shfl_xor_sync(0xffffffffu, sq[q], lanes));
  }
  const int warp = ctid / 32, lane = ctid % 32;
  if (lane < 4) {
#pragma unroll
    for (int q = 0; q < kTok; ++q) red[warp * kBn + get<1>(tCcC((q & 1) + 4 * (q >> 1)))] = sq[q];
  }
  cutlass::arch::NamedBarrier::sync(128, 1 + group);
  if (ctid < kBn && n0 + ctid < s.N) {
    const float t = __fadd_rn(__fadd_rn(__fadd_rn(red[ctid], red[kBn + ctid]), red[2 * kBn + ctid]), red[3 * kBn + ctid]);
    o.g_sumsq[(row0 / 64) * s.N + n0 + ctid] = t;
  }
  cutlass::arch::NamedBarrier::sync(128, 1 + group);  // `red` is the group's again at its next unit
}

/// One value pair of the RoPE + KV append epilogue: rows col and col + 8 of y for token n, with
/// their fp32 results v0 / v1 (norm-in scale applied, bias not yet): (v + bias) rounded to bf16 as
/// store_y writes it; a q or k pair rotated by rope_pair (rope_pair.cuh, as every RoPE kernel); y
/// gets both values, the token's KV cache row its k / v values. Returns whether it wrote a host-tier
/// row.
__device__ __forceinline__ bool rope_pair_out(const TieredGemmRopeOut& r, __nv_bfloat16* y, int64_t ldy,
                                           const __nv_bfloat16* bias, int64_t col, int64_t n, float v0, float v1) {
  const KvCacheLayer& kv = r.kv;
  const int64_t D = kv.head_dim, qd = int64_t(r.num_q_heads) * D, kd = int64_t(kv.num_kv_heads) * D;
  if (bias) {
    v0 += __bfloat162float(bias[col]);
    v1 += __bfloat162float(bias[col + 8]);
  }
  __nv_bfloat16 y0 = __float2bfloat16(v0), y1 = __float2bfloat16(v1);
  const int section = col < qd ? 0 : col < qd + kd ? 1 : 2;  // q, k or v
  const int64_t in_side = col - (section == 0 ? 0 : section == 1 ? qd : qd + kd);
  const int64_t in_head = in_side % D;
  if (section < 2) {
    rope_pair(__bfloat162float(y0), __bfloat162float(y1), float(r.g_positions[n]),
              r.g_inv_freq[rope_layout::pair_of_row(in_head)], r.attention_factor, y0, y1);
  }
  y[n * ldy + col] = y0;
  y[n * ldy + col + 8] = y1;
  if (section == 0) return false;
  const int64_t slot = r.g_slots[n], cpos = r.g_cache_positions[n];
  if (slot < 0 || slot >= kv.batch || cpos < 0 || cpos >= kv.max_ctx) return false;
  __nv_bfloat16* row = (section == 1 ? kv.k_block(slot, in_side / D) : kv.v_block(slot, in_side / D)) + cpos * D;
  row[in_head] = y0;
  row[in_head + 8] = y1;
  return kv.on_host(slot);
}

/// rope_pair_out out of line, for the 64 x 64 tile: inlined there, the epilogue's registers made
/// ptxas spill 128 bytes in the kernel and the plain GEMM ~8 % slower (H100, docs/perf-notes.md
/// session 34); a call keeps the kernel at 168 registers without spills.
static __device__ __noinline__ bool rope_pair_out_call(const TieredGemmRopeOut& r, __nv_bfloat16* y, int64_t ldy,
                                                const __nv_bfloat16* bias, int64_t col, int64_t n, float v0,
                                                float v1) {
  return rope_pair_out(r, y, ldy, bias, col, n, v0, v1);
}

/// Calls f(m, n, v0, v1) for each pair of a math group's thread's fragment values that are rows m
/// and m + 8 (m % 16 < 8) of one token n of a 64-row output tile (`rows_left` of its rows inside
/// the side, a multiple of 16; tokens from n0): in the fragment (norm_out_epilogue's comment)
/// values i and i + 2 are such a pair. The pairs of the RoPE and the activation epilogues.
template <class Params, class Acc, class Coord, class F>
__device__ __forceinline__ void for_each_row_pair(const Params& p, const Acc& acc, const Coord& tCcC,
                                                  int64_t rows_left, int64_t n0, F&& f) {
  constexpr int kFrag = decltype(size(acc))::value;
#pragma unroll
  for (int i = 0; i < kFrag; ++i) {
    if (i & 2) continue;  // value i + 2 (row m + 8) goes with value i
    const int64_t m = get<0>(tCcC(i)), n = n0 + get<1>(tCcC(i));
    if (m + 8 >= rows_left || n >= p.sched.N) continue;  // rows_left is a multiple of 16: both rows or neither
    f(m, n, acc(i), acc(i + 2));
  }
}

/// The RoPE + KV append epilogue (TieredGemmRopeOut) of one 64-row output tile (rows [row0, row0 +
/// 64) of y): each row pair (for_each_row_pair) is the two values of a RoPE pair in the paired row
/// order (core/rope_layout.h), or two v rows; rope_pair_out writes it. A thread that wrote a
/// host-tier row fences at system scope (kv_append_kernel).
template <int kBn, class Params, class Acc, class Coord>
__device__ inline void rope_epilogue(const Params& p, const Acc& acc, const Coord& tCcC, int64_t row0,
                                     int64_t rows_left, int64_t n0) {
  __nv_bfloat16* const y = static_cast<__nv_bfloat16*>(p.g_y);
  bool wrote_host = false;
  for_each_row_pair(p, acc, tCcC, rows_left, n0, [&](int64_t m, int64_t n, float v0, float v1) {
    if constexpr (kBn > 32) {
      wrote_host |= rope_pair_out_call(p.rope, y, p.ldy, p.g_bias, row0 + m, n, v0, v1);
    } else {
      wrote_host |= rope_pair_out(p.rope, y, p.ldy, p.g_bias, row0 + m, n, v0, v1);
    }
  });
  if (wrote_host) __threadfence_system();
}

/// One gate / up pair of the activation epilogue: rows col (gate j) and col + 8 (up j) of the paired
/// gate_up for token n, their fp32 results v0 / v1 (norm-in scale applied, bias not yet): each value
/// (v + bias) rounded to bf16 as store_y writes it, then out[n, j] = bf16(act(gate) * up) as the
/// activation kernel computes it (activation.cuh).
__device__ __forceinline__ void act_pair_out(const TieredGemmActOut& o, int64_t ldo, const __nv_bfloat16* bias,
                                             int64_t col, int64_t n, float v0, float v1) {
  if (bias) {
    v0 += __bfloat162float(bias[col]);
    v1 += __bfloat162float(bias[col + 8]);
  }
  const float gate = __bfloat162float(__float2bfloat16(v0)), up = __bfloat162float(__float2bfloat16(v1));
  o.g_out[n * ldo + rope_layout::pair_of_row(col)] =
      __float2bfloat16_rn(activation_element(gate, up, true, false, o.act));
}

/// act_pair_out out of line, for the 64 x 64 tile (as rope_pair_out_call: the inlined epilogue's
/// registers would spill there).
static __device__ __noinline__ void act_pair_out_call(const TieredGemmActOut& o, int64_t ldo,
                                                      const __nv_bfloat16* bias, int64_t col, int64_t n, float v0,
                                                      float v1) {
  act_pair_out(o, ldo, bias, col, n, v0, v1);
}

/// The activation epilogue (TieredGemmActOut) of one 64-row output tile (rows [row0, row0 + 64) of
/// the paired gate_up): each row pair (for_each_row_pair) is the gate and the up of one output
/// column; act_pair_out writes it.
template <int kBn, class Params, class Acc, class Coord>
__device__ inline void act_epilogue(const Params& p, const Acc& acc, const Coord& tCcC, int64_t row0,
                                    int64_t rows_left, int64_t n0) {
  const int64_t ldo = p.act_out.ldo > 0 ? p.act_out.ldo : p.sched.M / 2;
  for_each_row_pair(p, acc, tCcC, rows_left, n0, [&](int64_t m, int64_t n, float v0, float v1) {
    if constexpr (kBn > 32) {
      act_pair_out_call(p.act_out, ldo, p.g_bias, row0 + m, n, v0, v1);
    } else {
      act_pair_out(p.act_out, ldo, p.g_bias, row0 + m, n, v0, v1);
    }
  });
}

template <int kBm, int kBn>
__global__ void __launch_bounds__(Config<kBm, kBn>::kThreads, Config<kBm, kBn>::kMinBlocksPerSm)
    tiered_gemm_kernel(const __grid_constant__ KernelParams<kBm, kBn> p) {
  using Cfg = Config<kBm, kBn>;
  using Smem = typename Cfg::SharedStorage;
  namespace ptx = cuda::ptx;
  extern __shared__ uint8_t smem_raw[];
  Smem& smem = *reinterpret_cast<Smem*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));

  const TieredGemmSchedule& s = p.sched;
  const bool host_side = int(blockIdx.x) < s.host_ctas;
  const int32_t C = s.cluster;
  const bool multicast = C > 1;
  const uint32_t rank = multicast ? cute::block_rank_in_cluster() : 0;  // == blockIdx.x % C (1D clusters)
  // Work is handed out per cluster (one CTA when C == 1): side_cta is the cluster index in its side.
  const int64_t side_cta = (host_side ? blockIdx.x : blockIdx.x - s.host_ctas) / C;
  const int64_t side_ctas = host_side ? s.host_clusters() : s.hbm_clusters();
  const int64_t side_units = host_side ? s.host_units() : s.hbm_units();
  const int64_t splits = s.side_splits(host_side);  // k-splits of this side's units
  const int64_t side_rows = host_side ? s.m_host : s.M - s.m_host;
  const int64_t side_row0 = host_side ? 0 : s.m_host;  // first row of W (and column of y) of this side
  const int32_t stages = host_side ? s.host_stages : s.hbm_stages;
  const int warpgroup = threadIdx.x / 128;

  Tensor sW = make_tensor(make_smem_ptr(smem.w.begin()), typename Cfg::SmemLayoutW{});  // (kBm, 64, kStages)
  Tensor sX = make_tensor(make_smem_ptr(smem.x.begin()), typename Cfg::SmemLayoutX{});  // (kBn, 64, kStages)

  uint64_t* const trace = p.g_trace ? p.g_trace + int64_t(blockIdx.x) * kGemmTraceFields : nullptr;
  if (trace && threadIdx.x == 0) {
    trace[kGemmTraceSm] = cuda::ptx::get_sreg_smid();
    trace[kGemmTraceEntry] = trace_now();
  }
  if (threadIdx.x == 0) {
    // One arrive per consumer warp, of every CTA that receives this CTA's stages.
    const uint32_t releases = 4 * Cfg::kConsumerWarpgroups * (multicast ? uint32_t(C) : 1u);
    for (int st = 0; st < Cfg::kStages; ++st) {
      ptx::mbarrier_init(&smem.full[st], 1);
      ptx::mbarrier_init(&smem.empty[st], releases);
    }
    for (int g = 0; g < Cfg::kMathGroups; ++g) ptx::mbarrier_init(&smem.turn[g], 1);
    ptx::mbarrier_init(&smem.rinv_ready, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  if (C > 1) {
    // Every CTA of the cluster has initialized its barriers before any peer signals them.
    ptx::barrier_cluster_arrive(ptx::sem_release);
    ptx::barrier_cluster_wait(ptx::sem_acquire);
  } else {
    __syncthreads();
  }
  // The next kernel may be scheduled as SMs free up; it waits for this grid before using its
  // outputs (cudaGridDependencySynchronize there).
  cudaTriggerProgrammaticLaunchCompletion();

  if (warpgroup == 0) {
    // ------------------------------------------------------------------ producer
    if constexpr (Cfg::kRegisterRealloc) cutlass::arch::warpgroup_reg_dealloc<40>();  // all 4 warps
    if constexpr (kBm == 64) {
      if (p.norm_in.g_sumsq && threadIdx.x / 32 == 1) {
        // Warp 1 (otherwise idle): the norm-in GEMM's 1 / rms per token from the norm-out GEMM's
        // block sums, summed in block order, while warp 0 fills the ring; the consumers wait for
        // it only in their first epilogue (measured: computed by the consumers before their main
        // loop, it stalled the ring ~5 us per GEMM; docs/perf-notes.md session 24).
        cudaGridDependencySynchronize();
        const int lane = threadIdx.x % 32;
        for (int n = lane; n < kBn; n += 32) {
          float v = 0.0f;
          if (n < s.N) {
            float sum = 0.0f;
            const int64_t blocks = s.K / 64;
#pragma unroll 16
            for (int64_t b = 0; b < blocks; ++b) sum += __ldcg(&p.norm_in.g_sumsq[b * s.N + n]);
            v = rsqrtf(sum * (1.0f / float(s.K)) + p.norm_in.eps);
          }
          smem.norm_rinv[n] = v;
        }
        __syncwarp();
        if (lane == 0) ptx::mbarrier_arrive(&smem.rinv_ready);  // release: the writes above
        return;
      }
    }
    if (threadIdx.x / 32 != 0 || !cute::elect_one_sync()) return;
    const auto& tma_w = host_side ? p.tma_w_host : p.tma_w_hbm;
    Tensor mW = tma_w.get_tma_tensor(make_shape(int(side_rows > 0 ? side_rows : 1), int(s.K)));
    Tensor mX = p.tma_x.get_tma_tensor(make_shape(int(s.N), int(s.K)));
    // Wide stages: one stage of an operand (box_rows rows from `row`, k-block kb) into `dst`, with
    // the L2 eviction policy `hint` (p.w_hint for W, EVICT_NORMAL for x).
    auto load_wide = [&](const CUtensorMap* map, Element* dst, int box_rows, int64_t row, int64_t kb, int stage,
                         TMA::CacheHintSm90 hint) {
      if (p.atom_boxes) {
        for (int a = 0; a < Cfg::kAtoms; ++a) {
          SM90_TMA_LOAD_2D::copy(map, &smem.full[stage], uint64_t(hint), dst + a * box_rows * kAtomK,
                                 int32_t((kb * Cfg::kAtoms + a) * kAtomK), int32_t(row));
        }
      } else {
        SM90_TMA_LOAD_3D::copy(map, &smem.full[stage], uint64_t(hint), dst, 0, int32_t(row),
                               int32_t(kb * Cfg::kAtoms));
      }
    };
    auto load_x = [&](int64_t n_tile, int64_t kb, int stage) {
#ifdef DAK_PROBE_NO_X
      return;
#endif
      if constexpr (Cfg::kAtoms > 1) {
        load_wide(&p.x_wide, smem.x.begin() + int64_t(stage) * kBn * Cfg::kBkStage, kBn, n_tile * kBn, kb, stage,
                  TMA::CacheHintSm90::EVICT_NORMAL);
      } else {
        Tensor gX = local_tile(mX, make_shape(Int<kBn>{}, Int<kAtomK>{}), make_coord(int(n_tile), _));
        auto [tXgX, tXsX] =
            tma_partition(p.tma_x, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sX), group_modes<0, 2>(gX));
        copy(p.tma_x.with(smem.full[stage]), tXgX(_, int(kb)), tXsX(_, stage));
      }
    };
    // Programmatic dependent launch: W does not depend on the previous kernel, x does. The first
    // W tiles are requested before waiting for the previous grid (its tail overlaps them); their x
    // tiles follow once it has completed and its writes are visible.
    // HBM CTAs request early_stages W tiles (TieredGemmArgs::early_w_stages), host CTAs their whole
    // ring (the link is the bottleneck there); never more than the ring, whose x is then due.
    const int early_stages = host_side ? stages : min(p.early_stages, stages);
    bool dependency_met = false;
    int pending = 0;  // stages [0, pending) of the ring wait for their x tile
    int64_t pending_n_tile[Cfg::kStages], pending_kb[Cfg::kStages];
    auto meet_dependency = [&] {
      cudaGridDependencySynchronize();
      if (trace) trace[kGemmTraceDependency] = trace_now();
      dependency_met = true;
      for (int i = 0; i < pending; ++i) load_x(pending_n_tile[i], pending_kb[i], i);
    };
    auto load_w = [&](int64_t m_tile, int64_t kb, int stage) {
      if constexpr (Cfg::kAtoms > 1) {
        load_wide(host_side ? &p.w_host_wide : &p.w_hbm_wide, smem.w.begin() + int64_t(stage) * kBm * Cfg::kBkStage,
                  kBm, m_tile * kBm, kb, stage, p.w_hint);
      } else {
        // (kBm, 64, m_tiles, k_blocks)
        Tensor gW = local_tile(mW, make_shape(Int<kBm>{}, Int<kAtomK>{}), make_coord(_, _));
        auto [tWgW, tWsW] =
            tma_partition(tma_w, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sW), group_modes<0, 2>(gW));
        copy(tma_w.with(smem.full[stage], 0, p.w_hint), tWgW(_, int(m_tile), int(kb)), tWsW(_, stage));
      }
    };
    const int slice_rows = kBm / C;  // W rows per multicast slice
    const uint16_t cluster_mask = uint16_t((1u << C) - 1u);
    const int64_t n_tiles = s.n_tiles();
    int st = 0;           // ring position across every unit of this CTA ...
    uint32_t phase = 0;   // ... and its pass parity (no 64-bit division in the loop)
    for (int64_t u = side_cta; u < side_units; u += side_ctas) {
      const TieredGemmSchedule::Unit unit = s.unit(u, host_side);
      // A cluster rank past the last n-tile still loads its W slice for its peers; its x tile is
      // the last real one (never a box entirely out of bounds) and it stores nothing.
      const int64_t mine = unit.n_group * C + rank;
      const int64_t n_tile = mine < n_tiles ? mine : n_tiles - 1;
      for (int64_t kb = s.split_begin(unit.split, splits), kb_end = s.split_begin(unit.split + 1, splits); kb < kb_end;
           ++kb) {
        if (!dependency_met && pending >= early_stages) {  // the early W tiles are out: their x is due
          meet_dependency();
        }
        wait_parity(&smem.empty[st], phase ^ 1u);
        ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &smem.full[st],
                                       uint32_t{Cfg::kStageTxBytes});
        if (multicast) {
          // This CTA's slice of the W tile, into the same stage of every CTA of the cluster. A
          // slice entirely past the side's last row (the last m-tile of a side that is not a
          // multiple of kBm) loads rows [0, slice_rows) of x instead (HBM, in L2; the same bytes):
          // those accumulator rows are never stored. Measured on the H200 (one cluster of 4 on 448
          // host rows): a TMA box entirely out of bounds cost ~8 us per load (619 us for the GEMM,
          // 140 us at 512 rows), and re-reading the tile's first host slice still ~0.7 us (230 us).
          const int32_t row = int32_t(unit.m_tile * kBm + int64_t(rank) * slice_rows);
          const bool filler = row >= side_rows;
          const void* map = filler ? &p.tma_x_filler : host_side ? &p.tma_w_host_slice : &p.tma_w_hbm_slice;
          Element* dst = smem.w.begin() + (int64_t(st) * kBm + int64_t(rank) * slice_rows) * kAtomK;
          SM90_TMA_LOAD_MULTICAST_2D::copy(map, &smem.full[st], cluster_mask, uint64_t(p.w_hint), dst,
                                           int32_t(kb * kAtomK), filler ? 0 : row);  // EVICT_NORMAL: n-tiles > 1
        } else {
          load_w(unit.m_tile, kb, st);
        }
        if (dependency_met) {
          load_x(n_tile, kb, st);
        } else {
          pending_n_tile[pending] = n_tile;  // st == pending before the first wrap
          pending_kb[pending++] = kb;
        }
        if (++st == stages) st = 0, phase ^= 1u;
      }
    }
    if (!dependency_met) meet_dependency();
    if (multicast) {
      // Drain: wait for the last release of every slot, which counts the consumers of all peers,
      // so no peer signals this CTA's barriers after it has exited.
      for (int i = 0; i < stages; ++i) {
        wait_parity(&smem.empty[st], phase ^ 1u);
        if (++st == stages) st = 0, phase ^= 1u;
      }
    }
    return;
  }

  // -------------------------------------------------------------------- consumers
  if constexpr (Cfg::kRegisterRealloc) cutlass::arch::warpgroup_reg_alloc<232>();
  // y and the workspace (counters, partials) may still be in use by the previous kernel.
  cudaGridDependencySynchronize();
  constexpr int kConsumerThreads = Cfg::kGroupThreads;  // per math group
  const int group = (threadIdx.x - 128) / kConsumerThreads;
  const int ctid = (threadIdx.x - 128) % kConsumerThreads;  // thread index within the group
  typename Cfg::TiledMma mma;
  auto thr_mma = mma.get_thread_slice(ctid);
  Tensor tCsW = thr_mma.partition_A(sW);  // (MMA, MMA_M, MMA_K, kStages)
  Tensor tCsX = thr_mma.partition_B(sX);  // (MMA, MMA_N, MMA_K, kStages)
  Tensor tCrW = thr_mma.make_fragment_A(tCsW);
  Tensor tCrX = thr_mma.make_fragment_B(tCsX);
  using Accumulator = decltype(partition_fragment_C(mma, Shape<Int<kBm>, Int<kBn>>{}));  // (MMA, MMA_M, MMA_N) fp32
  constexpr int kAcc = Cfg::kAccumulators;
  Accumulator part[kAcc];
  Accumulator& acc = part[0];  // the unit's result once the others are added to it
  Tensor tCcC = thr_mma.partition_C(make_identity_tensor(Shape<Int<kBm>, Int<kBn>>{}));  // (m, n) of each
  constexpr int kFrag = decltype(size(acc))::value;
  const bool lane0 = (threadIdx.x % 32) == 0;

  // Releases ring slot `slot` to the producer(s): this CTA's, or with multicast every CTA of the
  // cluster (each one refills the slot in all of them).
  auto release = [&](int slot) {
    if (!lane0) return;
    if (multicast) {
      for (int c = 0; c < C; ++c) cutlass::arch::ClusterBarrier::arrive(&smem.empty[slot], uint32_t(c), 1u);
    } else {
      ptx::mbarrier_arrive(&smem.empty[slot]);
    }
  };
  // The end of a chunk or of a unit: every wgmma done, the last slot in flight (held, if any)
  // released, and the accumulators added into part[0] in the fixed order ((p0 + p1) + p2) + p3.
  auto drain_and_combine = [&](int& held) {
    warpgroup_wait<0>();
#pragma unroll
    for (int a = 0; a < kAcc; ++a) warpgroup_fence_operand(part[a]);
    if (held >= 0) release(held);
    held = -1;
#pragma unroll
    for (int a = 1; a < kAcc; ++a) {
#pragma unroll
      for (int i = 0; i < kFrag; ++i) acc(i) += part[a](i);
    }
  };
  int st = 0;           // ring position of this CTA's next unit ...
  uint32_t phase = 0;   // ... and its pass parity
  uint32_t turns = 0;   // main loops this group has waited its turn for
  int64_t local = 0;    // unit index within this CTA
  int64_t mine = 0;     // units this group computed (trace)
  for (int64_t u = side_cta; u < side_units; u += side_ctas, ++local) {
    const TieredGemmSchedule::Unit unit = s.unit(u, host_side);
    const int64_t n_tile = unit.n_group * C + rank;  // may be past the last n-tile (then no store)
    const int64_t kb_begin = s.split_begin(unit.split, splits), kb_end = s.split_begin(unit.split + 1, splits);
    if (Cfg::kMathGroups > 1 && local % Cfg::kMathGroups != group) {
      // The other group's unit: skip its k-blocks in the ring.
      const int32_t adv = st + int32_t(kb_end - kb_begin);
      phase ^= uint32_t(adv / stages) & 1u;
      st = adv % stages;
      continue;
    }
    if (Cfg::kMathGroups > 1 && local > 0) {
      // Wait until the previous unit's group has seen all of its stages full: the ring positions
      // of this unit are then at most one pass ahead of every barrier phase (parity waits are exact).
      wait_parity(&smem.turn[group], turns++ & 1u);
    }
#pragma unroll
    for (int a = 0; a < kAcc; ++a) clear(part[a]);
    // Norm-out: this tile's residual and norm weight, requested now, used in the epilogue.
    float pre_resid[kFrag], pre_weight[kFrag];
    if constexpr (kBm == 64 && Cfg::kNormPrefetch) {
      if (p.norm_out.g_residual && n_tile < s.n_tiles() && unit.split == splits - 1) {
        norm_out_load(p, tCcC, side_row0 + unit.m_tile * kBm, side_rows - unit.m_tile * kBm, n_tile * kBn,
                           pre_resid, pre_weight);
      }
    }
    int held = -1;  // ring slot whose wgmma may still be running
    ++mine;
    // Accumulation chunks (TieredGemmSchedule::k_chunks) of an HBM unit: chunk c's result is added
    // to chunk_sum (from 0.0f, in chunk order) and the accumulators restart at its end, so the unit
    // sums exactly what the split reduction of the host side's k_chunks splits sums.
    [[maybe_unused]] float chunk_sum[Cfg::kChunked ? kFrag : 1];
    [[maybe_unused]] int64_t chunk_end = kb_end;
    [[maybe_unused]] int64_t chunk = 0;
    if constexpr (Cfg::kChunked) {
#pragma unroll
      for (int i = 0; i < kFrag; ++i) chunk_sum[i] = 0.0f;
      if (!host_side && s.k_chunks > 1) chunk_end = s.split_begin(1, s.k_chunks);
    }
    for (int64_t kb = kb_begin; kb < kb_end; ++kb) {
      wait_parity(&smem.full[st], phase);
      if (trace && local == 0 && kb == kb_begin && ctid == 0) trace[kGemmTraceFirstFull] = trace_now();
#pragma unroll
      for (int a = 0; a < kAcc; ++a) warpgroup_fence_operand(part[a]);
      warpgroup_arrive();
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tCrW); ++k) gemm(mma, tCrW(_, _, k, st), tCrX(_, _, k, st), part[k % kAcc]);
      warpgroup_commit_batch();
      if (stages > 1) {
        // The previous k-block's wgmma are done: release its slot, keep this one in flight
        // (measured on the H200: -8 % at N = 512; with the wide stages one 64-row CTA 26.6 -> 22.2
        // us per 2 MiB tile together with the independent accumulators).
        warpgroup_wait<1>();
        if (held >= 0) release(held);
        held = st;
      } else {
        // A one-stage ring, where the next k-block needs this very slot: wait for the wgmma and
        // release the slot now.
        warpgroup_wait<0>();
#pragma unroll
        for (int a = 0; a < kAcc; ++a) warpgroup_fence_operand(part[a]);
        release(st);
      }
      if constexpr (Cfg::kChunked) {
        if (kb + 1 == chunk_end && kb + 1 < kb_end) {
          // The end of a chunk (not the unit's last): its result summed as a split partial, the
          // accumulators cleared for the next chunk.
          drain_and_combine(held);
#pragma unroll
          for (int i = 0; i < kFrag; ++i) chunk_sum[i] += acc(i);
#pragma unroll
          for (int a = 0; a < kAcc; ++a) clear(part[a]);
          chunk_end = s.split_begin(++chunk + 1, s.k_chunks);
        }
      }
      if (++st == stages) st = 0, phase ^= 1u;
    }
    drain_and_combine(held);
    if constexpr (Cfg::kChunked) {
      // The last chunk's result added as the split reducer adds its own partial (below).
      if (!host_side && s.k_chunks > 1) {
#pragma unroll
        for (int i = 0; i < kFrag; ++i) acc(i) = chunk_sum[i] + acc(i);
      }
    }
    if (Cfg::kMathGroups > 1 && ctid == 0) ptx::mbarrier_arrive(&smem.turn[(group + 1) % Cfg::kMathGroups]);
    if (n_tile >= s.n_tiles()) continue;  // a multicast rank past the last n-tile: nothing to store

    // Epilogue.
    const int64_t tile_row0 = unit.m_tile * kBm;  // within the side
    const int64_t tile_n0 = n_tile * kBn;
    if (splits > 1) {
      // The split reduction. The tile's last split (S - 1) is its reducer: the others store their
      // fp32 partial, and thread 0 makes it visible GPU-wide (the CTA barrier orders every thread's
      // partial before its cumulative fence) and counts it with a fire-and-forget atomic; the
      // reducer's thread 0 waits for S - 1 counts (acquire), resets the counter for the next run,
      // and the barrier passes that on. The reducer then reads the partials in batches of
      // kSplitBatch splits (one L2 round trip per batch, every fragment at once) and adds them in
      // split order 0, 1, ..., S - 1 from 0.0f, its own accumulator last: the same sum, in the same
      // order, whichever CTA computes which split, so y does not depend on m_host. The splits of a
      // tile are consecutive units (neighbouring CTAs, the same round), so the wait is short; every
      // CTA of the grid is resident, so it ends.
      const int64_t tile = s.output_tile(host_side, unit.m_tile, n_tile);
      float* g_part = p.g_partials + tile * s.partial_slots() * (kBm * kBn);
      const int64_t reducer = splits - 1;
      if (unit.split != reducer) {
#pragma unroll
        for (int i = 0; i < kFrag; ++i) g_part[(unit.split * kFrag + i) * kConsumerThreads + ctid] = acc(i);
        cutlass::arch::NamedBarrier::sync(kConsumerThreads, 1 + group);
        if (ctid == 0) {
          __threadfence();
          atomicAdd(&p.g_counters[tile], 1);  // result unused: a reduction, no round trip
        }
        continue;
      }
      if (ctid == 0) {
        cuda::atomic_ref<int32_t, cuda::thread_scope_device> count(p.g_counters[tile]);
        while (count.load(cuda::memory_order_acquire) < reducer) {
        }
        __threadfence();  // the barrier below passes the acquire on to the group's other threads
        count.store(0, cuda::memory_order_relaxed);  // ready for the next run (ordered by the kernel boundary)
      }
      cutlass::arch::NamedBarrier::sync(kConsumerThreads, 1 + group);
      if constexpr (kFrag > 64) {
        // The 128 x 256 tile (128 accumulators per thread): the same sums, 16 fragments at a time,
        // so the partial sums need 16 registers, not 128 (the accumulators already take 128).
        constexpr int kChunk = 16;
#pragma unroll
        for (int c = 0; c < kFrag; c += kChunk) {
          float sum[kChunk];
#pragma unroll
          for (int j = 0; j < kChunk; ++j) sum[j] = 0.0f;
          for (int64_t sp = 0; sp < reducer; ++sp) {
            float part[kChunk];
#pragma unroll
            for (int j = 0; j < kChunk; ++j) part[j] = __ldcg(&g_part[(sp * kFrag + c + j) * kConsumerThreads + ctid]);
#pragma unroll
            for (int j = 0; j < kChunk; ++j) sum[j] += part[j];
          }
#pragma unroll
          for (int j = 0; j < kChunk; ++j) acc(c + j) = sum[j] + acc(c + j);
        }
      } else {
        constexpr int kSplitBatch = kFrag >= 16 ? 1 : 16 / kFrag;  // <= 16 partial registers per thread
        float sum[kFrag];
#pragma unroll
        for (int i = 0; i < kFrag; ++i) sum[i] = 0.0f;
        for (int64_t sp0 = 0; sp0 < reducer; sp0 += kSplitBatch) {
          float part[kSplitBatch][kFrag];
#pragma unroll
          for (int b = 0; b < kSplitBatch; ++b) {
#pragma unroll
            for (int i = 0; i < kFrag; ++i) {
              part[b][i] = sp0 + b < reducer ? __ldcg(&g_part[((sp0 + b) * kFrag + i) * kConsumerThreads + ctid]) : 0.0f;
            }
          }
#pragma unroll
          for (int b = 0; b < kSplitBatch; ++b) {
#pragma unroll
            for (int i = 0; i < kFrag; ++i) {
              if (sp0 + b < reducer) sum[i] += part[b][i];
            }
          }
        }
#pragma unroll
        for (int i = 0; i < kFrag; ++i) acc(i) = sum[i] + acc(i);
      }
    }
    if constexpr (kBm == 64) {
      if (p.norm_in.g_sumsq) {  // y = (x~ W^T) / rms, before the bias (one n-tile: tile_n0 == 0)
        wait_parity(&smem.rinv_ready, 0);  // completes once; later waits return at once
        // __fmul_rn: never contracted with the bias add, whichever store path follows.
#pragma unroll
        for (int i = 0; i < kFrag; ++i) acc(i) = __fmul_rn(acc(i), smem.norm_rinv[get<1>(tCcC(i))]);
      }
      if (p.rope.g_positions) {
        rope_epilogue<kBn>(p, acc, tCcC, side_row0 + tile_row0, side_rows - tile_row0, tile_n0);
        continue;
      }
      if (p.act_out.g_out) {
        act_epilogue<kBn>(p, acc, tCcC, side_row0 + tile_row0, side_rows - tile_row0, tile_n0);
        continue;
      }
      if (p.norm_out.g_residual) {
        if constexpr (!Cfg::kNormPrefetch) {
          norm_out_load(p, tCcC, side_row0 + tile_row0, side_rows - tile_row0, tile_n0, pre_resid, pre_weight);
        }
        norm_out_epilogue<kBn>(p, acc, tCcC, pre_resid, pre_weight, smem.norm_red + group * 4 * kBn, ctid, group,
                                    side_row0 + tile_row0, side_rows - tile_row0, tile_n0);
        continue;
      }
    }
    if (tile_row0 + kBm <= side_rows && tile_n0 + kBn <= s.N) {
      // A whole tile (every tile but the last of a side or of N): no bounds, and the bias / ReLU /
      // dtype decisions taken once per tile instead of per element. The per-element version (below)
      // unrolled to ~4200 instructions per warp on the 128 x 256 tile, which missed the instruction
      // cache at every unit (Nsight Compute, session 19: a third of the consumers' stall samples on
      // Llama-2-7B's gate_up at N = 512). Same arithmetic, same bits: (acc + bias), ReLU, convert.
      if (p.g_bias) {
        const __nv_bfloat16* bias = p.g_bias + side_row0 + tile_row0;
#pragma unroll
        for (int i = 0; i < kFrag; ++i) acc(i) += __bfloat162float(bias[get<0>(tCcC(i))]);
      }
      if (p.relu) {
#pragma unroll
        for (int i = 0; i < kFrag; ++i) acc(i) = fmaxf(acc(i), 0.0f);
      }
      auto store_tile = [&](auto* y) {  // y: this tile's (0, 0) element
#pragma unroll
        for (int i = 0; i < kFrag; ++i) {
          const float v = acc(i);
#ifdef DAK_TIERED_GEMM_DIAG_NO_STORE
          if (v != -1.2345e-30f) continue;  // diagnostic builds only: the whole tiles' stores predicated off
#endif
          if constexpr (std::is_same_v<decltype(y), float*>) {
            y[get<1>(tCcC(i)) * p.ldy + get<0>(tCcC(i))] = v;
          } else {
            y[get<1>(tCcC(i)) * p.ldy + get<0>(tCcC(i))] = __float2bfloat16(v);
          }
        }
      };
      const int64_t origin = tile_n0 * p.ldy + side_row0 + tile_row0;
      if (p.out == TieredGemmOut::kF32) {
        store_tile(static_cast<float*>(p.g_y) + origin);
        continue;
      }
      __nv_bfloat16* const y_tile = static_cast<__nv_bfloat16*>(p.g_y) + origin;
#ifndef DAK_TIERED_GEMM_DIAG_DIRECT_STORE  // diagnostic builds only: the direct stores everywhere
      if constexpr (Cfg::kMathGroups == 1) {
        // Through SMEM in 16-byte vectors where y's rows allow them (see Config::kStagedCols).
        if (p.ldy % 8 == 0 && (reinterpret_cast<uintptr_t>(y_tile) & 15) == 0) {
          const int warp = ctid / 32, lane = ctid % 32;
          __nv_bfloat16* const slab = smem.y_stage + warp * Cfg::kWarpStageElems;  // [token][16 rows]
          constexpr int kPasses = kBn / Cfg::kStagedCols;
#pragma unroll
          for (int pass = 0; pass < kPasses; ++pass) {
            if (pass > 0) __syncwarp();  // the previous pass's reads are done
#pragma unroll
            for (int i = 0; i < kFrag; ++i) {
              // The token of value i is the thread's first token (0..7 within each 8) plus a constant
              // of i, so the pass a value belongs to is known at compile time.
              if (kPasses > 1 && (get<1>(tCcC(i)) - get<1>(tCcC(0))) / Cfg::kStagedCols != pass) continue;
              const int n = get<1>(tCcC(i)) - pass * Cfg::kStagedCols;
              slab[n * 16 + get<0>(tCcC(i)) % 16] = __float2bfloat16(acc(i));
            }
            __syncwarp();
            // 16-byte vectors: token v / 2, rows (v % 2) * 8 .. + 7 of the warp's 16.
            __nv_bfloat16* const y_warp = y_tile + int64_t(pass) * Cfg::kStagedCols * p.ldy + warp * 16;
#pragma unroll
            for (int v = lane; v < Cfg::kStagedCols * 2; v += 32) {
              const uint4 val = *reinterpret_cast<const uint4*>(slab + v * 8);
              *reinterpret_cast<uint4*>(y_warp + int64_t(v / 2) * p.ldy + (v % 2) * 8) = val;
            }
          }
          __syncwarp();  // the next unit's epilogue writes the slab again
          continue;
        }
      }
#endif
      store_tile(y_tile);
      continue;
    }
#pragma unroll
    for (int i = 0; i < kFrag; ++i) {
      const int64_t row = tile_row0 + get<0>(tCcC(i));
      const int64_t n = tile_n0 + get<1>(tCcC(i));
      if (row < side_rows && n < s.N) store_y(p, n, side_row0 + row, acc(i));
    }
  }
  if (trace && ctid == 0) {
    trace[group == 0 ? kGemmTraceDone0 : kGemmTraceDone1] = trace_now();
    if (group == 0) trace[kGemmTraceUnits] = uint64_t(mine);
  }
}

// L2 promotion of the TMA loads (the L2 sector size a load's misses are widened to), per memory
// tier. HBM operands: 128 B, the width of one swizzled box row. Measured on the H200
// (`gemm_probe stream`, 940 MB of W in 64 x 4 x 64 boxes, no math, docs/perf-notes.md session
// 12): 4.44 TB/s with 128 B or no promotion against 4.10 TB/s with 256 B (contiguous bulk
// copies: 4.48; the N = 8 decode linears 1-6 % faster). Host operands keep 256 B (128 B measured
// the same: 51.0 GB/s of all-host rows at N = 8 and 512). Defined on
// the compiler command line only for A/B builds (0: none, 128, 256).
#ifndef DAK_TIERED_GEMM_HBM_L2_PROMOTION
#define DAK_TIERED_GEMM_HBM_L2_PROMOTION 128
#endif
#ifndef DAK_TIERED_GEMM_HOST_L2_PROMOTION
#define DAK_TIERED_GEMM_HOST_L2_PROMOTION 256
#endif
constexpr CUtensorMapL2promotion l2_promotion(int bytes) {
  return bytes == 256 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
         : bytes == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                        : CU_TENSOR_MAP_L2_PROMOTION_NONE;
}
constexpr CUtensorMapL2promotion kHbmPromotion = l2_promotion(DAK_TIERED_GEMM_HBM_L2_PROMOTION);
constexpr CUtensorMapL2promotion kHostPromotion = l2_promotion(DAK_TIERED_GEMM_HOST_L2_PROMOTION);

/// TMA descriptor of a bf16 operand [rows, K] seen as a tensor of `rank` (2 or 3) dimensions
/// (dims[0] contiguous; strides in bytes for dims 1.., box in elements) with the 128-byte swizzle of
/// the SMEM ring and L2 promotion `promotion` (kHbmPromotion or kHostPromotion, by the operand's
/// tier); elements past the dims are zero-filled. Through the runtime's driver entry point,
/// as CuTe does: dak must start without libcuda (CPU path). Throws dak::Error naming the operand's
/// rows, K and row pitch `ld` (elements) if the driver refuses it.
inline CUtensorMap encode_sw128(const void* ptr, cuuint32_t rank, const cuuint64_t* dims, const cuuint64_t* strides,
                                const cuuint32_t* box, int64_t rows, int64_t K, int64_t ld,
                                CUtensorMapL2promotion promotion) {
  CUtensorMap map{};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult r = CUTLASS_CUDA_DRIVER_WRAPPER_CALL(cuTensorMapEncodeTiled)(
      &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, rank, const_cast<void*>(ptr), dims, strides, box, elem_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    fail("cuTensorMapEncodeTiled refused an operand (CUresult " + std::to_string(int(r)) + ")",
         "tiered GEMM, " + std::to_string(rank) + "D view of rows " + std::to_string(rows) + " K " +
             std::to_string(K) + " pitch " + std::to_string(ld),
         "operands must be 16-byte aligned (pinned host or HBM) with K and the row pitch multiples of 8");
  }
  return map;
}

/// TMA descriptor of one side's rows of W ([rows, K] bf16, row pitch `ld` elements, default K; host or
/// HBM) with a box of `box_rows` x 64 and the 128-byte swizzle of the SMEM ring: one multicast slice
/// of a W tile (TMA dimension 0 is K, the contiguous one; rows past `rows` are zero-filled). Throws
/// dak::Error if the driver refuses it.
inline CUtensorMap encode_w_slice(const void* w, int64_t rows, int64_t K, int box_rows, int64_t ld,
                                  CUtensorMapL2promotion promotion) {
  const int64_t pitch = ld > 0 ? ld : K;
  const cuuint64_t dims[2] = {cuuint64_t(K), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(pitch) * 2};
  const cuuint32_t box[2] = {cuuint32_t(kAtomK), cuuint32_t(box_rows)};
  return encode_sw128(w, 2, dims, strides, box, rows, K, pitch, promotion);
}

/// TMA descriptor of a wide-stage operand ([rows, K] bf16, row pitch `ld` elements; host or HBM):
/// a 3D view [K / 64, rows, 64] (strides: ld elements per row, 64 per atom) with a box of `atoms` x
/// `box_rows` x 64 and the 128-byte swizzle: one stage of kAtoms atom columns, each [box_rows, 64],
/// in one TMA instruction; atoms and rows past the operand are zero-filled. K must be a multiple of
/// 64; otherwise (atom_boxes) the 2D map of encode_w_slice, loaded atom by atom (the last stage's
/// atoms entirely past K are then boxes wholly out of bounds: zero-filled, their cost unmeasured;
/// no shipped config has K % 64 != 0). Throws dak::Error if the driver refuses it.
inline CUtensorMap encode_wide(const void* ptr, int64_t rows, int64_t K, int64_t ld, int box_rows, int atoms,
                               CUtensorMapL2promotion promotion) {
  if (K % kAtomK != 0) return encode_w_slice(ptr, rows, K, box_rows, ld, promotion);
  const cuuint64_t dims[3] = {cuuint64_t(kAtomK), cuuint64_t(rows), cuuint64_t(K / kAtomK)};
  const cuuint64_t strides[2] = {cuuint64_t(ld) * 2, cuuint64_t(kAtomK) * 2};
  const cuuint32_t box[3] = {cuuint32_t(kAtomK), cuuint32_t(box_rows), cuuint32_t(atoms)};
  return encode_sw128(ptr, 3, dims, strides, box, rows, K, ld, promotion);
}

/// Host launcher for one compiled tile (instantiated in tiered_gemm_bm64.cu / tiered_gemm_bm128.cu).
template <int kBm, int kBn>
void launch(const TieredGemmArgs& a, const TieredGemmSchedule& s, void* g_workspace, cudaStream_t stream) {
  using Cfg = Config<kBm, kBn>;
  KernelParams<kBm, kBn> p{};
  const int K = int(s.K);
  const auto* w_host = reinterpret_cast<const Element*>(a.h_w);
  const auto* w_hbm = reinterpret_cast<const Element*>(a.g_w);
  // A side without rows never issues a load; its descriptor borrows the other side's pointer.
  const Element* host_rows = s.m_host > 0 ? w_host : w_hbm;
  const Element* hbm_rows = s.m_host < s.M ? w_hbm : w_host;
  const int64_t n_host = s.m_host > 0 ? s.m_host : 1, n_hbm = s.m_host < s.M ? s.M - s.m_host : 1;
  const int64_t ldx = a.ldx > 0 ? a.ldx : s.K;
  if constexpr (Cfg::kAtoms > 1) {
    p.atom_boxes = s.K % kAtomK != 0;
    p.w_host_wide = encode_wide(host_rows, n_host, s.K, s.K, kBm, Cfg::kAtoms, kHostPromotion);
    p.w_hbm_wide = encode_wide(hbm_rows, n_hbm, s.K, s.K, kBm, Cfg::kAtoms, kHbmPromotion);
    p.x_wide = encode_wide(a.g_x, s.N, s.K, ldx, kBn, Cfg::kAtoms, kHbmPromotion);
  } else {
    p.tma_w_host = Cfg::make_tma_w(host_rows, int(n_host), K);
    p.tma_w_hbm = Cfg::make_tma_w(hbm_rows, int(n_hbm), K);
    p.tma_x = Cfg::make_tma_x(reinterpret_cast<const Element*>(a.g_x), int(s.N), K, ldx);
  }
  if (s.cluster > 1 && s.m_host > 0) {
    p.tma_w_host_slice = encode_w_slice(a.h_w, s.m_host, s.K, kBm / s.cluster, 0, kHostPromotion);
  }
  if (s.cluster > 1 && s.m_host < s.M) {
    p.tma_w_hbm_slice = encode_w_slice(a.g_w, s.M - s.m_host, s.K, kBm / s.cluster, 0, kHbmPromotion);
  }
  // Clusters run only on the 128-row tiles (N > 64 >= kBm / cluster), so x has the rows of a slice.
  if (s.cluster > 1) {
    p.tma_x_filler = encode_w_slice(a.g_x, s.N, s.K, kBm / s.cluster, a.ldx > 0 ? a.ldx : s.K, kHbmPromotion);
  }
  p.sched = s;
  {
    // DAK_GEMM_HBM_STAGES=1..6: at most that many W stages in flight per HBM CTA (an A/B switch for
    // measuring how the HBM side's bytes in flight slow the host reads; README's list).
    static const int hbm_stages = env_choice("DAK_GEMM_HBM_STAGES", {"1", "2", "3", "4", "5", "6"});
    if (hbm_stages >= 0) p.sched.hbm_stages = std::min(p.sched.hbm_stages, int32_t(hbm_stages + 1));
  }
  p.g_bias = a.g_bias;
  p.g_y = a.g_y;
  p.ldy = a.ldy > 0 ? a.ldy : s.M;
  p.out = a.out;
  p.relu = a.relu;
  p.g_counters = static_cast<int32_t*>(g_workspace);
  p.g_partials = reinterpret_cast<float*>(static_cast<uint8_t*>(g_workspace) + s.counter_bytes());
  p.norm_out = a.norm_out;
  p.norm_in = a.norm_in;
  p.rope = a.rope;
  p.act_out = a.act_out;
  p.g_trace = a.g_trace;
  p.w_hint = weight_cache_hint(s);
  p.early_stages = a.early_w_stages >= 0 ? a.early_w_stages : Cfg::kAtoms > 1 ? kEarlyWideStages : Cfg::kStages;
  auto* kernel = &tiered_gemm_kernel<kBm, kBn>;
  DAK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(Cfg::kSmemBytes)));
  // Programmatic dependent launch (also inside CUDA graphs): this grid may start while the
  // previous kernel on the stream finishes; the kernel waits for it before reading x or touching
  // y and the workspace.
  cudaLaunchAttribute attrs[2]{};
  cudaLaunchConfig_t cfg{};
  if (pdl_enabled()) {  // DAK_NO_PDL=1: plain stream order (diagnostic, gpu/launch.h)
    attrs[cfg.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[cfg.numAttrs++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (s.cluster > 1) {
    attrs[cfg.numAttrs].id = cudaLaunchAttributeClusterDimension;
    attrs[cfg.numAttrs++].val.clusterDim = {unsigned(s.cluster), 1, 1};
  }
  cfg.gridDim = dim3(unsigned(s.host_ctas + s.hbm_ctas));
  cfg.blockDim = dim3(unsigned(Cfg::kThreads));
  cfg.dynamicSmemBytes = Cfg::kSmemBytes;
  cfg.stream = stream;
  cfg.attrs = attrs;
  DAK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, p));
}

}  // namespace dak::gpu::tiered_gemm_detail
