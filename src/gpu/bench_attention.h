// The measurements of `dak bench attention` (issue 5): one layer's decode attention with the KV
// cache split along the batch between pinned host memory and HBM (kernels/tiered_attention.h),
// swept over models' attention shapes, batch, context and offload ratio, next to the ideal line
// of the same run and to the HBM decode kernel (kernels/attention_decode.h) as the baseline.
//
// Definitions (DESIGN.md §2, §6):
//   C      KV bytes one decode step reads in the layer: B * ctx * Hkv * D * 2 (K and V) * 2 bytes;
//          every sequence holds ctx keys (max_ctx = ctx).
//   x      b_host / B: the fraction of C in the host tier.
//   B_g    best HBM read bandwidth of this run (measure_hbm_bandwidth: TMA bulk stream).
//   B_h    host read bandwidth of this run: measure_host_read_bandwidth (gpu/bench.h), the same
//          TMA bulk stream over the start of the pinned host tier (before the KV is placed there),
//          median launch of the best (CTAs, stages) configuration, as in `dak bench gemm`.
//   time   GPU time of one attention launch (split kernel + combine kernel when there are splits),
//          CUDA events around it, the launches queued behind a host gate so they run back to back,
//          an HBM read of 256 MiB before each (L2 flush; host memory is not cached in L2). Median
//          over `repeats` launches after one warm-up; [min, max] is the spread.
//          Cells with C < 256 MiB (kAttentionStackBelowBytes) finish in microseconds, where one
//          launch's start and end dominate: as `dak bench gemm` does for small weights, their time is
//          per layer of a graph-replayed stack of 8 layers' attention (each layer its own K/V and
//          host tier, the kernels chained by programmatic dependent launch as in the decode graph),
//          one replay per timed run, divided by 8; the single launch is reported beside it.
//   EB     C / median time.   ideal = max((1 - x) C / B_g, x C / B_h);   of ideal = ideal / time.
//   baseline  attention_decode at x = 0 on the same HBM bytes viewed in the engine's cache layout
//          [B][ctx][Hkv][D] (same byte count; the values differ, the time does not).
// Targets (issue 5): of ideal >= 0.9 at every point; at x = 0 the tiered kernel no slower than the
// baseline (met when its median is at most the baseline's, or their [min, max] ranges overlap).
// Memory: one HBM buffer holds the largest cell's KV (HBM tier = sequences [b_host, B) of it), one
// pinned host buffer up to max_host_bytes (host tier = sequences [0, b_host) of it); cells whose
// KV exceeds max_kv_bytes or free HBM, and points whose host tier exceeds the pinned buffer, are
// skipped and reported with the reason.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/bench_attention_policy.h"  // attention_bench_layers
#include "core/tiered_attention_schedule.h"
#include "gpu/bench.h"

namespace dak::gpu {

/// One model's attention layer.
struct AttentionBenchShape {
  std::string model;  // "llama-2-7b"
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
};

struct AttentionBenchOptions {
  std::vector<AttentionBenchShape> models;
  std::vector<int64_t> batches;
  std::vector<int64_t> contexts;
  std::vector<double> ratios;                   // b_host / B in [0, 1]; b_host = round(ratio * B)
  bool balance_point = true;                    // add b_host = round(B * B_h / (B_g + B_h)) when > 0 and new
  int repeats = 5;                              // timed launches per point (>= 5), after one warm-up
  uint64_t max_kv_bytes = 100ull << 30;         // cells with more KV in the layer are skipped
  uint64_t max_host_bytes = 0;                  // pinned host tier; 0: MemAvailable - 16 GiB
  uint64_t hbm_buffer_bytes = 2ull << 30;       // B_g measurement buffer
  int hbm_runs = 10;                            // timed launches per configuration for B_g
  int32_t host_ctas = 0;                        // > 0: override the default schedule's value
  int32_t host_stages = 0;
  int32_t hbm_stages = 0;
  TieredAttentionLinkLimits limits;             // congestion cap for the default schedules
};

struct AttentionBenchPoint {
  int64_t b_host = 0;
  double ratio = 0;            // b_host / B
  bool balance_point = false;  // the b_host nearest the ideal balance x* = B_h / (B_g + B_h)
  bool skipped = false;
  std::string skip_reason;
  Spread time_s;               // per layer: of the stack when the cell has layers > 1, else one launch
  Spread launch_s;             // one launch
  double eb_bytes_per_s = 0;
  double ideal_s = 0;
  double of_ideal = 0;         // ideal_s / time_s.median
  bool target_met = false;     // of_ideal >= kAttentionTargetOfIdeal
  std::string schedule;        // TieredAttentionSchedule::to_string()
};

struct AttentionBenchCell {
  AttentionBenchShape shape;
  int64_t batch = 0;
  int64_t context = 0;
  uint64_t kv_bytes = 0;  // C
  bool skipped = false;
  std::string skip_reason;
  std::string split;      // "num_splits x split_keys" of the tiered kernel
  std::string baseline_split;
  int layers = 1;         // > 1: times are per layer of a graph-replayed stack of this many layers
  Spread baseline_s;      // attention_decode at x = 0 (per layer, as time_s)
  Spread baseline_launch_s;  // one launch of it
  double baseline_eb_bytes_per_s = 0;
  bool baseline_target_met = false;  // tiered at b_host = 0 no slower than the baseline
  std::vector<AttentionBenchPoint> points;
};

struct AttentionBenchResult {
  std::string device;
  int sm_count = 0;
  HbmBandwidth hbm;
  HostReadBandwidth host;
  uint64_t host_tier_bytes = 0;  // pinned for the host tier (K and V)
  double pin_s = 0;
  double balance_ratio = 0;      // x* = B_h / (B_g + B_h)
  bool gate_timed_out = false;   // some launches were not queued in time: their times include host gaps
  std::vector<AttentionBenchCell> cells;
};

constexpr double kAttentionTargetOfIdeal = 0.9;

/// Runs the sweep on the current device; `progress` gets one line per step (may be empty).
/// Throws dak::Error for invalid options (repeats < 5, ratios outside [0, 1], unsupported
/// shapes), when nothing fits, or on a CUDA error.
AttentionBenchResult run_attention_bench(const AttentionBenchOptions& options,
                                         const std::function<void(const std::string&)>& progress);

}  // namespace dak::gpu
