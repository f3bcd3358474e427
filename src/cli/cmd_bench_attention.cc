// `dak bench attention` (issue 5, item 4): one layer's decode attention with the KV cache split
// along the batch between pinned host memory and HBM (the tiered attention kernel, the paper's
// "SplitK attention"), EB vs offload ratio next to the ideal line of the same run, with the HBM
// decode kernel as the baseline. Measurements: gpu/bench_attention.h; docs/bench-attention.md.
//
//   dak bench attention [--models llama-2-7b,llama-3-8b,opt-30b] [--batch 8,64,512]
//                       [--ctx 512,4096,32768] [--ratios 0,1/8,1/4,1/2,1] [--repeats 5]
//                       [--quick] [--dry-run] [--output text|json|csv] [--json FILE] [--csv FILE]
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/bench_attention_policy.h"
#include "core/config_locator.h"
#include "core/error.h"
#include "core/hardware_profile.h"
#include "core/tiered_attention_schedule.h"
#ifdef DAK_HAVE_CUDA
#include "gpu/bench_attention.h"
#endif

namespace dak::cli {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int64_t kDrySmCount = 132;  // --dry-run plans for an H200

struct BenchAttentionArgs {
  std::string models = "llama-2-7b,llama-3-8b,opt-30b";
  CLI::Option* models_opt = nullptr;  // --models: given on the command line (even with the default list)?
  std::string batch = "8,64,512";
  std::string ctx = "512,4096,32768";
  std::string ratios = "0,1/8,1/4,1/2,1";
  bool no_balance_point = false;
  int repeats = 5;
  double max_kv_gib = 100;
  double max_host_gib = 0;
  int host_ctas = 0;
  int host_stages = 0;
  int hbm_stages = 0;
  double hbm_buffer_gib = 2;
  int hbm_runs = 10;
  bool quick = false;
  bool dry_run = false;
  std::string output = "text";
  std::string json_file;
  std::string csv_file;
};

constexpr const char* kFooter = R"(What is measured (docs/bench-attention.md has the details):
  shapes  one decoder layer's decode attention of each model (--models: shipped config names or config
          paths): H query heads, Hkv kv heads, head_dim D; one query per sequence, every sequence at the
          full context (--ctx), bf16 K/V, fp32 softmax.
  x       offload ratio b_h / B: sequences [0, b_h) keep K/V in pinned host memory (read over PCIe by TMA
          straight into SMEM), the others in HBM; b_h = round(ratio * B). --ratios takes fractions (1/8)
          or decimals. The balance point x* = B_h / (B_g + B_h) is added as b_h = round(x* * B) where
          that is at least 1 and not already a point (e.g. not at batch 8: x* ~ 1 % rounds to 0), unless
          --no-balance-point.
  KV      C = B * ctx * Hkv * D * 2 (K and V) * 2 bytes, one layer. Cells with C > --max-kv-gib, or that
          do not fit in free HBM, are skipped; points whose host part exceeds the pinned host tier (at most
          --max-host-gib, default MemAvailable - 16 GiB) are skipped, with the reason.
  time    GPU time of one attention launch (split + combine kernels), CUDA events, launches queued behind a
          host gate, a 256 MiB HBM read (L2 flush) before each; median [min, max] of --repeats (>= 5)
          after one warm-up, ms. Cells with KV < 256 MiB are timed per layer of a CUDA graph of 8 layers'
          attention (each its own K/V; the kernels chained as in the decode graph; like the 8-layer stack
          of dak bench gemm): one launch's start and end would dominate their microseconds. Their single
          launch is the "1 launch" column.
  EB      C / time.   ideal = C / max((1 - x) C / B_g, x C / B_h).   of ideal = EB / ideal EB.
  B_g     best HBM read of this run (TMA bulk stream of --hbm-buffer-gib, best launch).
  B_h     read of pinned host memory of this run (the same TMA bulk stream over 1 GiB of the host tier,
          CTAs x stages of 32 KiB in {4x4, 1x4, 8x2, 2x4, 4x2, 16x1}), the best configuration's median
          launch (the B_h of dak bench gemm).
  decode  the engine's HBM decode attention (attention_decode) at x = 0 over the same bytes: the baseline.
  target  issue 5: of ideal >= 90 % at every point, and at x = 0 the tiered kernel no slower than decode (met
          when its median is at most decode's or their [min, max] ranges overlap). Shown as met / MISSED.
--quick: the first model only, batch 8, contexts 512 and 4096, ratios 0, 1/2, 1, a 1 GiB B_g buffer and at
          most 5 B_g runs (--batch / --ctx / --ratios cannot be combined with it).
--dry-run prints the cells, points and default kernel schedules (for 132 SMs) without a GPU.
--host-ctas / --host-stages / --hbm-stages override the congestion control of every point; with a host
          override the host CTAs run 4 warps (the default schedule may run 2 or 1 with deeper rings).
Needs a Hopper GPU otherwise: without one dak bench attention fails with the reason and exit code 1.)";

