#include "core/plan_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "core/byte_size.h"

namespace dak {

namespace {

std::string op_row(const PlanOp& o) {
  return fmt::format("{:<24} {:<9} {:>12} {:>7.2f} {:>12} {:<9} {:>10.2f}  {}\n", o.name, op_kind_name(o.kind),
                     format_bytes(double(o.bytes)), 100.0 * o.host_fraction, format_bytes(double(o.host_bytes)),
                     data_path_name(o.path), o.predicted_time_s * 1e6, bound_name(o.bound));
}

struct RoleTotals {
  int64_t ops = 0, bytes = 0, host_bytes = 0;
  double time_s = 0, min_frac = 1, max_frac = 0;
  std::map<std::string, int> bounds;
};

}  // namespace

std::string format_plan_text(const Plan& plan, const HardwareProfile& profile, bool verbose) {
  const PlanInputs& in = plan.inputs;
  const Capacity& cap = plan.capacity;
  const PlanTotals& t = plan.totals;
  const bool decode = in.phase == Phase::kDecode;
  std::string s;
  s += fmt::format("model     {} ({})  phase {}  batch {}  prompt {}  gen {}  (context {} {}, KV for {})\n", in.model,
                   in.arch, phase_name(in.phase), in.batch, in.prompt_len, in.gen_len, in.context_len,
                   decode ? "mean" : "prompt", in.max_context);
  const std::string mode = in.offload_mode.empty() ? std::string("not recorded (an older plan file)")
                           : in.offload_mode == "auto"
                               ? fmt::format("auto (staged path {})", in.allow_staged ? "allowed" : "off")
                           : in.offload_mode == "prefetch" ? std::string("prefetch (every host linear staged)")
                           : in.offload_mode == "zero-copy"
                               ? std::string("zero-copy (the ordinary kernels read host bytes in place)")
                               : std::string("direct (every host byte read by the tiered kernels)");
  s += fmt::format("profile   {} (v{})  allocator {}  offload {}\n", in.profile_name, in.profile_version,
                   allocator_name(in.allocator), mode);
  s += fmt::format("capacity  weights {} + KV {} + workspace {} = {}; HBM budget {}{}\n",
                   format_bytes(double(cap.weight_bytes)), format_bytes(double(cap.kv_bytes)),
                   format_bytes(double(cap.workspace_bytes)), format_bytes(double(cap.total_bytes)),
                   format_bytes(double(cap.hbm_budget_bytes)), in.gpu_memory_default ? " (profile default)" : "");
  if (in.offload_ratio) {
    // At least the ratio: a positive one below the balance points (~0.8 % of Llama-2-7B) keeps them,
    // since there a few host rows make the memory-bound linears faster (allocator.h, phase 1).
    const double r = *in.offload_ratio;
    if (in.cpu_offload_bytes) {
      // Derived from the user's amount, so its digits are the amount's, not a ratio the user typed.
      const std::string pct = fmt::format("{:.2f}", 100.0 * r);
      s += fmt::format("          offload ratio forced to at least {} % of weights + KV (--cpu-offload-gb: {} "
                       "on the host)\n",
                       pct == "0.00" ? fmt::format("{:.3g}", 100.0 * r) : pct,
                       format_bytes(double(*in.cpu_offload_bytes)));
    } else {
      const std::string pct = r > 0 && format_percent(r) == "0" ? fmt::format("{:.3g}", 100.0 * r) : format_percent(r);
      s += fmt::format("          offload ratio forced to {} {} % of weights + KV\n", r > 0 ? "at least" : "exactly",
                       pct);
    }
  } else {
    s += fmt::format("          host must hold {} (global ratio R = {:.2f} %)\n",
                     format_bytes(double(cap.required_host_bytes)), 100.0 * cap.global_ratio);
  }

  s += fmt::format("\n{:<24} {:<9} {:>12} {:>7} {:>12} {:<9} {:>10}  {}\n", "operator", "kind", "bytes", "host %",
                   "host bytes", "path", "time us", "bound");
  int64_t layers = 0;
  bool noted = false;
  for (const PlanOp& o : plan.ops) {
    layers = std::max(layers, o.layer + 1);
    if (verbose || o.layer <= 0) {
      s += op_row(o);
    } else if (!noted) {
      s += "  ... layers 1.. have the same operators (per-role totals below; --verbose lists every row)\n";
      noted = true;
    }
  }

  std::map<std::string, RoleTotals> roles;
  std::vector<std::string> order;
  for (const PlanOp& o : plan.ops) {
    auto [it, fresh] = roles.try_emplace(o.role);
    if (fresh) order.push_back(o.role);
    RoleTotals& r = it->second;
    ++r.ops;
    r.bytes += o.bytes;
    r.host_bytes += o.host_bytes;
    r.time_s += o.predicted_time_s;
    r.min_frac = std::min(r.min_frac, o.host_fraction);
    r.max_frac = std::max(r.max_frac, o.host_fraction);
    ++r.bounds[bound_name(o.bound)];
  }
  s += fmt::format("\nper role over {} layers\n{:<16} {:>4} {:>12} {:>12} {:>15} {:>10}  {}\n", layers, "role", "ops",
                   "bytes", "host bytes", "host % min-max", "time ms", "bound (ops)");
  for (const std::string& name : order) {
    const RoleTotals& r = roles[name];
    std::string b;
    for (const auto& [bn, count] : r.bounds) b += fmt::format("{}{} {}", b.empty() ? "" : ", ", bn, count);
    s += fmt::format("{:<16} {:>4} {:>12} {:>12} {:>7.2f}-{:<7.2f} {:>10.3f}  {}\n", name, r.ops,
                     format_bytes(double(r.bytes)), format_bytes(double(r.host_bytes)), 100.0 * r.min_frac,
                     100.0 * r.max_frac, r.time_s * 1e3, b);
  }

  // What the prediction is, then the references beside it (the trial of session 27 read the old one
  // parenthesis, "sum of operators ..., copy pipeline ..., host bytes at the shared-link rate ...", as
  // parts of one sum, and a "floor" above the prediction). With staged operators the prediction is
  // the copy pipeline's replay, and a copy alone runs above the shared rate, so the host bytes at that
  // rate are a reference, not a bound; without, the shared-link (or, for zero-copy reads, the link)
  // time bounds the sum of operators from below.
  const std::string what = decode ? "TPOT" : "prefill step";
  if (t.prefetch_pipeline_s > 0) {
    s += fmt::format(
        "\npredicted {} {:.3f} ms  = the copy pipeline's replay (staged linears copied ahead of their kernels)\n"
        "          the operators one after another: {:.3f} ms, of which launch overheads and ring fills {:.3f} ms{}\n",
        what, plan.predicted_tpot_s * 1e3, t.sum_op_time_s * 1e3, t.overhead_s * 1e3,
        t.link_floor_s > 0 ? fmt::format("; all host bytes at the shared-link rate: {:.3f} ms (a reference)",
                                         t.link_floor_s * 1e3)
                           : "");
  } else {
    const std::string rate = t.zero_copy_host_bytes > 0 ? "link's" : "shared-link";
    if (t.link_floor_s > t.sum_op_time_s) {  // the link binds: the prediction is its time
      s += fmt::format("\npredicted {} {:.3f} ms  = the host bytes at the {} rate (the operators one after another: "
                       "{:.3f} ms, of which launch overheads and ring fills {:.3f} ms)\n",
                       what, plan.predicted_tpot_s * 1e3, rate, t.sum_op_time_s * 1e3, t.overhead_s * 1e3);
    } else {
      s += fmt::format("\npredicted {} {:.3f} ms  = the operators one after another, of which launch overheads and "
                       "ring fills {:.3f} ms{}\n",
                       what, plan.predicted_tpot_s * 1e3, t.overhead_s * 1e3,
                       t.link_floor_s > 0
                           ? fmt::format("; at least the host bytes at the {} rate, {:.3f} ms", rate, t.link_floor_s * 1e3)
                           : "");
    }
  }
  s += fmt::format(
      "EB        {:.1f} GB/s = {:.3f} GB of weights + KV read per step / step time  (B_g {:.0f} GB/s, "
      "B_h {:.1f} GB/s)\n",
      t.effective_bandwidth_gbps, t.step_bytes / 1e9, profile.hbm_read_gbps, profile.host_sm_read_gbps);
  s += fmt::format(
      "host      {} ({:.2f} % of weights + KV): direct {}, staged {}{}{}; pinning ~{:.1f} s\n",
      format_bytes(double(t.host_bytes)), 100.0 * t.host_ratio, format_bytes(double(t.direct_host_bytes)),
      format_bytes(double(t.staged_host_bytes)),
      t.zero_copy_host_bytes > 0 ? fmt::format(", zero-copy {}", format_bytes(double(t.zero_copy_host_bytes))) : "",
      t.staging_ring_bytes > 0 ? fmt::format(" (HBM ring {})", format_bytes(double(t.staging_ring_bytes))) : "",
      t.pin_time_s);
  s += fmt::format("HBM       {} used of the {} budget\n", format_bytes(double(t.hbm_bytes)),
                   format_bytes(double(cap.hbm_budget_bytes)));
  for (const std::string& note : plan.notes) s += "note      " + note + "\n";
  return s;
}

std::string format_percent(double fraction) {
  const double pct = 100.0 * fraction;
  std::string text;
  for (int decimals = 0; decimals <= 9; ++decimals) {
    text = fmt::format("{:.{}f}", pct, decimals);
    if (std::fabs(std::strtod(text.c_str(), nullptr) - pct) <= 1e-9 * std::max(1.0, std::fabs(pct))) break;
  }
  return text == "-0" ? "0" : text;
}

std::string format_ratio_sweep(const std::vector<RatioSweepRow>& rows, Phase phase) {
  // A prefill step's time is the prefill time (the TTFT), not a TPOT.
  const char* step = phase == Phase::kPrefill ? "prefill time" : "TPOT";
  std::string s = fmt::format(
      "| global ratio R | greedy {0} (ms) | uniform {0} (ms) | uniform / greedy |\n"
      "|---:|---:|---:|---:|\n",
      step);
  for (const RatioSweepRow& r : rows)
    s += !r.refused.empty() ? fmt::format("| {} % | refused: {} | | |\n", format_percent(r.ratio), r.refused)
                            : fmt::format("| {} % | {:.2f} | {:.2f} | {:.2f}x |\n", format_percent(r.ratio),
                                          r.greedy_tpot_s * 1e3, r.uniform_tpot_s * 1e3, r.speedup);
  return s;
}

}  // namespace dak
