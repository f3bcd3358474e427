// The arithmetic of `dak profile` (gpu/profile.h) that needs no GPU: medians, the launch-overhead
// line fit, and how the hardware-profile fields (core/hardware_profile.h) are derived from the raw
// measurements, plus the tiered-GEMM sweep grid. Kept here so it is unit-tested on the CPU.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/hardware_profile.h"

namespace dak {

/// Median of `v` (mean of the two middle values for an even count); 0 for an empty vector.
double median_of(std::vector<double> v);

/// y = intercept + slope * x by ordinary least squares.
struct LineFit {
  double intercept = 0;
  double slope = 0;
};
/// Throws dak::Error for fewer than two points, mismatched sizes, or all x equal.
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y);

/// One point of the SM-path host read sweep: `ctas` CTAs (one per SM) each keeping `stages` TMA
/// bulk copies of `chunk_bytes` in flight from pinned host memory read `gbps` (median).
struct HostReadPoint {
  int64_t ctas = 0;
  int64_t stages = 0;
  int64_t chunk_bytes = 0;
  double gbps = 0;
  int64_t inflight_bytes() const { return ctas * stages * chunk_bytes; }
};

/// The smallest in-flight byte count among `points` whose bandwidth reaches `fraction` of the best
/// point's (the bytes in flight GPU-wide that saturate the link). Throws dak::Error when empty.
int64_t saturating_inflight_bytes(const std::vector<HostReadPoint>& points, double fraction);

/// Round trip of one stage: chunk_bytes / gbps of a 1-CTA 1-stage point, microseconds.
double stage_latency_us(const HostReadPoint& one_cta_one_stage);

/// The congestion cap (host_link.inflight_cap_bytes) from a contention curve: the largest in-flight
/// byte count X such that every point with host CTAs and at most X bytes in flight keeps HBM
/// bandwidth >= keep_fraction of its baseline (the host_ctas 0 point with the same stages and HBM
/// CTAs). When even the smallest in-flight size loses more, that smallest size (a host CTA must
/// have something in flight). Throws dak::Error when there is no point with host CTAs or one lacks
/// its baseline.
int64_t congestion_cap_bytes(const std::vector<ContentionPoint>& points, double keep_fraction);

/// One measured dense bf16 GEMM rate: `tokens` = N of y[N, M] = x[N, K] W[M, K]^T.
struct TensorRatePoint {
  int64_t tokens = 0;
  double tflops = 0;
};

/// Tensor-rate classes (compute.tensor_tflops) from measured points: every measured N but the
/// largest becomes a class {max_tokens N, its rate}, the largest becomes the unlimited class
/// {max_tokens 0, its rate}; so a GEMM over N tokens gets the rate measured at the smallest
/// measured N >= N. Throws dak::Error for no points or duplicate N.
std::vector<TensorRateClass> tensor_rate_classes(std::vector<TensorRatePoint> points);

/// The tiered-GEMM sweep's outcome for one (M, N, K, m_host): the fastest launch parameters and the
/// default schedule's (plan_tiered_gemm) for comparison.
struct GemmSweepResult {
  std::string label;         // "llama-2-7b gate_up_proj"
  TieredGemmTuning best;
  TieredGemmTuning planned;  // the default schedule, timed the same way
  int64_t configs = 0;       // launch configurations timed
};