/// "0,1/8,0.25,1" -> {0, 0.125, 0.25, 1}: fractions b_h / B in [0, 1], sorted, duplicates removed.
/// Throws dak::UsageError for an item that is neither a number nor a/b (b != 0), dak::Error for one
/// outside [0, 1].
std::vector<double> parse_ratios(const std::string& s) {
  std::vector<double> out;
  for (const std::string& tok : split_list(s)) {
    std::optional<double> v;
    const size_t slash = tok.find('/');
    if (slash == std::string::npos) {
      v = parse_number(tok);
    } else {
      const std::optional<double> num = parse_number(tok.substr(0, slash)), den = parse_number(tok.substr(slash + 1));
      if (num && den && *den != 0) v = *num / *den;
    }
    if (!v) {
      fail_usage(fmt::format("'{}' is not a comma-separated list of ratios: {}", s, bad_item(tok)), "--ratios",
                 "write fractions b_h / B as decimals or a/b, e.g. 0,1/8,1/4,0.5,1");
    }
    if (!(*v >= 0 && *v <= 1)) {
      fail(fmt::format("--ratios value {} is outside [0, 1]", tok), "--ratios",
           "give offload ratios from 0 (all KV in HBM) to 1 (all KV in host memory)");
    }
    out.push_back(*v);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

struct ModelShape {
  std::string name;
  int64_t heads, kv_heads, head_dim;
};

std::vector<ModelShape> resolve_models(const std::string& list) {
  std::vector<ModelShape> out;
  std::vector<std::filesystem::path> seen;  // a config named twice (by name or path) is measured once, as --batch 8,8 is
  for (const std::string& name : parse_name_list(list, "--models")) {
    const LocatedConfig lc = locate_model_config(name, "--models");
    if (std::find(seen.begin(), seen.end(), lc.path) != seen.end()) continue;
    seen.push_back(lc.path);
    const ModelConfig& c = lc.config;
    notice_defaulted_sizes(c, lc.path.string());  // a head_dim error below may come from these defaults
    try {
      check_tiered_attention_shape({1, c.num_heads, c.num_kv_heads, c.head_dim, 1});
    } catch (const Error& e) {
      fail(fmt::format("{}'s attention ({} heads, {} kv heads, head_dim {}) is not supported: {}", lc.name,
                       c.num_heads, c.num_kv_heads, c.head_dim, e.what_part()),
           "--models", e.fix_part());
    }
    out.push_back({lc.name, c.num_heads, c.num_kv_heads, c.head_dim});
  }
  return out;
}

struct Plan {
  std::vector<ModelShape> models;
  std::vector<int64_t> batches, contexts;
  std::vector<double> ratios;
};

/// SMEM bytes per CTA of a ring of `stages` steps: a host CTA's (`host`), or the larger of an HBM
/// CTA's two layouts (padded steps, or staged steps as a host CTA's: the plan stages long splits).
int64_t ring_smem_bytes(bool host, int64_t d, int64_t stages) {
  namespace ta = tiered_attention;
  return host ? ta::host_cta_smem_bytes(d, stages)
              : std::max(ta::hbm_cta_smem_bytes(d, stages), ta::host_cta_smem_bytes(d, stages));
}

/// The deepest ring --host-stages (`host`) or --hbm-stages allows at head_dim `d`: kMaxStages, or
/// fewer where a CTA's SMEM would exceed kSmemLimitBytes (TieredAttentionSchedule::validate refuses
/// those), at least 1.
int64_t deepest_stages(bool host, int64_t d) {
  int64_t st = tiered_attention::kMaxStages;
  while (st > 1 && ring_smem_bytes(host, d, st) > tiered_attention::kSmemLimitBytes) --st;
  return st;
}

/// deepest_stages for every supported head_dim, e.g. "8 at head_dim 64, 80 and 96, 6 at 128, 2 at 256".
std::string stage_limits(bool host) {
  std::vector<std::pair<std::vector<int64_t>, int64_t>> caps;  // (head_dims, deepest ring), head_dims ascending
  for (int64_t d = 1; d <= 1024; ++d) {
    if (!tiered_attention::head_dim_supported(d)) continue;
    const int64_t st = deepest_stages(host, d);
    if (caps.empty() || caps.back().second != st) caps.push_back({{}, st});
    caps.back().first.push_back(d);
  }
  std::string out;
  for (size_t i = 0; i < caps.size(); ++i) {
    const std::vector<int64_t>& dims = caps[i].first;
    std::vector<std::string> ds;
    for (const int64_t d : dims) ds.push_back(std::to_string(d));
    out += fmt::format("{}{} at {}{}", i == 0 ? "" : ", ", caps[i].second, i == 0 ? "head_dim " : "", join_words(ds, "and"));
  }
  return out;
}

Plan check_args(const BenchAttentionArgs& a) {
  check_timed_runs(a.repeats, "--repeats");
  if (!(a.max_kv_gib > 0)) fail("--max-kv-gib must be positive", "--max-kv-gib", "e.g. --max-kv-gib 100");
  if (!(a.max_host_gib >= 0)) fail("--max-host-gib must be >= 0", "--max-host-gib", "0 picks MemAvailable - 16 GiB");
  check_hbm_measurement(a.hbm_buffer_gib, a.hbm_runs);
  const int max_st = tiered_attention::kMaxStages;
  if (a.host_ctas < 0 || a.host_ctas > 1024) {
    fail(fmt::format("--host-ctas {} is outside [0, 1024]", a.host_ctas), "--host-ctas",
         "give 0 (the default schedule's) or 1 to 1024 host CTAs; the plan uses at most the SM count - 1 (131 "
         "on an H200); the HBM side takes the CTA slots the host CTAs leave (at least 1 CTA), and more CTAs than "
         "the SMs hold at once run in waves");
  }
  for (const auto& [flag, stages] : {std::pair{"--host-stages", a.host_stages}, std::pair{"--hbm-stages", a.hbm_stages}}) {
    if (stages < 0 || stages > max_st) {  // the flag given, not both (session 32's trial)
      fail(fmt::format("{} {} is outside [0, {}] steps in flight", flag, stages, max_st), flag,
           fmt::format("give 0 (the default) or steps that fit a CTA's SMEM: up to {}",
                       stage_limits(std::string(flag) == "--host-stages")));
    }
  }
  Plan p;
  p.batches = parse_count_list(a.batch, "--batch", 1 << 16, "batch sizes", "8,64,512");
  p.contexts = parse_count_list(a.ctx, "--ctx", 1 << 24, "context lengths", "512,4096,32768");
  p.ratios = parse_ratios(a.ratios);
  p.models = resolve_models(a.models);
  if (a.quick) {
    // --quick picks the cells (the session-17 trial: --quick --batch 64 ran batch 8 without a word).
    const BenchAttentionArgs def;
    std::string given;
    for (const auto& [flag, value, standard] : {std::tuple{"--batch", a.batch, def.batch},
                                                std::tuple{"--ctx", a.ctx, def.ctx},
                                                std::tuple{"--ratios", a.ratios, def.ratios}}) {
      if (value != standard) given += (given.empty() ? "" : ", ") + std::string(flag) + " " + value;
    }
    if (!given.empty()) {
      fail("--quick measures its own cells (batch 8, contexts 512 and 4096, ratios 0, 1/2, 1), so " + given +
               " would be ignored",
           "--quick", "drop --quick to measure the cells you give, or drop " + given);
    }
    if (p.models.size() > 1 && a.models_opt && a.models_opt->count() > 0) {  // only when --models was given
      std::fprintf(stderr, "dak: notice: --quick measures the first model of --models only (%s)\n",
                   p.models.front().name.c_str());
    }
    p.models.resize(1);
    p.batches = {8};
    p.contexts = {512, 4096};
    p.ratios = {0, 0.5, 1};
  }
  // A ring override must fit the dynamic SMEM a plan may take (kSmemLimitBytes) at each model's head_dim (the trial's
  // --hbm-stages 8 at head_dim 128 failed later, in the schedule, without naming the flag).
  namespace ta = tiered_attention;
  for (const ModelShape& m : p.models) {
    for (const bool host : {true, false}) {
      const int stages = host ? a.host_stages : a.hbm_stages;
      const int64_t deepest = deepest_stages(host, m.head_dim);
      if (stages <= deepest) continue;
      const int64_t smem = ring_smem_bytes(host, m.head_dim, stages);
      const char* flag = host ? "--host-stages" : "--hbm-stages";
      fail(fmt::format("{} {} needs {} bytes of SMEM per CTA at {}'s head_dim {}{}, more than the {} bytes of dynamic "
                       "SMEM a plan may take (the 227 KiB a Hopper CTA can have, less {} bytes for the kernel's static SMEM)",
                       flag, stages, smem, m.name, m.head_dim,
                       host ? " (the ring of each of a host CTA's 4 warps: with --host-stages the host CTAs run 4 warps)"
                            : "",
                       ta::kSmemLimitBytes, ta::kStaticSmemAllowanceBytes),
           flag, fmt::format("use at most {} {} at head_dim {} (0 keeps the default)", flag, deepest, m.head_dim));
    }
  }
  return p;
}

/// --dry-run: cells, points and the default schedules for an H200, without a GPU.
void print_dry_run(const BenchAttentionArgs& a, const Plan& p) {
  const HardwareProfile prof = HardwareProfile::h200_default();
  const double x_star = prof.host_sm_read_gbps / (prof.hbm_read_gbps + prof.host_sm_read_gbps);
  const TieredAttentionLinkLimits limits =
      attention_bench_limits(tiered_attention_link_limits(prof), a.host_ctas, a.host_stages);
  std::ostringstream out;
  out << fmt::format("dak bench attention --dry-run: schedules for {} SMs (2 HBM CTAs per SM, 1 where a ring "
                     "override leaves room for one), balance point x* = {:.2f} % from the H200 default profile\n\n",
                     kDrySmCount, 100 * x_star);
  out << "| model | B | ctx | KV GiB | timed as | b_h | x | schedule |\n|---|---:|---:|---:|---|---:|---:|---|\n";
  for (const ModelShape& m : p.models) {
    for (int64_t b : p.batches) {
      for (int64_t c : p.contexts) {
        const double kv = 4.0 * double(b) * double(c) * double(m.kv_heads) * double(m.head_dim);
        if (kv > a.max_kv_gib * kGiB) {
          out << fmt::format("| {} | {} | {} | {:.2f} | - | - | - | skipped: KV > {} GiB (--max-kv-gib) |\n", m.name, b,
                             c, kv / kGiB, a.max_kv_gib);
          continue;
        }
        std::vector<int64_t> hosts;
        for (double r : p.ratios) hosts.push_back(std::llround(r * double(b)));
        if (!a.no_balance_point && std::llround(x_star * double(b)) > 0) hosts.push_back(std::llround(x_star * double(b)));
        std::sort(hosts.begin(), hosts.end());
        hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
        for (int64_t bh : hosts) {
          // As the measurement plans; kSmemTwoCtaBytes stands in for the occupancy query a GPU answers.
          const TieredAttentionSchedule s = plan_attention_bench_point(
              {b, m.heads, m.kv_heads, m.head_dim, c + attention_bench_kv_pad_rows()}, bh, kDrySmCount, limits,
              a.host_ctas, a.host_stages, a.hbm_stages,
              [](const TieredAttentionSchedule& t) { return t.smem_bytes() > tiered_attention::kSmemTwoCtaBytes ? 1 : 2; });
          const int layers = attention_bench_layers(uint64_t(kv));
          const std::string timed = layers > 1 ? fmt::format("{}-layer stack", layers) : std::string("1 launch");
          out << fmt::format("| {} | {} | {} | {:.2f} | {} | {} | {:.4f} | {} |\n", m.name, b, c, kv / kGiB, timed, bh,
                             double(bh) / double(b), s.to_string());
        }
      }
    }
  }
  std::cout << out.str() << std::flush;
}

#ifdef DAK_HAVE_CUDA
std::string met(bool ok) { return ok ? "met" : "MISSED"; }

void report(const BenchAttentionArgs& a, const gpu::AttentionBenchResult& r) {
  const double ms = 1e3, gbs = 1e-9;
  nlohmann::json j;
  j["device"] = r.device;
  j["sm_count"] = r.sm_count;
  j["hbm"] = {{"best_tb_s", r.hbm.best_bytes_per_s * 1e-12}, {"median_tb_s", r.hbm.median_bytes_per_s * 1e-12},
              {"buffer_bytes", r.hbm.buffer_bytes}, {"chunk_bytes", r.hbm.chunk_bytes}, {"stages", r.hbm.stages},
              {"ctas_per_sm", r.hbm.ctas_per_sm}, {"runs", r.hbm.runs}, {"configs", r.hbm.configs}};
  j["host"] = {{"gb_s", r.host.best_bytes_per_s * gbs}, {"max_gb_s", r.host.max_bytes_per_s * gbs},
               {"buffer_bytes", r.host.buffer_bytes}, {"ctas", r.host.ctas}, {"chunk_bytes", r.host.chunk_bytes},
               {"stages", r.host.stages}, {"runs", r.host.runs}, {"configs", r.host.configs}};
  j["balance_ratio"] = r.balance_ratio;
  j["host_tier_bytes"] = r.host_tier_bytes;
  j["pin_s"] = r.pin_s;
  j["gate_timed_out"] = r.gate_timed_out;
  j["target_of_ideal"] = gpu::kAttentionTargetOfIdeal;
  j["cells"] = nlohmann::json::array();

  std::ostringstream csv;
  csv << "model,heads,kv_heads,head_dim,batch,context,kv_bytes,kernel,b_host,ratio,balance_point,time_ms,time_min_ms,"
         "time_max_ms,eb_gb_s,ideal_ms,ideal_gb_s,of_ideal,target_met,b_g_tb_s,b_h_gb_s,skipped,reason,split,schedule,"
         "layers,launch_ms\n";
  std::ostringstream txt;
  txt << fmt::format("dak bench attention: {} ({} SMs)\n", r.device, r.sm_count);
  txt << fmt::format("B_g = {:.3f} TB/s (TMA bulk stream of {:.2f} GiB in HBM, best of {} launches x {} configs; its "
                     "median {:.3f})\n",
                     r.hbm.best_bytes_per_s * 1e-12, double(r.hbm.buffer_bytes) / kGiB, r.hbm.runs, r.hbm.configs,
                     r.hbm.median_bytes_per_s * 1e-12);
  txt << fmt::format("B_h = {:.2f} GB/s (TMA bulk stream of {:.2f} GiB of pinned host memory, median of {} launches of "
                     "the best of {} configs: {} CTAs x {} stages x {} KiB; its best launch {:.2f})\n",
                     r.host.best_bytes_per_s * gbs, double(r.host.buffer_bytes) / kGiB, r.host.runs, r.host.configs,
                     r.host.ctas, r.host.stages, r.host.chunk_bytes >> 10, r.host.max_bytes_per_s * gbs);
  txt << fmt::format("balance point x* = B_h / (B_g + B_h) = {:.2f} %; host tier {:.2f} GiB pinned in {:.1f} s\n",
                     100 * r.balance_ratio, double(r.host_tier_bytes) / kGiB, r.pin_s);
  if (r.gate_timed_out) txt << "note: the host gate timed out at least once: some times include host launch gaps\n";
  txt << "\n| model | B | ctx | KV GiB | kernel | b_h | x | time ms [min, max] | 1 launch ms | EB GB/s | ideal GB/s | "
         "of ideal | target | split |\n|---|---:|---:|---:|---|---:|---:|---|---:|---:|---:|---:|---|---|\n";

  int points = 0, points_met = 0, cells_run = 0, cells_met = 0;
  std::vector<std::string> skipped;
  for (const gpu::AttentionBenchCell& c : r.cells) {
    const std::string id = fmt::format("{},{},{},{},{},{},{}", c.shape.model, c.shape.num_heads,
                                       c.shape.num_kv_heads, c.shape.head_dim, c.batch, c.context, c.kv_bytes);
    nlohmann::json jc = {{"model", c.shape.model},       {"heads", c.shape.num_heads},
                         {"kv_heads", c.shape.num_kv_heads}, {"head_dim", c.shape.head_dim},
                         {"batch", c.batch},             {"context", c.context},
                         {"kv_bytes", c.kv_bytes},       {"skipped", c.skipped},
                         {"skip_reason", c.skip_reason}, {"split", c.split},
                         {"layers", c.layers}};
    // "1 launch" column: the single launch where the time is per layer of a stack, else the time itself.
    auto launch_col = [&](const gpu::Spread& t) {
      return c.layers > 1 ? fmt::format("{:.4f}", t.median * ms) : std::string("=");
    };
    const double kv_gib = double(c.kv_bytes) / kGiB;
    if (c.skipped) {
      skipped.push_back(fmt::format("{} B={} ctx={} ({:.2f} GiB): {}", c.shape.model, c.batch, c.context, kv_gib,
                                    c.skip_reason));
      csv << fmt::format("{},decode,,,,,,,,,,,,{:.4f},{:.3f},true,\"{}\",,,{},\n", id, r.hbm.best_bytes_per_s * 1e-12,
                         r.host.best_bytes_per_s * gbs, c.skip_reason, c.layers);
      j["cells"].push_back(jc);
      continue;
    }
    ++cells_run;
    const bool has_zero = std::any_of(c.points.begin(), c.points.end(),
                                      [](const gpu::AttentionBenchPoint& p) { return p.b_host == 0 && !p.skipped; });
    if (has_zero) cells_met += c.baseline_target_met;
    const double ideal0 = double(c.kv_bytes) / r.hbm.best_bytes_per_s;
    jc["baseline"] = {{"split", c.baseline_split},
                      {"time_ms", {{"median", c.baseline_s.median * ms}, {"min", c.baseline_s.min * ms},
                                   {"max", c.baseline_s.max * ms}}},
                      {"launch_time_ms", {{"median", c.baseline_launch_s.median * ms},
                                          {"min", c.baseline_launch_s.min * ms},
                                          {"max", c.baseline_launch_s.max * ms}}},
                      {"eb_gb_s", c.baseline_eb_bytes_per_s * gbs},
                      {"of_ideal", ideal0 / c.baseline_s.median}};
    jc["baseline_target_met"] = has_zero ? nlohmann::json(c.baseline_target_met) : nlohmann::json(nullptr);
    txt << fmt::format("| {} | {} | {} | {:.2f} | decode | - | 0 | {:.4f} [{:.4f}, {:.4f}] | {} | {:.1f} | {:.1f} | "
                       "{:.1f} % | baseline | {} |\n",
                       c.shape.model, c.batch, c.context, kv_gib, c.baseline_s.median * ms, c.baseline_s.min * ms,
                       c.baseline_s.max * ms, launch_col(c.baseline_launch_s), c.baseline_eb_bytes_per_s * gbs,
                       r.hbm.best_bytes_per_s * gbs, 100 * ideal0 / c.baseline_s.median, c.baseline_split);
    csv << fmt::format("{},decode,0,0,false,{:.5f},{:.5f},{:.5f},{:.3f},{:.5f},{:.3f},{:.4f},,{:.4f},{:.3f},false,,{},,"
                       "{},{:.5f}\n",
                       id, c.baseline_s.median * ms, c.baseline_s.min * ms, c.baseline_s.max * ms,
                       c.baseline_eb_bytes_per_s * gbs, ideal0 * ms, r.hbm.best_bytes_per_s * gbs,
                       ideal0 / c.baseline_s.median, r.hbm.best_bytes_per_s * 1e-12, r.host.best_bytes_per_s * gbs,
                       c.baseline_split, c.layers, c.baseline_launch_s.median * ms);
    for (const gpu::AttentionBenchPoint& p : c.points) {
      nlohmann::json jp = {{"b_host", p.b_host}, {"ratio", p.ratio}, {"balance_point", p.balance_point},
                           {"skipped", p.skipped}, {"skip_reason", p.skip_reason}, {"schedule", p.schedule}};
      const std::string bh = fmt::format("{}{}", p.b_host, p.balance_point ? " (x*)" : "");
      if (p.skipped) {
        txt << fmt::format("| {} | {} | {} | {:.2f} | tiered | {} | {:.4f} | skipped: {} | | | | | | |\n",
                           c.shape.model, c.batch, c.context, kv_gib, bh, p.ratio, p.skip_reason);
        csv << fmt::format("{},tiered,{},{:.6f},{},,,,,,,,,{:.4f},{:.3f},true,\"{}\",{},,{},\n", id, p.b_host, p.ratio,
                           p.balance_point, r.hbm.best_bytes_per_s * 1e-12, r.host.best_bytes_per_s * gbs,
                           p.skip_reason, c.split, c.layers);
        jc["points"].push_back(jp);
        continue;
      }
      ++points;
      points_met += p.target_met;
      const double ideal_eb = double(c.kv_bytes) / p.ideal_s;
      std::string target = fmt::format(">= 90 % {}", met(p.target_met));
      if (p.b_host == 0) target += fmt::format("; vs decode {}", met(c.baseline_target_met));
      jp["time_ms"] = {{"median", p.time_s.median * ms}, {"min", p.time_s.min * ms}, {"max", p.time_s.max * ms}};
      jp["launch_time_ms"] = {{"median", p.launch_s.median * ms}, {"min", p.launch_s.min * ms},
                              {"max", p.launch_s.max * ms}};
      jp["eb_gb_s"] = p.eb_bytes_per_s * gbs;
      jp["ideal_ms"] = p.ideal_s * ms;
      jp["ideal_gb_s"] = ideal_eb * gbs;
      jp["of_ideal"] = p.of_ideal;
      jp["target_met"] = p.target_met;
      jc["points"].push_back(jp);
      txt << fmt::format("| {} | {} | {} | {:.2f} | tiered | {} | {:.4f} | {:.4f} [{:.4f}, {:.4f}] | {} | {:.1f} | "
                         "{:.1f} | {:.1f} % | {} | {} |\n",
                         c.shape.model, c.batch, c.context, kv_gib, bh, p.ratio, p.time_s.median * ms,
                         p.time_s.min * ms, p.time_s.max * ms, launch_col(p.launch_s), p.eb_bytes_per_s * gbs,
                         ideal_eb * gbs, 100 * p.of_ideal, target, c.split);
      csv << fmt::format("{},tiered,{},{:.6f},{},{:.5f},{:.5f},{:.5f},{:.3f},{:.5f},{:.3f},{:.4f},{},{:.4f},{:.3f},"
                         "false,,{},\"{}\",{},{:.5f}\n",
                         id, p.b_host, p.ratio, p.balance_point, p.time_s.median * ms, p.time_s.min * ms,
                         p.time_s.max * ms, p.eb_bytes_per_s * gbs, p.ideal_s * ms, ideal_eb * gbs, p.of_ideal,
                         p.target_met, r.hbm.best_bytes_per_s * 1e-12, r.host.best_bytes_per_s * gbs, c.split,
                         p.schedule, c.layers, p.launch_s.median * ms);
    }
    j["cells"].push_back(jc);
  }
  txt << fmt::format("\ntargets: {} of {} points at >= 90 % of ideal ({}); {} of {} cells with x = 0 no slower than "
                     "decode ({})\n",
                     points_met, points, met(points_met == points), cells_met, cells_run, met(cells_met == cells_run));
  for (const std::string& s : skipped) txt << "skipped: " << s << "\n";
  j["summary"] = {{"points", points}, {"points_met", points_met}, {"cells", cells_run}, {"cells_met", cells_met}};

  emit_report(txt.str(), j, csv.str(), a.output, a.json_file, a.csv_file);
}
#endif

void run_bench_attention(const BenchAttentionArgs& a) {
  const Plan p = check_args(a);  // every argument error before looking for a GPU
  if (a.dry_run && (!a.json_file.empty() || !a.csv_file.empty() || a.output != "text")) {
    // The session-16 trial: --output json printed the table and --json wrote nothing, with exit 0.
    fail("--dry-run measures nothing, so it prints its plan as a table only (no --output json / csv, --json or "
         "--csv report)",
         "--dry-run", "drop --output / --json / --csv, or run without --dry-run on the GPU machine");
  }
  if (a.dry_run) return print_dry_run(a, p);
  check_report_files(a.json_file, a.csv_file);
  const std::string why = gpu_unavailable_reason();
  if (!why.empty()) {
    fail("dak bench attention needs a Hopper GPU: " + why, "dak bench attention",
         "run it on the GPU machine; --dry-run prints the cells and kernel schedules without a GPU");
  }
#ifdef DAK_HAVE_CUDA
  gpu::AttentionBenchOptions o;
  for (const ModelShape& m : p.models) o.models.push_back({m.name, m.heads, m.kv_heads, m.head_dim});
  o.batches = p.batches;
  o.contexts = p.contexts;
  o.ratios = p.ratios;
  o.balance_point = !a.no_balance_point;
  o.repeats = a.repeats;
  o.max_kv_bytes = uint64_t(a.max_kv_gib * kGiB);
  o.max_host_bytes = uint64_t(a.max_host_gib * kGiB);
  o.hbm_buffer_bytes = uint64_t((a.quick ? std::min(a.hbm_buffer_gib, 1.0) : a.hbm_buffer_gib) * kGiB);
  o.hbm_runs = a.quick ? std::min(a.hbm_runs, 5) : a.hbm_runs;
  o.host_ctas = a.host_ctas;
  o.host_stages = a.host_stages;
  o.hbm_stages = a.hbm_stages;
  o.limits = attention_bench_limits(tiered_attention_link_limits(HardwareProfile::h200_default()), a.host_ctas,
                                    a.host_stages);
  const gpu::AttentionBenchResult r =
      gpu::run_attention_bench(o, [](const std::string& m) { std::fprintf(stderr, "dak: %s\n", m.c_str()); });
  report(a, r);
#endif
}

}  // namespace

void add_bench_attention_command(CLI::App& bench) {
  auto a = std::make_shared<BenchAttentionArgs>();
  CLI::App* c = bench.add_subcommand(
      "attention", "One layer's decode attention with the KV cache split between host memory and HBM: EB vs offload "
                   "ratio next to the ideal of this run's B_g and B_h, and the HBM decode kernel as the baseline");
  // The comma lists' syntax is checked while parsing (exit 2), their ranges by check_args (exit 1).
  a->models_opt =
      c->add_option("--models", a->models, "Comma list of shipped config names or config.json paths")
          ->capture_default_str()
          ->check(value_syntax([](const std::string& s) { parse_name_list(s, "--models"); }));
  c->add_option("--batch,-b", a->batch, "Batches (sequences, one query each), comma list")->capture_default_str()
      ->check(value_syntax([](const std::string& s) { parse_count_list(s, "--batch", 1, "batch sizes", "8,64,512"); }));
  c->add_option("--ctx", a->ctx, "Contexts (keys per sequence), comma list")->capture_default_str()
      ->check(value_syntax(
          [](const std::string& s) { parse_count_list(s, "--ctx", 1, "context lengths", "512,4096,32768"); }));
  c->add_option("--ratios", a->ratios, "Offload ratios b_h / B in [0, 1], decimals or fractions (1/8), comma list")
      ->capture_default_str()
      ->check(value_syntax([](const std::string& s) { parse_ratios(s); }));
  c->add_flag("--no-balance-point", a->no_balance_point, "Do not add the point nearest x* = B_h / (B_g + B_h)");
  // whole_number reads the integer flags as decimal (CLI11 alone took 010 as 8 and 0x10 as 16) within int;
  // check_args refuses values outside the ranges their texts give.
  c->add_option("--repeats,-r", a->repeats, "Timed launches per point (>= 5), after one warm-up")
      ->capture_default_str()
      ->transform(whole_number("a count from 5 to 1000", INT32_MIN, INT32_MAX));  // the range: check_timed_runs
  c->add_option("--max-kv-gib", a->max_kv_gib, "Skip cells whose KV (one layer) exceeds this")
      ->capture_default_str()
      ->transform(decimal_number("a size in GiB above 0 and at most 1048576 (e.g. 100)", 0.0, 1048576.0, true));
  c->add_option("--max-host-gib", a->max_host_gib, "Pinned host memory for the host tier (0: MemAvailable - 16 GiB)")
      ->capture_default_str()
      ->transform(decimal_number("0 (MemAvailable - 16 GiB) or a size in GiB up to 1048576", 0.0, 1048576.0));
  c->add_option("--host-ctas", a->host_ctas,
                "Override: host CTAs of 4 working warps (0: the default schedule's, which may run 2 or 1 warps "
                "per host CTA for few host items); the HBM side takes the CTA slots they leave (at least 1 "
                "CTA), and more CTAs than the SMs hold run in waves")
      ->capture_default_str()
      ->transform(whole_number("0 (the default schedule's) or a count from 1 to 1024", INT32_MIN, INT32_MAX));
  // 1 to kMaxStages, fewer where the ring would not fit in a CTA's SMEM: check_args refuses values above
  // kMaxStages, and each point's schedule (validate) a ring too large for its head_dim.
  const auto stages_text = [](bool host) {
    return fmt::format("0 (the default) or steps from 1 to {} that fit the {:g} KiB of SMEM per CTA: up to {}",
                       tiered_attention::kMaxStages, tiered_attention::kSmemLimitBytes / 1024.0, stage_limits(host));
  };
  const std::string host_stages = stages_text(true), hbm_stages = stages_text(false);
  c->add_option("--host-stages", a->host_stages,
                "Override: steps in flight per host warp, the host CTAs running 4 warps; " + host_stages)
      ->capture_default_str()
      ->transform(whole_number(host_stages, INT32_MIN, INT32_MAX));
  c->add_option("--hbm-stages", a->hbm_stages, "Override: steps in flight per HBM warp; " + hbm_stages)
      ->capture_default_str()
      ->transform(whole_number(hbm_stages, INT32_MIN, INT32_MAX));
  c->add_option("--hbm-buffer-gib", a->hbm_buffer_gib, "Buffer streamed to measure B_g, GiB")
      ->capture_default_str()
      ->transform(decimal_number(kHbmBufferGibText, 0.0, 64.0, true));
  c->add_option("--hbm-runs", a->hbm_runs, "Timed launches per stream configuration for B_g")
      ->capture_default_str()
      ->transform(whole_number("a count from 1 to 1000", INT32_MIN, INT32_MAX));  // the range: check_hbm_measurement
  c->add_flag("--quick", a->quick, "Smoke run: first model, batch 8, contexts 512 and 4096, ratios 0, 1/2, 1");
  c->add_flag("--dry-run", a->dry_run, "Print the cells, points and kernel schedules without a GPU");
  c->add_option("--output", a->output, "What to print on stdout: text (table), json or csv")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json", "csv"}));
  c->add_option("--json", a->json_file, "Also write the JSON to FILE");
  c->add_option("--csv", a->csv_file, "Also write the CSV (one row per kernel and point) to FILE");
  c->footer(kFooter);
  c->callback([a] { run_bench_attention(*a); });
}

}  // namespace dak::cli
