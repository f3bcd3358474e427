#include "core/cost_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/tiered_gemm_schedule.h"

namespace dak {

namespace {

double ceil_div(double a, double b) { return std::ceil(a / b); }

}  // namespace

std::string data_path_name(DataPath p) {
  switch (p) {
    case DataPath::kNone:
      return "none";
    case DataPath::kDirect:
      return "direct";
    case DataPath::kStaged:
      return "staged";
    case DataPath::kZeroCopy:
      return "zero_copy";
  }
  return "?";
}

DataPath parse_data_path(const std::string& s, const std::string& where) {
  for (DataPath p : {DataPath::kNone, DataPath::kDirect, DataPath::kStaged, DataPath::kZeroCopy})
    if (data_path_name(p) == s) return p;
  fail(fmt::format("unknown data path '{}'", s), where, "use none, direct, staged or zero_copy");
}

std::string bound_name(Bound b) {
  switch (b) {
    case Bound::kHbm:
      return "hbm";
    case Bound::kHostLink:
      return "host_link";
    case Bound::kCompute:
      return "compute";
  }
  return "?";
}

Bound parse_bound(const std::string& s, const std::string& where) {
  for (Bound b : {Bound::kHbm, Bound::kHostLink, Bound::kCompute})
    if (bound_name(b) == s) return b;
  fail(fmt::format("unknown bound '{}'", s), where, "use hbm, host_link or compute");
}

CostModel::CostModel(const HardwareProfile& profile, CostParams params) : profile_(profile), params_(params) {
  if (params_.staging_chunk_bytes < 1)
    fail("staging chunk must be at least 1 byte", "cost model parameters", "pass a positive chunk size");
  // Host-read configuration per (cluster size, host CTA count): as many stages per read stream
  // as fit under the congestion cap (at least one, at most the SMEM ring depth).
  const HardwareProfile& p = profile_;
  host_side_.assign(size_t(p.max_multicast_cluster) + 1, std::vector<HostSide>(size_t(p.sm_count) + 1));
  for (int64_t cl = 1; cl <= p.max_multicast_cluster; ++cl) {
    for (int64_t n = 1; n <= p.sm_count; ++n) {
      HostSide& h = host_side_[size_t(cl)][size_t(n)];
      int64_t streams = (n + cl - 1) / cl;  // one host read per cluster
      h.stages =
          std::clamp<int64_t>(p.host_inflight_cap_bytes / (streams * p.host_stage_bytes), 1, p.max_stages_per_cta);
      h.inflight = streams * h.stages * p.host_stage_bytes;
      h.link_bps = p.host_direct_gbps(h.inflight) * 1e9;
      h.hbm_bps = p.hbm_read_gbps * p.hbm_factor(h.inflight) * 1e9;
    }
  }
}

CostModel::Work CostModel::work(const Op& op, int64_t host_units) const {
  const HardwareProfile& p = profile_;
  Work w;
  const int64_t units = op.splittable ? op.units() : 0;
  const double frac = op.splittable ? double(op.host_rows(host_units)) / double(op.split_rows) : 0.0;
  // Weights are read once per pass (op.passes > 1: a prefill longer than one engine pass).
  const double passes = double(op.passes);
  w.host_bytes = op.step_bytes * frac * passes;
  w.hbm_bytes = (op.step_bytes * (1.0 - frac) + double(op.fixed_bytes)) * passes + op.act_bytes;

  // Compute: per-SM rate of the op's shape class.
  int64_t rate_tokens = op.n;
  double efficiency = 1.0;
  if (op.kind == OpKind::kAttention) {
    int64_t q_rows = op.q_len * (op.heads / std::max<int64_t>(1, op.kv_heads));  // query rows per KV head
    rate_tokens = q_rows;
    efficiency = std::min(1.0, double(q_rows) / double(p.mma_min_rows));
  }
  const double r_sm = p.tensor_tflops_for(rate_tokens) * 1e12 / double(p.sm_count) * efficiency;
  const double items_total = units > 0 ? double(units * op.items_per_unit) : double(p.sm_count);
  w.t_item = op.flops / items_total / r_sm;
  w.items_host = units > 0 ? double(host_units * op.items_per_unit) : 0.0;
  w.items_hbm = items_total - w.items_host;
  w.hbm_fraction = op.kind == OpKind::kLinear ? p.linear_hbm_fraction : 1.0;
  return w;
}

OpCost CostModel::finish(OpCost c, int64_t kernels, int64_t copy_nodes) const {
  const double us = double(kernels) * profile_.step_overhead_us() + double(copy_nodes) * profile_.kernel_overhead_us;
  c.overhead_s += us * 1e-6;
  const double body = std::max({c.compute_s, c.hbm_s, c.host_s});
  if (c.host_s > 0 && c.host_s >= c.hbm_s && c.host_s >= c.compute_s)
    c.bound = Bound::kHostLink;
  else if (c.compute_s > c.hbm_s)
    c.bound = Bound::kCompute;
  else
    c.bound = Bound::kHbm;
  c.time_s = body + c.overhead_s;
  return c;
}

OpCost CostModel::direct(const Op& op, const Work& w, int64_t host_units, bool all_host) const {
  const HardwareProfile& p = profile_;
  if (op.kind == OpKind::kLinear && op.n > 64 && op.k % 8 == 0 && p.host_loaded_latency_us > 0)
    return direct_compute_tiles(op, w, host_units);
  // The kernel's multicast cluster for this N and these host rows (core/tiered_gemm_schedule.h);
  // host CTAs in whole clusters.
  int64_t cluster = op.kind == OpKind::kLinear
                        ? tiered_gemm_multicast_cluster(op.m, op.n, op.k, op.host_rows(host_units), p.sm_count,
                                                        p.max_multicast_cluster)
                        : 1;
  if (2 * cluster > p.sm_count) cluster = 1;  // as plan_tiered_gemm: too few SMs for two clusters
  OpCost best;
  best.time_s = INFINITY;
  const int64_t max_host = all_host ? p.sm_count : p.sm_count - cluster;
  for (int64_t n_h = cluster; n_h <= max_host; n_h += cluster) {
    const HostSide& hs = host_side_[size_t(cluster)][size_t(n_h)];
    const int64_t n_g = p.sm_count - n_h;
    OpCost c;
    c.path = DataPath::kDirect;
    c.compute_s = ceil_div(w.items_host, double(n_h)) * w.t_item;
    if (w.items_hbm > 0) c.compute_s = std::max(c.compute_s, ceil_div(w.items_hbm, double(n_g)) * w.t_item);
    c.hbm_s = w.hbm_bytes / (hs.hbm_bps * w.hbm_fraction);
    c.host_s = w.host_bytes / hs.link_bps;
    c.host_ctas = n_h;
    c.stages_per_cta = hs.stages;
    c.cluster = cluster;
    c.host_inflight_bytes = hs.inflight;
    c.host_step_bytes = w.host_bytes;
    double t = std::max({c.compute_s, c.hbm_s, c.host_s});
    if (t < best.time_s) {
      best = c;
      best.time_s = t;
    }
  }
  return finish(best, op.step_kernels());
}

OpCost CostModel::direct_compute_tiles(const Op& op, const Work& w, int64_t host_units) const {
  const HardwareProfile& p = profile_;
  // The launch the engine makes for these rows (gpu_engine.cc, linear()).
  TieredGemmLinkLimits limits;
  limits.inflight_cap_bytes = p.host_inflight_cap_bytes;
  limits.cluster4_ctas = p.cluster4_ctas;
  limits.max_cluster = int32_t(p.max_multicast_cluster);
  const TieredGemmSchedule s = plan_tiered_gemm(op.m, op.n, op.k, op.host_rows(host_units), p.sm_count, limits);
  // One round (a unit per CTA: a bm x bn output tile over K / S) in 128 x 128 k-blocks of the
  // kernel's fitted cost, each 2 * 128 * 128 * 64 FLOPs at this N's per-SM rate; a launch in
  // multicast clusters runs its rounds multicast_round_factor slower (its CTAs wait for each other).
  const double r_sm = p.tensor_tflops_for(op.n) * 1e12 / double(p.sm_count);
  const double t_round = tiered_gemm_round_cost(op.k, s.tile, s.k_splits) * (2.0 * 128 * 128 * 64 / r_sm) *
                         (s.cluster > 1 ? p.multicast_round_factor : 1.0);
  // Never below the all-HBM operator's compute (cost(op, 0)): host rows do not make it faster.
  const double t_all = ceil_div(w.items_host + w.items_hbm, double(p.sm_count)) * w.t_item;
  OpCost c;
  c.path = DataPath::kDirect;
  c.host_ctas = s.host_ctas;
  c.stages_per_cta = s.host_stages;
  c.cluster = s.cluster;
  c.host_inflight_bytes = int64_t(s.host_clusters()) * s.host_stages * s.host_stage_inflight_bytes();
  // Host memory is not cached in L2: every n-group (cluster of n-tiles) reads its host tiles again;
  // a prefill of several passes has at least one n-group per pass (w.host_bytes counts every pass).
  c.host_step_bytes = w.host_bytes / double(op.passes) * double(std::max<int64_t>(s.n_groups(), op.passes));
  const double hbm_rounds = s.hbm_units() > 0 ? ceil_div(double(s.hbm_units()), double(s.hbm_clusters())) : 0.0;
  c.compute_s = std::max(t_all, hbm_rounds * t_round);
  c.hbm_s = w.hbm_bytes / (p.hbm_read_gbps * p.hbm_factor(c.host_inflight_bytes) * w.hbm_fraction * 1e9);
  // Host side: one read stream per host cluster, a unit at a time, each with its ring of W tiles in
  // flight over the loaded latency, all of them sharing B_h; a unit takes at least a round.
  const int64_t units = s.host_units(), streams = s.host_clusters();
  const double unit_bytes = c.host_step_bytes / double(units);
  const double stream_bps =
      double(s.host_stages) * double(s.tile.bm) * double(s.tile.bk()) * 2.0 / (p.host_loaded_latency_us * 1e-6);
  auto round_s = [&](int64_t active) {
    return std::max(t_round, unit_bytes / std::min(stream_bps, p.host_sm_read_gbps * 1e9 / double(active)));
  };
  c.host_s = p.host_loaded_start_us * 1e-6 + double(units / streams) * round_s(streams) +
             (units % streams > 0 ? round_s(units % streams) : 0.0);
  return finish(c, op.step_kernels());
}

OpCost CostModel::staged(const Op& op, const Work& w) const {
  const HardwareProfile& p = profile_;
  OpCost c;
  c.path = DataPath::kStaged;
  c.compute_s = ceil_div(w.items_host + w.items_hbm, double(p.sm_count)) * w.t_item;
  // Every staged byte is written to the HBM ring by the copy engine and read back by the SMs.
  const double hbm_bps = p.hbm_read_gbps * (1.0 - p.hbm_slowdown_during_copy) * w.hbm_fraction * 1e9;
  c.hbm_s = (w.hbm_bytes + 2.0 * w.host_bytes) / hbm_bps;
  const double ce_bps = p.host_copy_engine_gbps * 1e9;
  c.host_s = w.host_bytes / ce_bps;
  // The first chunk of each pass's copy is not overlapped.
  c.overhead_s = std::min(w.host_bytes / double(op.passes), double(params_.staging_chunk_bytes)) / ce_bps *
                 double(op.passes);
  c.host_step_bytes = w.host_bytes;
  return finish(c, op.step_kernels(), op.passes);  // + the copy node of each pass
}

OpCost CostModel::zero_copy(const Op& op, const Work& w, int64_t host_units) const {
  const HardwareProfile& p = profile_;
  OpCost c;
  c.path = DataPath::kZeroCopy;
  c.host_step_bytes = w.host_bytes;
  const double sm = double(p.sm_count);
  c.hbm_s = w.hbm_bytes / (p.hbm_read_gbps * w.hbm_fraction * 1e9);
  if (op.kind == OpKind::kLinear) {
    // Two GEMMs in stream order (gpu_engine.cc, linear(): the host rows, then the HBM rows), each
    // on every SM; the sum is the time, so finish()'s max does not apply.
    const double host_compute = ceil_div(w.items_host, sm) * w.t_item;
    const double hbm_compute = w.items_hbm > 0 ? ceil_div(w.items_hbm, sm) * w.t_item : 0.0;
    c.host_s = w.host_bytes / (p.zero_copy_gemm_rate_gbps(op.n, op.k, op.host_rows(host_units)) * 1e9);
    c.compute_s = host_compute + hbm_compute;
    const double host_part = std::max(host_compute, c.host_s);
    const double hbm_part = std::max(hbm_compute, c.hbm_s);
    const int64_t kernels = op.step_kernels() + (w.items_hbm > 0 ? op.passes : 0);
    c.overhead_s = double(kernels) * p.step_overhead_us() * 1e-6;
    c.bound = host_part >= hbm_part ? (c.host_s >= host_compute ? Bound::kHostLink : Bound::kCompute)
                                    : (c.hbm_s >= hbm_compute ? Bound::kHbm : Bound::kCompute);
    c.time_s = host_part + hbm_part + c.overhead_s;
    return c;
  }
  // One kernel reads both tiers (attention_decode, embedding_gather): its host and HBM reads overlap.
  c.compute_s = ceil_div(w.items_host + w.items_hbm, sm) * w.t_item;
  c.host_s = w.host_bytes / (p.zero_copy_attention_rate_gbps() * 1e9);
  return finish(c, op.step_kernels());
}

OpCost CostModel::cost(const Op& op, int64_t host_units, DataPath path) const {
  const int64_t units = op.splittable ? op.units() : 0;
  if (host_units < 0 || host_units > units)
    fail(fmt::format("operator '{}' has {} split units, asked for {} on the host", op.name, units, host_units),
         "cost model", "pass a host unit count in [0, units]");
  const Work w = work(op, host_units);
  if (host_units == 0) {
    OpCost c;
    c.compute_s = ceil_div(w.items_hbm, double(profile_.sm_count)) * w.t_item;
    c.hbm_s = w.hbm_bytes / (profile_.hbm_read_gbps * w.hbm_fraction * 1e9);
    return finish(c, op.step_kernels());
  }
  if (path == DataPath::kStaged) return staged(op, w);
  if (path == DataPath::kZeroCopy) return zero_copy(op, w, host_units);
  return direct(op, w, host_units, host_units == units);
}

OpCost CostModel::best(const Op& op, int64_t host_units, bool allow_staged) const {
  OpCost d = cost(op, host_units, DataPath::kDirect);
  if (!allow_staged || host_units == 0) return d;
  OpCost s = cost(op, host_units, DataPath::kStaged);
  return s.time_s < d.time_s ? s : d;
}

}  // namespace dak