/// Everything `dak profile` measures (gpu/profile.h), as plain numbers. GB/s = 1e9 B/s.
struct ProfileMeasurements {
  int runs = 0;  // timed runs behind every median
  // Device (queried, not timed).
  std::string device_name;
  int64_t sm_count = 0;
  int64_t hbm_capacity_bytes = 0;
  int64_t hbm_free_after_context_bytes = 0;
  int64_t smem_optin_bytes = 0;
  int64_t cluster4_ctas = 0;  // CTAs of the tiered GEMM co-resident in clusters of 4 (0: not queried)
  // B_g: best single launch of the TMA bulk HBM stream (gpu/bench.h measure_hbm_bandwidth).
  double hbm_read_gbps = 0;
  double hbm_read_median_gbps = 0;
  int64_t hbm_buffer_bytes = 0;
  int64_t hbm_chunk_bytes = 0;
  int64_t hbm_stages = 0;
  // B_h, SM path: the CTAs x stages sweep (medians).
  std::vector<HostReadPoint> host_reads;
  // B_h, copy engine: H2D cudaMemcpyAsync from pinned host memory into HBM (median, min, max).
  double copy_engine_gbps = 0, copy_engine_min_gbps = 0, copy_engine_max_gbps = 0;
  int64_t copy_bytes = 0;
  // The link shared: the copy engine and `shared_host_ctas` SM readers at once (medians).
  int64_t shared_host_ctas = 0, shared_stages = 0;
  double shared_sm_gbps = 0, shared_ce_gbps = 0, shared_total_gbps = 0;
  // HBM read (TMA bulk stream, all SMs) alone and while an H2D copy runs (medians).
  double hbm_alone_gbps = 0, hbm_during_copy_gbps = 0;
  // Contention curve, and the host bandwidth of each point (parallel to `contention`).
  std::vector<ContentionPoint> contention;
  std::vector<double> contention_host_gbps;
  // Dense bf16 GEMM rate (cuBLASLt) at M = K = tensor_mk.
  int64_t tensor_mk = 0;
  std::vector<TensorRatePoint> tensor;
  // Graph-replayed HBM streams: (bytes per kernel, seconds per kernel) and the fit t = a + S / B.
  std::vector<std::pair<int64_t, double>> launch_points;
  double launch_overhead_us = 0, launch_fit_gbps = 0;
  // Pinning.
  int64_t pin_bytes = 0;
  double pin_seconds = 0;
  // Zero-copy: cuBLASLt GEMMs with W in host memory (host bytes / median time), and the decode
  // attention kernel with every sequence's K/V in host memory (KV bytes / median time; 0 when the
  // host buffer was too small), with the KV bytes it read.
  std::vector<ZeroCopyGemmPoint> zero_copy_gemm;
  double zero_copy_attention_gbps = 0;
  int64_t zero_copy_attention_bytes = 0;
  // Tiered GEMM sweep, and the (shape, N) it skipped because the kernel refused them, with why.
  std::vector<GemmSweepResult> gemm;
  std::vector<std::string> gemm_skipped;
};

/// Fraction of HBM bandwidth a contention point may lose and still count as "no slowdown" when
/// deriving the congestion cap: 3 %, about twice the run-to-run spread of the probe's points.
inline constexpr double kCongestionKeepFraction = 0.97;
/// Fraction of the best SM read bandwidth at which the link counts as saturated.
inline constexpr double kLinkSaturatedFraction = 0.97;

/// The hardware profile (format v1) these measurements give, each value with a "sources" entry
/// "dak profile <date>: <how, and the numbers behind it>". What dak profile does not measure comes
/// from `defaults` and its source says so: the zero-copy rates when the run has none,
/// hbm.reserve_bytes (planner policy),
/// max_multicast_cluster (measured by shared/tools/h200_probe only), mma_min_rows (PTX ISA).
/// max_stages_per_cta is the deepest ring of stage_bytes stages (with their 8-byte mbarriers) that
/// fits the per-CTA SMEM opt-in. pinnable_bytes is the size this run pinned, not a maximum.
/// Throws dak::Error when a measurement the format needs is missing (e.g. no 1-CTA 1-stage point).
HardwareProfile build_measured_profile(const ProfileMeasurements& m, const std::string& name, const std::string& date,
                                       const HardwareProfile& defaults);

/// Host CTA counts the tiered-GEMM sweep tries: 1, 2, 4, 8, ... up to the limit, and the limit
/// itself, where limit = min(host_units, sm_count - 1 when HBM rows remain, else sm_count).
/// Empty when host_units is 0.
std::vector<int32_t> host_cta_candidates(int64_t host_units, bool hbm_rows_remain, int64_t sm_count);

/// Stages in flight per host CTA the sweep tries: 1, 2, 4, 8, ... up to max_stages, and max_stages.
std::vector<int32_t> host_stage_candidates(int32_t max_stages);

}  // namespace dak
