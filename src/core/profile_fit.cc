#include "core/profile_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "core/error.h"

namespace dak {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2)
    fail(fmt::format("line fit over {} x and {} y values", x.size(), y.size()), "fit_line",
         "give at least two (x, y) points");
  const double n = double(x.size());
  double sx = 0, sy = 0;
  for (size_t i = 0; i < x.size(); ++i) sx += x[i], sy += y[i];
  const double mx = sx / n, my = sy / n;
  double sxx = 0, sxy = 0;  // centred sums: no cancellation for x of very different sizes
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (!(sxx > 0)) fail("line fit with every x equal", "fit_line", "measure at least two different sizes");
  LineFit f;
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  return f;
}

int64_t saturating_inflight_bytes(const std::vector<HostReadPoint>& points, double fraction) {
  if (points.empty()) fail("no host read points", "saturating_inflight_bytes", "measure the SM read sweep first");
  double best = 0;
  for (const HostReadPoint& p : points) best = std::max(best, p.gbps);
  int64_t smallest = INT64_MAX;
  for (const HostReadPoint& p : points)
    if (p.gbps >= fraction * best) smallest = std::min(smallest, p.inflight_bytes());
  return smallest;
}

double stage_latency_us(const HostReadPoint& p) {
  if (!(p.gbps > 0) || p.chunk_bytes < 1)
    fail(fmt::format("a host read point of {} GB/s with {} byte chunks", p.gbps, p.chunk_bytes), "stage_latency_us",
         "the 1-CTA 1-stage measurement must read something");
  // bytes / (GB/s) = ns; / 1000 = us.
  return double(p.chunk_bytes) / p.gbps * 1e-3;
}

int64_t congestion_cap_bytes(const std::vector<ContentionPoint>& points, double keep_fraction) {
  // Worst HBM fraction of its baseline per in-flight size.
  std::map<int64_t, double> worst;
  for (const ContentionPoint& c : points) {
    if (c.host_ctas == 0) continue;
    const ContentionPoint* base = nullptr;
    for (const ContentionPoint& b : points)
      if (b.host_ctas == 0 && b.stages_per_cta == c.stages_per_cta && b.hbm_ctas == c.hbm_ctas) base = &b;
    if (!base || !(base->hbm_gbps > 0))
      fail(fmt::format("contention point with {} host CTAs x {} stages has no baseline", c.host_ctas, c.stages_per_cta),
           "congestion_cap_bytes", "measure the host_ctas 0 point of each stage count");
    const double f = c.hbm_gbps / base->hbm_gbps;
    auto [it, inserted] = worst.emplace(c.inflight_bytes(), f);
    if (!inserted) it->second = std::min(it->second, f);
  }
  if (worst.empty())
    fail("no contention point with host CTAs", "congestion_cap_bytes", "measure HBM bandwidth with host CTAs streaming");
  int64_t cap = worst.begin()->first;
  for (const auto& [inflight, f] : worst) {
    if (f < keep_fraction) break;
    cap = inflight;
  }
  return cap;
}

std::vector<TensorRateClass> tensor_rate_classes(std::vector<TensorRatePoint> points) {
  if (points.empty()) fail("no tensor-rate measurements", "tensor_rate_classes", "measure at least one GEMM size");
  std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.tokens < b.tokens; });
  std::vector<TensorRateClass> classes;
  for (size_t i = 0; i < points.size(); ++i) {
    if (points[i].tokens < 1 || !(points[i].tflops > 0))
      fail(fmt::format("tensor rate {} TFLOP/s at N = {}", points[i].tflops, points[i].tokens), "tensor_rate_classes",
           "every measurement needs N >= 1 and a positive rate");
    if (i > 0 && points[i].tokens == points[i - 1].tokens)
      fail(fmt::format("two tensor-rate measurements at N = {}", points[i].tokens), "tensor_rate_classes",
           "measure each N once");
    classes.push_back({i + 1 == points.size() ? 0 : points[i].tokens, points[i].tflops});
  }
  return classes;
}

