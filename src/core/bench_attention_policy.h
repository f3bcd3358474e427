// How `dak bench attention` times a cell (issue 5's benchmark): shared by the GPU measurement
// (gpu/bench_attention.cc) and the CLI's --dry-run, which builds without a GPU.
#pragma once

#include <cstdint>
#include <functional>

#include "core/tiered_attention_schedule.h"

namespace dak {

/// Cells whose KV cache of one layer (K and V, bf16: 4 * B * ctx * Hkv * D bytes) is smaller than
/// this finish in microseconds, where one launch is mostly launch latency: they are timed per layer
/// of a graph-replayed stack of kAttentionStackLayers layers (each its own K / V), as the decode
/// graph runs them. Bytes.
constexpr uint64_t kAttentionStackBelowBytes = 256ull << 20;
constexpr int kAttentionStackLayers = 8;

/// Layers a cell with `kv_bytes` of KV per layer is timed over: kAttentionStackLayers below
/// kAttentionStackBelowBytes, else 1 (a single launch).
constexpr int attention_bench_layers(uint64_t kv_bytes) {
  return kv_bytes < kAttentionStackBelowBytes ? kAttentionStackLayers : 1;
}

/// DAK_BENCH_KV_PAD_ROWS=N (0 to 4096; an A/B switch, docs/perf-notes.md session 43): every
/// (sequence, kv head) K / V block of `dak bench attention` holds context + N positions, so that
/// the blocks do not start at multiples of a power of two; the sequences keep `context` keys (the
/// bytes read, the ideal and EB are unchanged), and the attention is planned for context + N
/// positions (the measurement and --dry-run alike), as the engine would plan a cache allocated that
/// large. 0 when unset; any other value is ignored with a notice (core/env.h). Read once.
int64_t attention_bench_kv_pad_rows();

/// The congestion limits `dak bench attention` plans with: `limits`, with host_warps_below_4 off
/// when --host-ctas or --host-stages is given (> 0), so the plan's host CTAs run 4 warps and the
/// flags mean what they always meant (host CTAs of 4 warps, steps in flight per warp).
TieredAttentionLinkLimits attention_bench_limits(TieredAttentionLinkLimits limits, int32_t host_ctas,
                                                 int32_t host_stages);

/// `dak bench attention`'s schedule overrides (--host-ctas, --host-stages, --hbm-stages) applied to
/// a plan for `sm_count` SMs holding `ctas_per_sm` CTAs each, as the measurement and --dry-run apply
/// them: host_ctas where the plan has host CTAs, with the HBM CTAs counted again by the plan's rule
/// (tiered_attention_hbm_ctas: the slots the host CTAs leave, at least 1); each ring depth, where > 0
/// (0 keeps the plan's); then refit_smem_merge, which keeps the SMEM merge only where it still fits
/// beside the rings. The host flags count host CTAs of 4 warps: plan with
/// attention_bench_limits(), which keeps host_warps at 4 under a host override.
void apply_attention_bench_overrides(TieredAttentionSchedule& schedule, int32_t host_ctas, int32_t host_stages,
                                     int32_t hbm_stages, int64_t sm_count, int64_t ctas_per_sm);

/// The schedule `dak bench attention` measures, and --dry-run prints, at one point: the plan for
/// `sm_count` SMs holding 2 CTAs each with the overrides applied (apply_attention_bench_overrides;
/// 0 keeps the plan's), planned again for the n CTAs an SM that `ctas_per_sm` (the resident CTAs
/// per SM of a schedule: the CUDA occupancy API on a GPU, the 2-CTA SMEM limit in --dry-run) gives
/// where n is not 2, as the engine plans (tiered_attention_schedule; session 43: a deep ring's 2
/// CTAs an SM ran in two waves). Validated; throws dak::Error where n is 0 (the rings do not fit an
/// SM) and as plan_tiered_attention and validate() do.
TieredAttentionSchedule plan_attention_bench_point(const TieredAttentionShape& shape, int64_t b_host, int64_t sm_count,
                                                   const TieredAttentionLinkLimits& limits, int32_t host_ctas,
                                                   int32_t host_stages, int32_t hbm_stages,
                                                   const std::function<int(const TieredAttentionSchedule&)>& ctas_per_sm);

}  // namespace dak
