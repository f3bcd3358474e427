// Tiered GEMM: the DAK paper's "SplitK GEMM" (DESIGN.md §1, §4), split along M, not a split-K
// reduction. y[N, M] = x[N, K] . W[M, K]^T (+ bias[M]) (ReLU optional), bf16 in, fp32 accumulate.
//
// Operands: W rows [0, m_host) in pinned host memory (h_w, read over PCIe by TMA straight into
// SMEM: no HBM staging), rows [m_host, M) in HBM (g_w); x and y in HBM.
// Work decomposition and CTA roles: core/tiered_gemm_schedule.h (host CTAs read only host tiles,
// HBM CTAs only HBM tiles, one persistent launch; k_splits and k_chunks independent of m_host,
// partials added in a fixed order, so y is bitwise identical for every m_host).
// Pipeline (per CTA, warp-specialized): a producer warp keeps up to `stages` (schedule's
// host_stages or hbm_stages) TMA loads in flight into an SMEM ring of tile.max_stages() stages;
// each stage holds a bm x bk tile of W and a bn x bk tile of x (bk = tile.bk(): 256 for the 64-row
// tiles, one 3D TMA box per operand; 64 for the 128-row tiles 128 x 128 and 128 x 256; 128-byte
// swizzle, CuTe layouts),
// completed on a "full" mbarrier with its byte count; consumer warpgroup(s) (bm / 64 per tile) run
// wgmma (CuTe SM90 64 x bn x 16, fp32 accumulators), release each stage on an "empty" mbarrier,
// and run the epilogue: bias, ReLU, bf16/fp32 store (row/column guards on the edge tiles only; the
// 128-row tiles' whole bf16 tiles go through SMEM and out in 16-byte vectors),
// or (k_splits > 1) an fp32 partial to the workspace, where the tile's last split (its reducer: it
// waits on an atomic counter of the other splits, and resets it) sums the partials in split order
// and stores. With k_chunks > 1 (unsplit 64 x 8 / 64 x 16 tiles) the host units are split that way
// k_chunks ways, and each HBM unit sums its k_chunks chunks of K in the same order itself. TMA
// zero-fills rows past M or m_host, tokens past N and columns past K, so any M, N and K % 8 == 0
// work. The W loads carry an L2 eviction hint: EVICT_FIRST when the launch reads each W tile once
// (one n-tile), so a decode step's weight stream does not push the small kernels' data out of L2.
// Multicast (N > 64, schedule.cluster > 1): the grid is launched in clusters; each W tile is read
// once per cluster (over PCIe for host rows, from L2 for HBM rows) and multicast by TMA into the
// SMEM of all its CTAs, which compute neighbouring n-tiles (tiered_gemm_kernel.cuh).
// With 64-row tiles two math groups (one consumer warpgroup each) take a CTA's units in turn, so
// one group's epilogue overlaps the other's main loop. Launched with programmatic dependent
// launch: the producer requests its first W tiles (3 stages on the 64-row tiles, the whole ring
// otherwise and on host CTAs) before waiting for the previous kernel (cudaGridDependencySynchronize),
// then x; consumers wait before touching y or the workspace.
// DAK_NO_PDL=1 in the environment launches in plain stream order (for A/B measurements).
// RMSNorm across the GEMM boundary (TieredGemmNormOut / NormIn, below): on the 64-row tiles the
// epilogue may add y to the residual stream and emit the next norm's input and block statistics
// instead of y, or scale y by 1 / rms computed (by the producer warpgroup's idle warp 1) from a
// previous GEMM's block statistics. RoPE and the KV append (TieredGemmRopeOut) and the gated MLP
// activation (TieredGemmActOut) may also run in the 64-row tiles' epilogue, on weights whose row
// pairs sit 8 rows apart (core/rope_layout.h).
// Invariants: host memory is only read; y rows [0, M) x tokens [0, N) are written exactly once
// (with norm-out: the residual and scaled-x rows instead).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/model_config.h"
#include "core/tiered_gemm_schedule.h"
#include "gpu/kernels/kv_cache.h"

