// Work decomposition of tiered decode attention (the DAK paper's "SplitK attention", DESIGN.md
// §4), shared by the kernel (src/gpu/kernels/tiered_attention.h), the benchmark and the planner,
// and unit-tested on the CPU.
//
// Problem: one query per sequence b in [0, B), H query heads, Hkv kv heads (G = H / Hkv <= 16),
// head dim D in {64, 80, 96, 128, 256}, len[b] keys (read from device memory). The KV cache is
// split along the batch: sequences [0, b_host) keep K/V in pinned host memory (the host tier),
// sequences [b_host, B) in HBM (the HBM tier). Both tiers use the same layout per layer:
//   k, v: [tier sequences][Hkv][max_ctx][D] bf16   (sequence b at tier slot b, resp. b - b_host)
// so the keys of one (sequence, kv head) are one contiguous [max_ctx, D] block: a step of 16
// keys is one contiguous 16 * D * 2 byte TMA bulk copy per operand.
// Work items: (sequence, kv head, split). The keys of a sequence are cut into num_splits splits
// of split_keys keys (a multiple of 16) from position 0; split_keys depends only on the shape,
// max_ctx and the device's SM count (choose_tiered_attention_split), never on b_host or on how
// many SMs serve each side, so the partial softmaxes and their combine are the same arithmetic
// for every offload ratio: the output is bitwise identical for every b_host (split invariance).
// Workers: every warp of the persistent grid is an independent worker. CTAs [0, host_ctas) are
// host CTAs (their first host_warps warps take host items only; the others idle), the others HBM
// CTAs (4 workers each); worker w of a side takes that side's items w, w + workers, ... (items of
// one (sequence, kv head) are consecutive, so its splits run side by side).
// Congestion control (DESIGN.md §1): a host warp keeps up to host_stages steps in flight, so
// host_ctas * host_warps * host_stages steps of staging_step_bytes(D) = 16 keys x (K + V) stay
// under the measured in-flight cap. With fewer host items than 4 warps of the host CTAs the cap
// allows, host CTAs may run 2 (or 1) warps with deeper rings in the same SMEM budget, so that the
// busy warps keep more bytes in flight (plan_tiered_attention).
#pragma once

#include <cstdint>
#include <string>

#include "core/hopper_limits.h"

#ifndef DAK_HD
#if defined(__CUDACC__)
#define DAK_HD __host__ __device__
#else
#define DAK_HD
#endif
#endif