namespace {

std::string copied_source(const HardwareProfile& defaults, const std::string& key, const std::string& why) {
  auto it = defaults.sources.find(key);
  return fmt::format("{}; copied from profile '{}'{}", why, defaults.name,
                     it == defaults.sources.end() ? std::string() : " (" + it->second + ")");
}

/// A value `dak profile` does not measure: the default profile's, with a source saying so where the
/// default gives one (`given`: the field is present there; absent optional fields stay absent).
template <typename T>
void copy_unmeasured(HardwareProfile& p, const HardwareProfile& defaults, T HardwareProfile::*field, const char* key,
                     bool given) {
  p.*field = defaults.*field;
  if (given) p.sources[key] = copied_source(defaults, key, "not measured by dak profile");
}

std::string join_rates(const std::vector<TensorRatePoint>& pts) {
  std::string out;
  for (const TensorRatePoint& t : pts) out += fmt::format("{}N={} {:.1f}", out.empty() ? "" : ", ", t.tokens, t.tflops);
  return out;
}

}  // namespace

HardwareProfile build_measured_profile(const ProfileMeasurements& m, const std::string& name, const std::string& date,
                                       const HardwareProfile& defaults) {
  const std::string dp = "dak profile " + date + ": ";
  const std::string where = "dak profile";
  if (m.host_reads.empty() || m.contention.empty() || m.tensor.empty() || m.launch_points.size() < 2)
    fail("the measurements are incomplete (host reads, contention, tensor rates or launch overheads missing)", where,
         "report this as a bug in dak profile");
  const double gib = double(1ull << 30);
  HardwareProfile p;
  p.name = name;
  p.device = fmt::format("{} ({} SMs, {:.1f} GiB HBM), measured by dak profile on {}", m.device_name, m.sm_count,
                         double(m.hbm_capacity_bytes) / gib, date);
  p.sm_count = m.sm_count;
  p.sources["sm_count"] = dp + fmt::format("cudaDevAttrMultiProcessorCount of {}", m.device_name);

  p.hbm_capacity_bytes = m.hbm_capacity_bytes;
  p.hbm_free_after_context_bytes = m.hbm_free_after_context_bytes;
  p.hbm_reserve_bytes = defaults.hbm_reserve_bytes;
  p.hbm_read_gbps = m.hbm_read_gbps;
  p.sources["hbm.capacity_bytes"] = dp + fmt::format("cudaMemGetInfo total {} bytes", m.hbm_capacity_bytes);
  p.sources["hbm.free_after_context_bytes"] =
      dp + fmt::format("cudaMemGetInfo free {} bytes right after context creation", m.hbm_free_after_context_bytes);
  p.sources["hbm.reserve_bytes"] = copied_source(defaults, "hbm.reserve_bytes", "planner policy, not a measurement");
  p.sources["hbm.read_gbps"] =
      dp + fmt::format("TMA bulk HBM stream (kernels/hbm_stream.h, all SMs) of {:.2f} GiB: best single launch {:.0f} GB/s "
                       "at {} KiB x {} stages, median of that configuration {:.0f} GB/s, {} timed launches per "
                       "configuration",
                       double(m.hbm_buffer_bytes) / gib, m.hbm_read_gbps, m.hbm_chunk_bytes >> 10, m.hbm_stages,
                       m.hbm_read_median_gbps, m.runs);

  // Host link, SM path.
  const HostReadPoint* best = &m.host_reads.front();
  const HostReadPoint* one = nullptr;
  for (const HostReadPoint& h : m.host_reads) {
    if (h.gbps > best->gbps) best = &h;
    if (h.ctas == 1 && h.stages == 1) one = &h;
  }
  if (!one) fail("the host read sweep lacks its 1-CTA 1-stage point", where, "report this as a bug in dak profile");
  p.host_sm_read_gbps = best->gbps;
  p.host_latency_us = stage_latency_us(*one);
  p.host_stage_bytes = one->chunk_bytes;
  std::string sweep;
  for (const HostReadPoint& h : m.host_reads)
    sweep += fmt::format("{}{}x{} {:.1f}", sweep.empty() ? "" : ", ", h.ctas, h.stages, h.gbps);
  p.sources["host_link.sm_read_gbps"] =
      dp + fmt::format("best point of the TMA bulk host read sweep (kernels/link_probe.h, CTAs x stages of {} B, GB/s "
                       "medians of {} runs): {}",
                       one->chunk_bytes, m.runs, sweep);
  p.sources["host_link.latency_us"] =
      dp + fmt::format("1 CTA x 1 stage reads {:.2f} GB/s, i.e. one {}-byte stage per {:.3f} us", one->gbps,
                       one->chunk_bytes, p.host_latency_us);
  p.sources["host_link.stage_bytes"] = dp + "the TMA chunk of every host read, shared-link and contention run";

  p.host_copy_engine_gbps = m.copy_engine_gbps;
  p.sources["host_link.copy_engine_gbps"] =
      dp + fmt::format("cudaMemcpyAsync H2D of {} MiB from pinned host memory into HBM, median of {} runs (min {:.1f}, "
                       "max {:.1f} GB/s)",
                       m.copy_bytes >> 20, m.runs, m.copy_engine_min_gbps, m.copy_engine_max_gbps);
  p.host_shared_total_gbps = m.shared_total_gbps;
  p.sources["host_link.shared_total_gbps"] =
      dp + fmt::format("an H2D copy and {} TMA host-read CTAs x {} stages at once: copy engine {:.1f} + SMs {:.1f} GB/s "
                       "(medians of {} runs)",
                       m.shared_host_ctas, m.shared_stages, m.shared_ce_gbps, m.shared_sm_gbps, m.runs);

  p.host_inflight_cap_bytes = congestion_cap_bytes(m.contention, kCongestionKeepFraction);
  p.sources["host_link.inflight_cap_bytes"] =
      dp + fmt::format("largest host bytes in flight at which every contention point at or below it keeps >= {:.0f} % "
                       "of its HBM baseline; the link saturates (>= {:.0f} % of the best SM read) from {} bytes in flight",
                       kCongestionKeepFraction * 100, kLinkSaturatedFraction * 100,
                       saturating_inflight_bytes(m.host_reads, kLinkSaturatedFraction));
  int64_t stages = 0;
  while (int64_t(stages + 1) * (p.host_stage_bytes + 8) <= m.smem_optin_bytes) ++stages;
  p.max_stages_per_cta = stages;
  p.sources["host_link.max_stages_per_cta"] =
      dp + fmt::format("{} stages of {} bytes (+ an 8-byte mbarrier each) fit the {}-byte per-CTA SMEM opt-in", stages,
                       p.host_stage_bytes, m.smem_optin_bytes);
  p.max_multicast_cluster = defaults.max_multicast_cluster;
  p.sources["host_link.max_multicast_cluster"] = copied_source(
      defaults, "host_link.max_multicast_cluster", "not measured by dak profile (shared/tools/h200_probe measures it)");
  if (m.cluster4_ctas > 0 && m.cluster4_ctas <= m.sm_count) {
    p.cluster4_ctas = m.cluster4_ctas;
    p.sources["host_link.cluster4_ctas"] =
        dp + fmt::format("cudaOccupancyMaxActiveClusters of the tiered GEMM's 128 x 128 kernel in clusters of 4: {} "
                         "CTAs of the {} SMs",
                         m.cluster4_ctas, m.sm_count);
  }
  // Not measured by dak profile: fitted on the engine's direct-mode operators (docs/profile.md).
  copy_unmeasured(p, defaults, &HardwareProfile::host_loaded_latency_us, "host_link.loaded_latency_us",
                  defaults.host_loaded_latency_us > 0);
  copy_unmeasured(p, defaults, &HardwareProfile::host_loaded_start_us, "host_link.loaded_start_us",
                  defaults.host_loaded_latency_us > 0);
  if (!(m.hbm_alone_gbps > 0)) fail("no HBM baseline for the copy slowdown", where, "report this as a bug");
  p.hbm_slowdown_during_copy = std::clamp(1.0 - m.hbm_during_copy_gbps / m.hbm_alone_gbps, 0.0, 0.99);
  p.sources["host_link.hbm_slowdown_during_copy"] =
      dp + fmt::format("TMA bulk HBM stream (all SMs) alone {:.0f} GB/s, during a concurrent H2D copy {:.0f} GB/s "
                       "(medians of {} runs)",
                       m.hbm_alone_gbps, m.hbm_during_copy_gbps, m.runs);

  p.contention = m.contention;
  std::string curve;
  for (size_t i = 0; i < m.contention.size(); ++i) {
    const ContentionPoint& c = m.contention[i];
    curve += fmt::format("{}{}x{} {:.0f}", curve.empty() ? "" : ", ", c.host_ctas, c.stages_per_cta, c.hbm_gbps);
    if (i < m.contention_host_gbps.size() && c.host_ctas > 0) curve += fmt::format(" (host {:.1f})", m.contention_host_gbps[i]);
  }
  p.sources["contention"] =
      dp + fmt::format("one launch, {} CTAs streaming HBM while k CTAs stream host memory with the same stages of {} B "
                       "until the HBM CTAs finish (kernels/link_probe.h, global-timer spans, medians of {} runs); k x "
                       "stages HBM GB/s: {}",
                       m.contention.front().hbm_ctas, m.contention.front().stage_bytes, m.runs, curve);

  p.kernel_overhead_us = std::max(0.0, m.launch_overhead_us);
  std::string sizes;
  for (const auto& [bytes, s] : m.launch_points)
    sizes += fmt::format("{}{} KiB {:.3f} us", sizes.empty() ? "" : ", ", bytes >> 10, s * 1e6);
  p.sources["compute.kernel_overhead_us"] =
      dp + fmt::format("least-squares fit t = {:.3f} us + S / {:.1f} GB/s over graph-replayed TMA bulk HBM streams, "
                       "each launch on its own region (per kernel, medians of {} replays: {}){}",
                       m.launch_overhead_us, m.launch_fit_gbps, m.runs, sizes,
                       m.launch_overhead_us < 0 ? "; the negative intercept is stored as 0" : "");
  // Not measured by dak profile yet (fitted from the engine's decode steps and dak bench gemm).
  copy_unmeasured(p, defaults, &HardwareProfile::step_kernel_overhead_us, "compute.step_kernel_overhead_us",
                  defaults.step_kernel_overhead_us > 0);
  copy_unmeasured(p, defaults, &HardwareProfile::tiered_step_kernel_overhead_us,
                  "compute.tiered_step_kernel_overhead_us", defaults.tiered_step_kernel_overhead_us > 0);
  copy_unmeasured(p, defaults, &HardwareProfile::linear_hbm_fraction, "compute.linear_hbm_fraction", true);
  copy_unmeasured(p, defaults, &HardwareProfile::multicast_round_factor, "compute.multicast_round_factor",
                  defaults.multicast_round_factor != 1.0);
  p.mma_min_rows = defaults.mma_min_rows;
  p.sources["compute.mma_min_rows"] = copied_source(defaults, "compute.mma_min_rows", "an ISA constant");
  p.tensor_tflops = tensor_rate_classes(m.tensor);
  p.sources["compute.tensor_tflops"] =
      dp + fmt::format("cuBLASLt bf16 GEMM M = K = {}, random data, TFLOP/s medians of {} runs: {} (each N is the upper "
                       "end of its class, the largest N the unlimited class)",
                       m.tensor_mk, m.runs, join_rates(m.tensor));

  if (m.pin_bytes < 1 || !(m.pin_seconds > 0)) fail("no pin measurement", where, "report this as a bug in dak profile");
  p.pinnable_host_bytes = m.pin_bytes;
  p.pin_gib_per_s = double(m.pin_bytes) / gib / m.pin_seconds;
  p.sources["host_memory.pinnable_bytes"] =
      dp + fmt::format("the size this run pinned ({:.2f} GiB, cudaHostRegister succeeded): a tested amount, not the "
                       "machine's maximum; pass --pin-test-gib to test more",
                       double(m.pin_bytes) / gib);
  p.sources["host_memory.pin_gib_per_s"] =
      dp + fmt::format("mmap + cudaHostRegister(mapped, portable) of {:.2f} GiB of fresh anonymous memory took {:.3f} s",
                       double(m.pin_bytes) / gib, m.pin_seconds);

  // Zero-copy rates: this run's, or (a run that did not measure them) the defaults'.
  p.zero_copy_gemm = m.zero_copy_gemm.empty() ? defaults.zero_copy_gemm : m.zero_copy_gemm;
  if (m.zero_copy_gemm.empty() && !defaults.zero_copy_gemm.empty())
    p.sources["zero_copy.gemm"] = copied_source(defaults, "zero_copy.gemm", "not measured in this run");
  if (!m.zero_copy_gemm.empty()) {
    std::string pts;
    for (const ZeroCopyGemmPoint& z : m.zero_copy_gemm)
      pts += fmt::format("{}N={} K={} rows={} {:.1f}", pts.empty() ? "" : ", ", z.N, z.K, z.rows, z.gbps);
    p.sources["zero_copy.gemm"] =
        dp + fmt::format("cuBLASLt bf16 y[N, rows] = x[N, K] W^T with W in pinned mapped host memory, host bytes / "
                         "median of {} CUDA-event-timed runs, GB/s: {}",
                         m.runs, pts);
  }
  p.zero_copy_attention_gbps = m.zero_copy_attention_gbps > 0 ? m.zero_copy_attention_gbps : defaults.zero_copy_attention_gbps;
  if (!(m.zero_copy_attention_gbps > 0) && defaults.zero_copy_attention_gbps > 0)
    p.sources["zero_copy.attention_gbps"] =
        copied_source(defaults, "zero_copy.attention_gbps", "not measured in this run (host buffer too small)");
  if (m.zero_copy_attention_gbps > 0) {
    p.sources["zero_copy.attention_gbps"] =
        dp + fmt::format("attention_decode (8 sequences, 32 heads x 128, MHA) with K and V in pinned mapped host memory: "
                         "{} bytes / median of {} CUDA-event-timed launches",
                         m.zero_copy_attention_bytes, m.runs);
  }

  for (const GemmSweepResult& g : m.gemm) p.tiered_gemm.push_back(g.best);
  if (!m.gemm.empty()) {
    p.sources["tiered_gemm"] =
        dp + fmt::format("fastest of host CTAs {{1, 2, 4, ...}} x host stages {{1, 2, 4, ...}} (HBM CTAs = the other "
                         "SMs) per shape and host row count, medians of {} CUDA-event-timed runs with the L2 flushed "
                         "before each; output bits checked against the all-HBM run{}",
                         m.runs,
                         m.gemm_skipped.empty()
                             ? std::string()
                             : fmt::format("; {} shape(s) skipped, refused by the kernel", m.gemm_skipped.size()));
  }
  return p;
}

std::vector<int32_t> host_cta_candidates(int64_t host_units, bool hbm_rows_remain, int64_t sm_count) {
  std::vector<int32_t> out;
  const int64_t limit = std::min(host_units, hbm_rows_remain ? sm_count - 1 : sm_count);
  for (int64_t c = 1; c <= limit; c *= 2) out.push_back(int32_t(c));
  if (limit >= 1 && out.back() != limit) out.push_back(int32_t(limit));
  return out;
}

std::vector<int32_t> host_stage_candidates(int32_t max_stages) {
  std::vector<int32_t> out;
  for (int32_t s = 1; s <= max_stages; s *= 2) out.push_back(s);
  if (max_stages >= 1 && out.back() != max_stages) out.push_back(max_stages);
  return out;
}

}  // namespace dak