namespace dak::gpu {

enum class TieredGemmOut : int32_t { kBf16, kF32 };

/// RMSNorm (HF LlamaRMSNorm: n = s * rsqrt(mean(s^2) + eps) * weight, statistics in fp32) carried
/// across a GEMM boundary, so a decode step needs no norm launch between two linears: the GEMM
/// whose output joins the residual stream (o_proj, down) ends in a *norm-out* epilogue, the next
/// linear (gate_up, the next layer's qkv) starts with a *norm-in* one. The norm-out epilogue adds
/// bf16(y + bias) to the fp32 residual (the bits the separate norm kernel adds), writes the next
/// GEMM's x as bf16(resid * weight) (not yet scaled), and one sum of resid^2 per 64-row block of M
/// and token (written, never accumulated: deterministic, no zeroing); y itself is not written.
/// The norm-in GEMM sums its token's K / 64 block sums in block order, and scales its fp32 result
/// by rsqrt(sum / K + eps) before the bias: y = (x~ W^T) / rms + bias, equal to the separate norm's
/// W (s / rms * weight) up to where bf16 rounds (before, not after, the 1 / rms). Both need the
/// 64-row tiles (N <= 64); norm-out needs M and m_host multiples of 64, bf16 output, no ReLU;
/// norm-in one n-tile (N <= bn) and K a multiple of 64. Block sums do not depend on m_host
/// (each 64-row block lies in one tile of one side), so split invariance holds. Source: the
/// engine's fused-norm decode (gpu_engine.cc; docs/perf-notes.md session 24).
struct TieredGemmNormOut {
  float* g_residual = nullptr;             // [N, M] fp32, HBM: the residual stream, read and written
  const __nv_bfloat16* g_weight = nullptr; // [M] bf16, HBM: the next RMSNorm's weight; null = 1
  __nv_bfloat16* g_scaled = nullptr;       // [N, M] bf16, HBM (out): bf16(resid * weight)
  float* g_sumsq = nullptr;                // [M / 64, N] fp32, HBM (out): sum of resid^2 per 64-row block
};
struct TieredGemmNormIn {
  const float* g_sumsq = nullptr;          // [K / 64, N] fp32, HBM: a norm-out GEMM's block sums
  float eps = 1e-6f;                       // the RMSNorm's epsilon
};

/// RoPE and the KV append in the epilogue of the qkv GEMM (64-row tiles), so a decode step needs no
/// RoPE / append launch between qkv and the attention. y holds each token's fused q | k | v row
/// (q heads at column 0, k heads at H * D, v heads at (H + Hkv) * D) with the q and k heads in the
/// paired row order of core/rope_layout.h (the engine's W_qkv order), so the two values of each
/// RoPE pair are rows r and r + 8 of one warp's 16, held by one thread. The epilogue rounds each
/// value to bf16 as the plain store does (after the bias and the norm-in scale), rotates the q and
/// k pairs with apply_rope's arithmetic (rope.h: fp32 from the bf16 values, sincosf of
/// float(pos) * inv_freq[i], cos and sin times attention_factor, explicit roundings), stores the
/// rotated q / k and the plain v to y, and writes each token's k and v rows into its KV cache row
/// (kv_append.h: slot slots[t], position cache_positions[t]; tokens out of the cache's range
/// skipped; host-tier slots by posted stores over PCIe, then a system-scope fence). Bitwise equal to
/// the plain GEMM followed by apply_rope_kv_append (RopeParams::paired_rows) on the same rows.
/// Needs the 64-row tiles (N <= 64), bf16 output, no ReLU, no norm-out, y's row pitch ldy with the
/// M = (H + 2 Hkv) * D columns, D % 16 == 0, and m_host a multiple of 16 (a pair never straddles the
/// host / HBM boundary). Source: the engine's decode step (gpu_engine.cc; docs/perf-notes.md
/// session 34).
struct TieredGemmRopeOut {
  const int32_t* g_positions = nullptr;        // [N] int32, HBM: RoPE position of each token; null: off
  const float* g_inv_freq = nullptr;           // [D/2] fp32, HBM (cpu::rope_inv_freq)
  float attention_factor = 1.f;                // cos / sin multiplier (cpu::rope_attention_factor)
  int32_t num_q_heads = 0;                     // H
  const int32_t* g_slots = nullptr;            // [N] int32, HBM: cache slot (sequence) of each token
  const int32_t* g_cache_positions = nullptr;  // [N] int32, HBM: cache row written for each token
  KvCacheLayer kv;                             // one layer's two-tier cache (Hkv, D from it), written
};

/// The gated MLP activation in the epilogue of the gate_up GEMM (64-row tiles), so a decode step
/// needs no activation launch between gate_up and down. W_gate_up (and its bias) is in the paired
/// order of core/rope_layout.h with D = M = 2I (engine_pairs_gate_up: gate row j and up row j are
/// rows r and r + 8 of one warp's 16, held by one thread). The epilogue rounds both values to bf16 as
/// the plain store does (after the bias and the norm-in scale) and writes
/// g_out[n, j] = bf16(act(gate) * up) with the activation kernel's arithmetic (activation.cuh); y
/// itself is not written. Bitwise equal to the plain GEMM followed by mlp_activation with
/// ActivationParams::paired. Needs the 64-row tiles (N <= 64), bf16 output without ReLU, norm-out
/// or RoPE, M a multiple of 16 and m_host a multiple of 16 (a pair never straddles the host / HBM
/// boundary). Source: LlamaMLP (HF modeling_llama.py: down(act(gate(x)) * up(x))); the engine's
/// decode step (gpu_engine.cc; docs/perf-notes.md session 35).
struct TieredGemmActOut {
  __nv_bfloat16* g_out = nullptr;  // [N, ldo] bf16, HBM (out): columns [0, M / 2); null: off
  int64_t ldo = 0;                 // elements between rows of g_out (0: M / 2)
  Activation act = Activation::kSilu;
};

/// The fields of one CTA's record in TieredGemmArgs::g_trace, u64 each: the SM id, then %globaltimer
/// stamps in ns at entry, after the producer's dependency wait, at the first full stage, at the end
/// of math group 0 and of group 1, then group 0's unit count; the last field is unused.
enum TieredGemmTraceField : int {
  kGemmTraceSm,
  kGemmTraceEntry,
  kGemmTraceDependency,
  kGemmTraceFirstFull,
  kGemmTraceDone0,
  kGemmTraceDone1,
  kGemmTraceUnits,
  kGemmTraceReserved,
  kGemmTraceFields
};

struct TieredGemmArgs {
  const __nv_bfloat16* g_x = nullptr;     // [N, ldx] bf16, HBM: first K columns used (16-byte aligned)
  int64_t ldx = 0;                        // elements between rows of x (0: K); a multiple of 8
  const __nv_bfloat16* h_w = nullptr;     // [m_host, K] bf16, pinned host memory (cudaHostRegister'd,
                                          //   mapped), rows [0, m_host) of W; may be null when m_host == 0
  const __nv_bfloat16* g_w = nullptr;     // [M - m_host, K] bf16, HBM, rows [m_host, M) of W; may be
                                          //   null when m_host == M
  const __nv_bfloat16* g_bias = nullptr;  // [M] bf16, HBM; null = no bias
  void* g_y = nullptr;                    // [N, ldy] bf16 or fp32 (out), HBM: columns [0, M) written
  int64_t ldy = 0;                        // elements between rows of y (0: M)
  TieredGemmOut out = TieredGemmOut::kBf16;
  bool relu = false;                      // y = relu(x W^T + bias)
  bool host_rows_staged = false;          // h_w is an HBM copy of the host rows (the prefetch offload
                                          //   mode's staging ring), so it is not checked for pinned
                                          //   mapped host memory; plan the schedule with HBM limits
  int32_t early_w_stages = -1;            // W stages an HBM CTA requests before waiting for the
                                          //   previous kernel (programmatic dependent launch; capped
                                          //   by its ring); -1: the tuned default (3 for the 64-row
                                          //   tiles, the whole ring for the 128-row tiles; kEarlyWideStages)
  TieredGemmNormOut norm_out;             // g_residual non-null: the norm-out epilogue (y not written;
                                          //   g_y may be null)
  TieredGemmNormIn norm_in;               // g_sumsq non-null: the norm-in epilogue
  TieredGemmRopeOut rope;                 // g_positions non-null: the RoPE + KV append epilogue
  TieredGemmActOut act_out;               // g_out non-null: the gated activation epilogue (y not
                                          //   written; g_y may be null)
  uint64_t* g_trace = nullptr;            // diagnostics (bench/tiered_gemm_probe.cu `trace`, the
                                          //   engine's DAK_GEMM_TRACE): HBM, [host_ctas + hbm_ctas,
                                          //   kGemmTraceFields] u64 per CTA (TieredGemmTraceField);
                                          //   null: off
};

/// The congestion limits `base` with the device's co-residency of multicast clusters filled in
/// (cluster4_ctas: CTAs of the 128 x 128 kernel that can be resident at once in clusters of 4, from
/// cudaOccupancyMaxActiveClusters on the current device; asked once per process). Throws
/// dak::Error on a CUDA error.
TieredGemmLinkLimits tiered_gemm_cluster_limits(TieredGemmLinkLimits base = {});

/// Zeroes the workspace's tile counters (once, after allocating it; every run leaves them zero).
/// `g_workspace`: HBM, schedule.workspace_bytes() bytes, 256-byte aligned.
void tiered_gemm_workspace_init(void* g_workspace, const TieredGemmSchedule& schedule, cudaStream_t stream);

/// Enqueues the GEMM described by `schedule` (M, N, K, m_host and launch parameters; see
/// plan_tiered_gemm) on `stream`; graph-capturable (TMA descriptors are encoded on the host at
/// call time and passed by value; no allocation, no synchronization). `g_workspace` holds
/// schedule.workspace_bytes() bytes, initialized once by tiered_gemm_workspace_init, and is not
/// shared with a concurrently running GEMM.
/// Throws dak::Error for an invalid schedule, misaligned or missing pointers (a side with rows
/// needs its pointer), host memory that is not mapped for the device, a norm, RoPE or activation
/// epilogue the schedule cannot carry (TieredGemmNormOut / NormIn / RopeOut / ActOut: their
/// conditions), or a launch failure.
void tiered_gemm(const TieredGemmArgs& args, const TieredGemmSchedule& schedule, void* g_workspace,
                 cudaStream_t stream);

}  // namespace dak::gpu