namespace dak {

struct HardwareProfile;

namespace tiered_attention {

constexpr int32_t kWarps = 4;                    // warps (workers) per CTA
constexpr int32_t kThreads = kWarps * 32;
constexpr int32_t kStepKeys = 16;                // keys a warp consumes per pipeline step (one mma k-step of P.V)
constexpr int32_t kMaxGroup = 16;                // query heads per kv head: the 16 rows of the mma tile
constexpr int32_t kRowPad = 8;                   // bf16 padding per staged SMEM row (conflict-free ldmatrix)
constexpr int32_t kMaxStages = 8;                // deepest ring per warp (cp.async.wait_group immediates)
constexpr int64_t kSmemTargetBytes = 110 * 1024; // default plans' rings stay under it (2 CTAs per SM; with the
                                                 // SMEM merge a plan may reach kSmemTwoCtaBytes)
// The kernel's static SMEM, at most (cudaFuncAttributes::sharedSizeBytes; 256 bytes measured in
// session 41); a gpu test checks it.
constexpr int64_t kStaticSmemAllowanceBytes = 512;
// Dynamic SMEM per CTA, at most: sm_90's per-CTA opt-in maximum less the static allowance (a plan
// right at the opt-in maximum would leave no room for the kernel's static SMEM and not launch).
constexpr int64_t kSmemLimitBytes = hopper::kSmemPerCtaMaxBytes - kStaticSmemAllowanceBytes;
// Dynamic SMEM at which two CTAs still fit an SM: half the SM's SMEM less the per-CTA reservation
// and the static allowance (115,200 bytes, 112.5 KiB). A gpu test checks 2 CTAs at it and 1 at 2 KiB
// more, for every head_dim. The SMEM merge may fill up to it (refit_smem_merge; if the
// static SMEM ever grew past the allowance, such plans would get 1 CTA per SM and the engine would
// re-plan them for it, silently: that test is the guard). At the limit two CTAs leave an SM < 1 KiB.
constexpr int64_t kSmemTwoCtaBytes =
    hopper::kSmemPerSmBytes / 2 - hopper::kSmemReservedPerCtaBytes - kStaticSmemAllowanceBytes;
static_assert(kSmemTargetBytes <= kSmemTwoCtaBytes, "the 2-CTA target must leave two CTAs an SM");
constexpr int32_t kStagedMinKeys = 512;           // default plans load HBM steps staged from this split size

DAK_HD constexpr bool head_dim_supported(int64_t d) { return d == 64 || d == 80 || d == 96 || d == 128 || d == 256; }

/// Whether a CTA can merge the splits of a sequence itself (TieredAttentionSchedule::cta_combine):
/// more than one split, and their count divides the kWarps warps of a CTA (2 or 4), so that every
/// round of items gives each CTA whole (sequence, kv head) pairs.
DAK_HD constexpr bool cta_combine_possible(int64_t num_splits) { return num_splits > 1 && kWarps % num_splits == 0; }

/// SMEM bytes of the partials a CTA merges in SMEM (TieredAttentionSchedule::smem_merge): per warp,
/// its item's unnormalized output [G][D] fp32, then (m, l) [G][2] fp32.
DAK_HD constexpr int64_t merge_smem_bytes(int64_t group, int64_t d) { return kWarps * group * (d + 2) * 4; }

/// SMEM bytes of one warp's padded step (16 K rows then 16 V rows of D + 8 bf16): what the
/// tensor-core loop reads, for both sides.
DAK_HD constexpr int64_t padded_step_bytes(int64_t d) { return 2 * kStepKeys * (d + kRowPad) * 2; }
/// SMEM bytes of one warp's unpadded step as TMA lands it (16 K rows then 16 V rows of D bf16).
DAK_HD constexpr int64_t staging_step_bytes(int64_t d) { return 2 * kStepKeys * d * 2; }
/// K + V bytes of one CTA stage (4 warps x 16 keys), the unit of the congestion model.
DAK_HD constexpr int64_t cta_stage_bytes(int64_t d) { return kWarps * staging_step_bytes(d); }

/// Dynamic SMEM of an HBM CTA: per warp a ring of `stages` padded steps (cp.async targets).
DAK_HD constexpr int64_t hbm_cta_smem_bytes(int64_t d, int64_t stages) {
  return kWarps * stages * padded_step_bytes(d);
}
/// Dynamic SMEM of a host CTA whose `warps` warps (1, 2 or 4) run items: per such warp one padded
/// step, a ring of `stages` staging steps (TMA targets) and one 8-byte mbarrier per staging step.
/// Layout: [warp] padded | [warp][stage] staging | [warp][stage] mbarrier. A staged HBM CTA has the
/// same layout with 4 warps.
DAK_HD constexpr int64_t host_cta_smem_bytes(int64_t d, int64_t stages, int64_t warps = kWarps) {
  return warps * (padded_step_bytes(d) + stages * staging_step_bytes(d) + stages * 8);
}

/// A tiny ring position (stage, phase) usable on host and device: advancing past the last stage
/// wraps to stage 0 and flips the phase (the mbarrier parity a consumer waits for).
struct PipeState {
  int32_t stages = 1;
  int32_t stage = 0;
  uint32_t phase = 0;
  DAK_HD void advance() {
    if (++stage == stages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

}  // namespace tiered_attention

struct TieredAttentionShape {
  int64_t batch = 0;         // B sequences (one query each)
  int64_t num_heads = 0;     // H
  int64_t num_kv_heads = 0;  // Hkv, divides H, H / Hkv <= 16
  int64_t head_dim = 0;      // D in {64, 80, 96, 128, 256}
  int64_t max_ctx = 0;       // positions per sequence in each tier (the row count of a kv block)
  DAK_HD int64_t group() const { return num_kv_heads > 0 ? num_heads / num_kv_heads : 0; }
  /// K + V bytes of one tier sequence: 2 * Hkv * max_ctx * D * 2.
  DAK_HD int64_t seq_kv_bytes() const { return 4 * num_kv_heads * max_ctx * head_dim; }
  bool operator==(const TieredAttentionShape&) const = default;
};

struct TieredAttentionSplit {
  int32_t split_keys = 0;  // keys per split, a multiple of 16
  int32_t num_splits = 1;  // ceil(max_ctx / split_keys)
  bool operator==(const TieredAttentionSplit&) const = default;
};

/// Congestion-control inputs from the hardware profile (hardware_profile.h, host_link).
struct TieredAttentionLinkLimits {
  int64_t inflight_cap_bytes = 512 << 10;      // host bytes in flight GPU-wide (measured best, see below)
  int64_t cta_inflight_cap_bytes = 192 << 10;  // host bytes in flight per host CTA (ring depth limit)
  // Whether the plan may run host CTAs of 2 or 1 warps for few host items (host_warps);
  // `dak bench attention`'s host overrides plan without it (they count host CTAs of 4 warps).
  bool host_warps_below_4 = true;
};

/// From the profile's host_link: inflight_cap_bytes, but at most the default 512 KiB, and
/// max_stages_per_cta * stage_bytes per CTA (the defaults where the profile has no value). The
/// 512 KiB were measured on the H200 (session 7, `dak bench attention`, Llama-2-7B, context 4096,
/// host CTAs x steps): at the balance point (1 of 64 / 6 of 512 sequences on the host, where the
/// host side binds beside a busy HBM side) 4 x 2 (256 KiB) reached 83 / 80 % of ideal, 8 x 2 and
/// 4 x 4 (512 KiB) 99 / 95 %, 8 x 4 and 16 x 2 (1 MiB, the GEMM's cap) 99 / 69-87 %; at 1/8 of the
/// batch on the host 98 % -> 100 %.
TieredAttentionLinkLimits tiered_attention_link_limits(const HardwareProfile& profile);

/// A complete launch description, built by plan_tiered_attention(); `dak profile` or the
/// benchmark may override the congestion fields (host_ctas, host_stages, hbm_stages).
struct TieredAttentionSchedule {
  TieredAttentionShape shape;
  int64_t b_host = 0;       // sequences [0, b_host) on the host tier
  TieredAttentionSplit split;
  int32_t host_ctas = 0;    // CTAs whose first host_warps warps serve host items only
  int32_t hbm_ctas = 0;     // CTAs whose 4 warps serve HBM items only
  int32_t host_stages = 1;  // steps in flight per host warp (TMA ring depth), 1..8
  // Warps per host CTA that run host items: 4, or 2 / 1 when the host items are too few to keep 4
  // warps of every host CTA busy; the others only meet the CTA's barriers. A host CTA's SMEM holds
  // the rings of these warps only (host_cta_smem_bytes), so 2 warps get twice the ring depth of 4
  // in the same SMEM. With cta_combine, a multiple of num_splits. The item of worker w is the same
  // for every value: which warp runs it changes, not its arithmetic (the same bits).
  int32_t host_warps = tiered_attention::kWarps;
  int32_t hbm_stages = 2;   // steps in flight per HBM warp (ring depth), 1..8
  // How HBM warps load a step: false = 16-byte cp.async per lane (the rows past len zero-filled by
  // the copy); true = one TMA bulk copy per live K / V row into the padded step, completing on the
  // slot's mbarrier (the consumer zeroes the rows past len). Same SMEM layout, same output bits.
  bool hbm_bulk_rows = false;
  // HBM warps load a step as host warps do (overrides hbm_bulk_rows): one TMA bulk copy per operand
  // (16 contiguous rows of K, of V) into a ring of hbm_stages staging steps, then the warp copies the
  // landed rows into its one padded step (zeros past len). 2 bulk copies a step instead of up to 32
  // (bulk rows) or 16 cp.async per lane; SMEM as a host CTA (host_cta_smem_bytes). Same padded
  // step, same math, same output bits. The default plans take it for splits of >= kStagedMinKeys.
  bool hbm_staged = false;
  // Where the live splits of a sequence are merged: false = a second kernel (one CTA per (head,
  // sequence)); true = inside the attention kernel by the CTA whose warps ran them, after a CTA
  // barrier per round of items. Needs num_splits > 1 dividing kWarps (then a CTA's 4 warps hold
  // whole (sequence, kv head) pairs in every round: items of a pair are consecutive and every
  // round starts at a multiple of 4). Both merge in split order, with different operation
  // orders, so the two differ in the last bits; the choice depends only on the split, so every
  // b_host gives the same bits.
  bool cta_combine = false;
  // With cta_combine: the warps leave their partials in SMEM (merge_smem_bytes, after the rings)
  // instead of the HBM workspace, so the merge after the round's barrier reads SMEM, not L2 (on
  // the H100 the workspace's two L2 round trips took 3 us of batch 1's decode attention,
  // docs/perf-notes.md session 40); one more barrier per round keeps the next round's partials
  // from overwriting them. Same arithmetic in the same order: the same bits as the workspace
  // merge. On in the default plans where its area costs no CTA per SM (session 41 on an H100:
  // Llama-2-7B batch 1 decode 0.85 % faster); DAK_ATTN_SMEM_MERGE=0 turns it off for A/B runs.
  bool smem_merge = false;

  DAK_HD int64_t host_items() const { return b_host * shape.num_kv_heads * split.num_splits; }
  DAK_HD int64_t hbm_items() const { return (shape.batch - b_host) * shape.num_kv_heads * split.num_splits; }

  struct Item {
    int64_t seq;      // global sequence index in [0, B)
    int32_t kv_head;  // in [0, Hkv)
    int32_t split;    // in [0, num_splits)
  };
  /// Item u of one side: splits fastest, then kv heads, then sequences (host side from sequence
  /// 0, HBM side from sequence b_host).
  DAK_HD Item item(bool host_side, int64_t u) const {
    const int64_t per_seq = shape.num_kv_heads * split.num_splits;
    const int64_t seq = (host_side ? 0 : b_host) + u / per_seq;
    const int64_t r = u % per_seq;
    return Item{seq, int32_t(r / split.num_splits), int32_t(r % split.num_splits)};
  }
  /// Splits holding keys of a sequence with `len` keys (len clamped to [0, max_ctx]); a sequence
  /// with no key has one (split 0, which writes zeros). Only these run and are combined.
  DAK_HD int32_t live_splits(int64_t len) const {
    len = len < 0 ? 0 : (len > shape.max_ctx ? shape.max_ctx : len);
    const int64_t n = (len + split.split_keys - 1) / split.split_keys;
    return int32_t(n < 1 ? 1 : n);
  }

  /// Dynamic SMEM bytes per CTA: the larger of the two roles present, plus the merge area
  /// (merge_smem_bytes) with smem_merge.
  int64_t smem_bytes() const;
  /// An HBM CTA's dynamic SMEM bytes with a ring of `stages` steps on this schedule's load path:
  /// tiered_attention::host_cta_smem_bytes when hbm_staged, else tiered_attention::hbm_cta_smem_bytes.
  int64_t hbm_cta_smem_bytes(int64_t stages) const;
  /// Host bytes in flight GPU-wide: host_ctas * host_warps * host_stages * staging_step_bytes(D).
  int64_t host_inflight_bytes() const;
  /// HBM workspace of the split partials: fp32 (m, l) [B][H][num_splits][2] (m in log2 units),
  /// then, 256-byte aligned, fp32 unnormalized outputs [B][H][num_splits][D]. Independent of
  /// b_host and of the congestion fields.
  int64_t workspace_bytes() const;
  int64_t workspace_o_offset() const;  // bytes from the workspace start to the partial outputs

  /// Throws dak::Error (naming the field) for an unsupported shape, b_host outside [0, B], a
  /// split that does not cover max_ctx, a side with items but no CTA, stages outside [1, 8] or
  /// SMEM beyond the per-CTA limit.
  void validate() const;
  std::string to_string() const;
};

/// Throws dak::Error unless the kernel supports the shape (B >= 1, D supported, Hkv divides H,
/// G <= 16, max_ctx in [1, 2^31 - 16]).
void check_tiered_attention_shape(const TieredAttentionShape& shape);

/// The key split for a shape on a GPU of `sm_count` SMs: the number of splits S minimizing, in
/// 16-key steps, the estimated makespan ceil(B * Hkv * S / workers) * (steps per split + 2) of the
/// worst case (every sequence at max_ctx; workers = 4 warps x 2 CTAs x sm_count), plus 2 for the
/// merge when S > 1, plus 4/3 x (CTAs / sm_count) for the SMs the launch keeps from the next
/// kernel's early CTAs (CTAs = B * Hkv * S / 4, at most 2 per SM); ties to the fewest splits.
/// Measured on the H100 (docs/perf-notes.md session 34), Llama-2-7B decode at 64 keys: batch 8
/// takes 1 split instead of 4 (256 -> 64 CTAs), TPOT -1.3 %; batch 1 keeps 4. Long contexts keep
/// their many splits. Where that gives 2 splits and 4 would hold at least 8 steps (128 keys) each,
/// the last too (from 512 keys on), 4 (measured on the H100, session 46: +2 to +7 points of ideal
/// at 512 keys, equal at 4096 and 32768). Depends only on (B, Hkv, max_ctx, sm_count): never on
/// b_host. DAK_ATTN_SPLIT_RULE=makespan drops the two terms and the 2 -> 4 step (the rule before
/// session 34); DAK_ATTN_SPLIT_RULE=two drops only the 2 -> 4 step (the rule before session 46).
/// DAK_ATTN_SPLITS=1..16 (A/B runs) overrides the result: ceil(steps / N) steps per split, so N
/// splits or the nearest count below (with a notice); above 4 the combine kernel merges them.
/// (A rule that priced the combine kernel of 3 or 5 splits measured equal on Llama-2-7B and 2 %
/// slower on Llama-3-8B: docs/perf-notes.md session 32.)
TieredAttentionSplit choose_tiered_attention_split(const TieredAttentionShape& shape, int64_t sm_count);

/// HBM CTAs of `schedule` (its shape, b_host, split and host_ctas) on `sm_count` SMs that hold
/// `ctas_per_sm` CTAs of the launch each: sm_count * ctas_per_sm - host_ctas, the CTA slots the host
/// CTAs leave (every CTA of a launch takes the same SMEM), at least 1 and at most ceil(HBM items / 4);
/// 0 without HBM items (plan_tiered_attention under DAK_ATTN_HBM_WAVES=1, an A/B switch of session
/// 46, launches ceil(HBM items / 4) instead, in waves). DAK_ATTN_HBM_FILL=0 (A/B runs) gives the
/// rule before session 44, (sm_count - host_ctas) * ctas_per_sm, at least 1. plan_tiered_attention and the overrides of
/// `dak bench attention --host-ctas` (core/bench_attention_policy.h) both count with it.
int32_t tiered_attention_hbm_ctas(const TieredAttentionSchedule& schedule, int64_t sm_count, int64_t ctas_per_sm);

/// The default schedule for `b_host` host sequences on `sm_count` SMs with `hbm_ctas_per_sm`
/// resident HBM CTAs per SM (the kernel's occupancy at this SMEM size):
/// - hbm_stages: the most in [2, 8] whose HBM CTA SMEM (hbm_cta_smem_bytes, or host_cta_smem_bytes
///   when staged) is <= 110 KiB (2 CTAs per SM), at least 2;
/// - host_stages: the most in [1, 4] with host_cta_smem_bytes <= max(110 KiB, the HBM CTA's) and
///   host_stages * cta_stage_bytes <= cta_inflight_cap_bytes (at least 1);
/// - host_ctas: 0 without host sequences, else inflight_cap / (host_stages * cta_stage_bytes),
///   at least 1, at most the host items' warps (ceil(items / 4)) and sm_count - 1 when HBM
///   items exist;
/// - host_warps: 4, unless 2 or 1 warps per host CTA (a multiple of num_splits with cta_combine)
///   with a deeper ring in the same SMEM budget keep more host bytes in flight on the busy warps
///   (min(items, host_ctas * host_warps) * host_stages steps) without more rounds of host items,
///   without fewer HBM CTAs (its host CTAs take only CTA slots the HBM side leaves empty), within
///   both in-flight caps, and without losing the SMEM merge the 4-warp plan has; the most
///   bytes in flight win, then more busy warps, then more warps per CTA. Session 45 (H100): at
///   Llama-3-8B's balance point (1 of 64 sequences on the host: 16 items at 4096 keys) the plan
///   had 4 host CTAs x 4 warps x 2 steps (256 KiB), and the host side read 44-45 GB/s beside the
///   busy HBM side against B_h = 51.4; 8 CTAs x 2 warps x 4 steps (512 KiB; the HBM side's 1008
///   items need 252 CTAs either way) read 92.6-93.0 % of ideal instead of 83.0 % (64 x 32768:
///   96.2-97.2 % instead of 85.7-86.0 %). With one host sequence of 512 (8 items), 8 CTAs x 1 warp x
///   8 steps took 6 slots from the HBM side and read 0.4-1.0 points below the 4-warp plan, hence
///   the rule on HBM CTAs. (Since session 46 those 4096- and 32768-key cells run 4 splits: 32 host
///   items on 8 CTAs x 4 warps, the same 512 KiB in flight; 2 splits, and the spread, remain below
///   512 keys, e.g. 496.)
///   DAK_ATTN_HOST_SPREAD=0 (A/B runs) or limits.host_warps_below_4 = false keeps 4 warps;
/// - hbm_ctas: sm_count * hbm_ctas_per_sm - host_ctas (the slots the host CTAs leave: every CTA of
///   a launch takes the same SMEM), at most ceil(HBM items / 4) (exactly that under
///   DAK_ATTN_HBM_WAVES=1: the CTAs then run in waves), 0 without HBM items
///   (tiered_attention_hbm_ctas). Before session 44 it was (sm_count - host_ctas) * hbm_ctas_per_sm,
///   which left hbm_ctas_per_sm - 1 slots empty for each host CTA; with one host sequence of 64 at
///   4096 keys (Llama-2-7B) that put 2016 HBM items on 992 warps, so 32 warps ran a third round.
///   DAK_ATTN_HBM_FILL=0 keeps that rule (A/B runs);
/// - cta_combine: num_splits in {2, 4} (divides kWarps), which saves the combine kernel's launch
///   and round trips;
/// - the HBM load path: staged (hbm_staged) for split_keys >= kStagedMinKeys, else cp.async
///   (hbm_bulk_rows stays false). Measured on an H100 (session 32, `dak bench attention` at x = 0,
///   two rounds): against bulk rows, which session 16 had chosen for those splits (~5 % faster than
///   cp.async there), staged steps reach 0.90-0.97 of ideal where bulk rows reached 0.86-0.92
///   (Llama-2-7B batch 64 at 4096 keys 1563 -> 1412 us, batch 8 at 32768 1529 -> 1411 us;
///   Llama-3-8B batch 64 at 32768 3034 -> 2823 us); on short splits cp.async stays (staged was
///   2-5 % slower on two of four such cells and decode at 32-64 keys 0.2-0.3 % slower).
///   DAK_ATTN_HBM_COPY=cp.async|bulk|staged in the environment forces one path (A/B measurements).
/// - smem_merge: with cta_combine, where the merge area keeps the SMEM within the 2-CTA limit
///   (kSmemTwoCtaBytes) when the rings were within it (else within kSmemLimitBytes).
///   GQA plans at short contexts need the room past the target: Llama-3-8B's 64-key rings of
///   104,448 bytes plus its G = 4 merge area of 8,320 pass it by 128 bytes; merging them in SMEM
///   made Llama-3-8B decode 1.0 % (batch 1) and 1.2 % (batch 8) faster on an H100 (session 43).
///   DAK_ATTN_SMEM_MERGE=0 turns it off.
/// Throws dak::Error for an unsupported shape, b_host outside [0, B] or sm_count < 2.
TieredAttentionSchedule plan_tiered_attention(const TieredAttentionShape& shape, int64_t b_host, int64_t sm_count,
                                              int64_t hbm_ctas_per_sm = 2,
                                              const TieredAttentionLinkLimits& limits = {});

/// Sets schedule.smem_merge by plan_tiered_attention's rule (above) for the schedule's current rings
/// and cta_combine; callers that override a planned schedule's stages (`dak bench attention
/// --hbm-stages`) call it again, so that deeper rings fall back to the workspace merge (same bits)
/// instead of failing validation or losing a CTA per SM, and shallower ones regain it.
void refit_smem_merge(TieredAttentionSchedule& schedule);

}  // namespace dak
