// `dak bench gemm` (issue 4, item 7): effective bandwidth EB(x) of the tiered GEMM (the paper's
// "SplitK GEMM") at offload ratios x, next to its ideal from B_g and B_h measured in the same run,
// cuBLAS at x = 0 and the prefetch baseline, for the linear layers of shipped model configs.
// Measurements: gpu/bench_gemm.h; definitions and how to run: docs/bench-gemm.md.
//
//   dak bench gemm [--models llama-2-7b,llama-2-70b,opt-30b] [--tokens 8,512]
//                  [--ratios 0,0.5,1,2,5,10,20,40,100] [--runs 7] [--warmup-ms 0] [--layers 8]
//                  [--congestion CTAS,STAGES] [--max-cluster 4|2|1] [--compute-tile auto|128|256] [--host-rows tile|row] [--quick] [--full] [--dry-run] [--json FILE] [--csv FILE]
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/config_locator.h"
#include "core/error.h"
#include "core/model_config.h"
#include "core/op_graph.h"
#include "core/tiered_gemm_schedule.h"
#ifdef DAK_HAVE_CUDA
#include "gpu/bench.h"
#include "gpu/bench_gemm.h"
#include "gpu/device.h"
#include "gpu/hbm_arena.h"
#include "gpu/host_arena.h"
#include "gpu/kernels/tiered_gemm.h"
#endif

namespace dak::cli {
namespace {

constexpr int64_t kMaxTokens = 8192;    // the tiered GEMM's N range (issue 4)
constexpr int64_t kDrySmCount = 132;    // --dry-run plans for an H200 ...
constexpr int64_t kDryCluster4Ctas = 120;  // ... where clusters of 4 fit 120 CTAs at once
                                           //   (cudaOccupancyMaxActiveClusters, 2026-12-01)
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

struct BenchGemmArgs {
  std::string models = "llama-2-7b,llama-2-70b,opt-30b";
  std::string tokens = "8,512";
  std::string ratios = "0,0.5,1,2,5,10,20,40,100";
  int runs = 7;
  double warmup_ms = 0;  // session 37: 20 ms changed figures both ways, B_g and B_h are burst figures
  int layers = 8;
  std::string congestion;
  int max_cluster = 4;
  std::string compute_tile = "auto";
  std::string host_rows = "tile";
  double per_gemm_min_mib = 256;
  double stack_host_gib = 8;
  bool quick = false;
  bool full = false;
  bool dry_run = false;
  std::string json_file;
  std::string csv_file;
  uint64_t seed = 0;
};

constexpr const char* kFooter = R"(What is measured (docs/bench-gemm.md has the details):
  shapes  the linear layers of each model: qkv [H*D + 2*Hkv*D, hidden] (q, k, v fused), o [hidden, H*D],
          gate_up [2I, hidden] (gate and up fused; OPT: fc1 [I, hidden]), down [hidden, I] (OPT: fc2);
          M = out features, K = in features, y[N, M] = x[N, K] . W[M, K]^T, bf16, no bias.
  x       offload ratio: rows [0, m_host) of W in pinned host memory, m_host = x * M rounded to whole
          128-row units as the planner places them (at least one unit when x > 0; --host-rows row: to the
          nearest row); the host bytes and the ideal use the rounded m_host (x_actual in JSON/CSV).
  gemm    per GEMM, for weights >= --per-gemm-min-mib: CUDA events around each launch.
  stack   --layers decoder layers (each its own weights), all four linears each, one CUDA graph per x,
          events around each replay; times per layer = replay / layers (launch gaps count as in decode).
          Points whose host rows exceed --stack-host-gib per replay are skipped unless --full (listed).
  time    median [min, max] of --runs timed launches or replays, us, after --warmup-ms of sustained load
          (the same launch or replay repeated; default none) and 2 warm-ups (1 with --quick).
  EB      weight bytes C (M*K*2, per launch or per layer) / time, GB/s (1e9 B/s).
  ideal   C / T with T = max((1-x) C / B_g, x C / B_h, T_comp), summed over the ops of a layer;
          T_comp = 2 N M K / R with R the best cuBLAS rate of this run at that shape, counted for N > 64
          only (the kernel's compute path); bound names the term that binds (hbm, host or compute).
  ratio   ideal time / time = EB / ideal EB (1.0 = at the floor).
  B_g     best HBM read of this run (TMA bulk stream of a buffer many times the L2, best launch).
  B_h     SMs reading pinned host memory with TMA bulk copies (4x4, 1x4, 8x2, 2x4, 4x2, 16x1 CTAs x
          stages of 32 KiB), the best configuration's median launch.
  cuBLAS  cuBLASLt at x = 0 (all of W in HBM), same timing method.
  prefetch the FlexGen way: cudaMemcpyAsync H2D of the host rows into HBM, then the all-HBM GEMM (the
          faster of cuBLAS and the tiered GEMM at x = 0); stack: layer-wise double buffered (the copy of
          layer l+1 overlaps the GEMMs of layer l).
  bits    the tiered GEMM's outputs at x are bitwise equal to its x = 0 outputs (split invariance).
  target  issue 4: N = 8: ratio >= 0.95 at every x and x = 0 no slower than cuBLAS; N = 512: x = 0 at
          >= 90 % of cuBLAS, EB within 5 % of EB(0) for x <= x* = B_h T_comp / C, and where the host
          link binds time * B_h / host bytes <= 1.05. Shown as met / MISSED.
--dry-run prints the shapes, points and kernel schedules (for 132 SMs) without a GPU. --quick: the first
model only, 5 runs, smaller B_g / B_h buffers. Needs a Hopper GPU otherwise: without one dak bench gemm fails
with the reason and exit code 1.)";

/// "0,0.5,100" -> {0, 0.5, 100} (percent), sorted, duplicates removed. Throws dak::UsageError for an
/// item that is not a number, dak::Error for one outside [0, 100].
std::vector<double> parse_ratios(const std::string& s) {
  std::vector<double> out;
  for (const std::string& tok : split_list(s)) {
    const std::optional<double> v = parse_number(tok);
    if (!v) {
      fail_usage(fmt::format("'{}' is not a comma-separated list of percentages: {}", s, bad_item(tok)), "--ratios",
                 "write offload ratios in percent separated by commas, e.g. 0,0.5,1,10,100");
    }
    if (*v < 0 || *v > 100) {
      fail(fmt::format("--ratios value {} is outside [0, 100] percent", tok), "--ratios",
           "give offload ratios from 0 (all of W in HBM) to 100 (all of W in host memory)");
    }
    out.push_back(*v == 0 ? 0.0 : *v);  // -0 is 0
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

struct Congestion {
  int32_t host_ctas = 0;
  int32_t host_stages = 0;
};

/// "4,4" -> host CTAs and stages, each in [1, 1024]. Throws dak::UsageError for text that is not two
/// whole numbers, dak::Error for a number out of range.
std::optional<Congestion> parse_congestion(const std::string& s) {
  if (s.empty()) return std::nullopt;
  const std::vector<std::string> parts = split_list(s);
  const std::string fix = "give two positive integers: host CTAs and TMA stages in flight per host CTA, e.g. 4,4";
  if (parts.size() != 2 || !is_integer_text(parts[0]) || !is_integer_text(parts[1])) {
    fail_usage(fmt::format("--congestion '{}' is not HOST_CTAS,HOST_STAGES", s), "--congestion", fix);
  }
  std::vector<int64_t> v;
  for (const std::string& tok : parts) {
    const std::optional<int64_t> x = parse_integer(tok);  // nullopt: beyond int64
    if (!x || *x < 1 || *x > 1024) {
      fail(fmt::format("--congestion '{}': {} is outside [1, 1024]", s, tok), "--congestion", fix);
    }
    v.push_back(*x);
  }
  return Congestion{int32_t(v[0]), int32_t(v[1])};
}

struct Linear {
  std::string op;
  int64_t M = 0, K = 0;
  double bytes() const { return double(M) * double(K) * 2; }
};

/// The linear layers of one decoder layer, fused as gpu/gpu_weights.h stores them.
std::vector<Linear> linear_shapes(const ModelConfig& c) {
  const int64_t h = c.hidden_size, i = c.intermediate_size;
  return {{"qkv", c.q_dim() + 2 * c.kv_dim(), h},
          {"o", h, c.q_dim()},
          {"gate_up", c.gated_mlp ? 2 * i : i, h},
          {"down", h, i}};
}

/// Rows of W in host memory at x = pct / 100. `whole_tiles` (--host-rows tile, the default): whole
/// units of StepShape::tile_rows (128) rows, as the planner places them (core/op_graph.h), the
/// nearest count with halves away from zero, at least one unit when x > 0, at most M; otherwise
/// (--host-rows row) m_host = round(x * M) to the nearest row. Within [0, M].
int64_t host_rows(double pct, int64_t M, bool whole_tiles) {
  if (!whole_tiles) return std::clamp<int64_t>(std::llround(pct * double(M) / 100.0), 0, M);
  return tiered_gemm_host_rows(pct / 100.0, M, StepShape{}.tile_rows);
}

TieredGemmSchedule schedule_for(const Linear& op, int64_t N, int64_t m_host, int64_t sm_count,
                                const TieredGemmLinkLimits& limits, const std::optional<Congestion>& cong) {
  TieredGemmSchedule s = plan_tiered_gemm(op.M, N, op.K, m_host, sm_count, limits);
  if (!cong || m_host == 0) return s;
  const std::string where = "--congestion";
  // The CTAs that can run at once: clusters of 4 need 4 free SMs of one GPC.
  const int64_t grid = limits.grid_ctas(s.cluster, sm_count);
  const std::string rounded =
      s.cluster > 1 ? fmt::format(" (rounded up to whole multicast clusters of {})", s.cluster) : std::string();
  const std::string no_multicast = s.cluster > 1 ? ", or --max-cluster 1 (no multicast, every SM usable)" : "";
  if (s.hbm_units() == 0 && cong->host_ctas > grid) {  // every row on the host: the whole grid may read it
    fail(fmt::format("{} host CTAs{} are more than the {} that run at once ({} {}x{} at N = {}, every row on the host)",
                     cong->host_ctas, rounded, grid, op.op, op.M, op.K, N),
         where, fmt::format("use at most {} host CTAs at N = {}{}", grid, N, no_multicast));
  }
  if (s.hbm_units() > 0 && cong->host_ctas > grid - s.cluster) {
    fail(fmt::format("{} host CTAs{} of the {} that run at once leave no {} for the HBM rows of {} {}x{} at N = {} "
                     "(m_host {})",
                     cong->host_ctas, rounded, grid, s.cluster > 1 ? std::string("cluster") : std::string("SM"), op.op,
                     op.M, op.K, N, m_host),
         where, fmt::format("use at most {} host CTAs at N = {}{}", grid - s.cluster, N, no_multicast));
  }
  if (cong->host_stages > s.tile.max_stages()) {
    fail(fmt::format("{} stages per host CTA exceed the SMEM ring of the {}x{} tile used at N = {} ({} stages)",
                     cong->host_stages, s.tile.bm, s.tile.bn, N, s.tile.max_stages()),
         where, fmt::format("use at most {} stages at N = {}", s.tile.max_stages(), N));
  }
  return with_congestion(s, cong->host_ctas, cong->host_stages, 0, grid);
}

/// Congestion limits of the bench's plans without a GPU (--dry-run and the up-front checks): the
/// default link limits, the H200's co-residency of clusters of 4, multicast up to --max-cluster.
TieredGemmLinkLimits dry_limits(const BenchGemmArgs& a) {
  TieredGemmLinkLimits l;
  l.max_cluster = a.max_cluster;
  l.compute_bn = a.compute_tile == "128" ? 128 : a.compute_tile == "256" ? 256 : 0;
  l.cluster4_ctas = kDryCluster4Ctas;
  return l;
}

#ifdef DAK_HAVE_CUDA
/// The same with this GPU's co-residency of clusters of 4 (gpu/kernels/tiered_gemm.h).
TieredGemmLinkLimits device_limits(const BenchGemmArgs& a) {
  TieredGemmLinkLimits l = dry_limits(a);
  l.cluster4_ctas = 0;
  return gpu::tiered_gemm_cluster_limits(l);
}
#endif

enum class Method { kGemm, kStack };

struct Experiment {
  std::string model;
  Method method = Method::kGemm;
  std::vector<Linear> ops;
  int64_t N = 0;
  int layers = 1;
  std::vector<TieredGemmSchedule> reference;               // per op, m_host = 0
  std::vector<double> ratios;                              // measured, percent
  std::vector<std::vector<TieredGemmSchedule>> schedules;  // [point][op]
  std::vector<std::string> skipped;                        // why points were left out

  double layer_bytes() const {
    double b = 0;
    for (const Linear& op : ops) b += op.bytes();
    return b;
  }
  std::string method_name() const { return method == Method::kGemm ? "gemm" : fmt::format("stack{}", layers); }
  std::string op_name() const { return method == Method::kGemm ? ops[0].op : "layer"; }
};

struct Plan {
  std::vector<std::pair<std::string, std::vector<Linear>>> models;
  std::vector<Experiment> experiments;
};

Plan build_plan(const BenchGemmArgs& a, const std::vector<LocatedConfig>& models, const std::vector<int64_t>& tokens,
                const std::vector<double>& ratios, const std::optional<Congestion>& cong, int64_t sm_count,
                const TieredGemmLinkLimits& limits) {
  Plan plan;
  const bool tiles = a.host_rows == "tile";
  for (const LocatedConfig& m : models) {
    const std::vector<Linear> ops = linear_shapes(m.config);
    for (const Linear& op : ops) {
      if (op.K % 8 != 0) {  // TMA row pitches are multiples of 16 bytes (plan_tiered_gemm would refuse it)
        fail(fmt::format("{}'s {} has K = {} input features; the tiered GEMM reads W and x rows with TMA, which "
                         "needs K to be a multiple of 8",
                         m.name, op.op, op.K),
             m.path.string() + " (--models)",
             "leave this model out of --models (dak generate runs it on cuBLASLt, without host rows)");
      }
    }
    plan.models.push_back({m.name, ops});
    for (int64_t N : tokens) {
      auto make = [&](Method method, std::vector<Linear> exp_ops, int layers) {
        Experiment e;
        e.model = m.name;
        e.method = method;
        e.ops = std::move(exp_ops);
        e.N = N;
        e.layers = layers;
        for (const Linear& op : e.ops) e.reference.push_back(schedule_for(op, N, 0, sm_count, limits, cong));
        for (double x : ratios) {
          double host_bytes = 0;
          for (const Linear& op : e.ops) host_bytes += double(host_rows(x, op.M, tiles)) * double(op.K) * 2 * layers;
          if (method == Method::kStack && !a.full && host_bytes > a.stack_host_gib * kGiB) {
            e.skipped.push_back(fmt::format(
                "{} N={} {}: x = {}% skipped ({:.2f} GiB of host rows per replay > --stack-host-gib {}; --full "
                "measures it)",
                e.model, N, e.method_name(), x, host_bytes / kGiB, a.stack_host_gib));
            continue;
          }
          std::vector<TieredGemmSchedule> s;
          for (const Linear& op : e.ops) s.push_back(schedule_for(op, N, host_rows(x, op.M, tiles), sm_count, limits, cong));
          e.ratios.push_back(x);
          e.schedules.push_back(std::move(s));
        }
        plan.experiments.push_back(std::move(e));
      };
      for (const Linear& op : ops) {
        if (op.bytes() >= a.per_gemm_min_mib * kMiB) make(Method::kGemm, {op}, 1);
      }
      make(Method::kStack, ops, a.layers);
    }
  }
  return plan;
}

std::string print_plan(const Plan& plan, int64_t sm_count, const BenchGemmArgs& a) {
  std::ostringstream o;
  o << fmt::format("dak bench gemm --dry-run: {} experiment(s), schedules for {} SMs{}\n", plan.experiments.size(),
                   sm_count,
                   a.max_cluster >= 4 ? fmt::format(", {} of them co-resident in multicast clusters of 4 (an H200; the "
                                                    "real run asks the GPU)",
                                                    kDryCluster4Ctas)
                                      : std::string());
  o << fmt::format("compute tile (N > 64): {}\n", a.compute_tile == "auto" ? "chosen per shape (128 x 128 or 128 x 256)"
                                                                             : "128 x " + a.compute_tile + " (--compute-tile)");
  o << fmt::format("{}; host CTAs x stages: {}; host rows: {}\n",
                   a.max_cluster > 1 ? fmt::format("multicast clusters of up to {} CTAs", a.max_cluster)
                                     : std::string("multicast off (--max-cluster 1)"),
                   a.congestion.empty() ? std::string("the schedule's") : "--congestion " + a.congestion + " at x > 0",
                   a.host_rows == "tile" ? "whole 128-row tiles (--host-rows tile)" : "round(x * M) (--host-rows row)");
  o << fmt::format("timing: per figure {} ms of sustained load (--warmup-ms), {} warm-up(s), {} timed runs (--runs)\n",
                   a.warmup_ms, a.quick ? 1 : 2, a.runs);
  for (const auto& [name, ops] : plan.models) {
    o << fmt::format("{}: ", name);
    for (size_t i = 0; i < ops.size(); ++i) {
      o << fmt::format("{}{} {}x{} ({:.1f} MiB)", i ? ", " : "", ops[i].op, ops[i].M, ops[i].K, ops[i].bytes() / kMiB);
    }
    o << "\n";
  }
  for (const Experiment& e : plan.experiments) {
    o << fmt::format("\n{} N={} {} {}: {} points, {:.1f} MiB per {}\n", e.model, e.N, e.method_name(), e.op_name(),
                     e.ratios.size(), e.layer_bytes() / kMiB, e.method == Method::kGemm ? "launch" : "layer");
    for (size_t p = 0; p < e.ratios.size(); ++p) {
      for (size_t i = 0; i < e.ops.size(); ++i) {
        o << fmt::format("  x {}% {}: {}\n", e.ratios[p], e.ops[i].op, e.schedules[p][i].to_string());
      }
    }
    for (const std::string& s : e.skipped) o << "  " << s << "\n";
  }
  return o.str();
}

#ifdef DAK_HAVE_CUDA

/// One row of the report: an experiment at one x, with its ideal and target.
struct Row {
  const Experiment* e = nullptr;
  size_t point = 0;
  double x_actual = 0;         // host bytes / C
  double bytes = 0;            // C per launch or per layer
  double host_bytes = 0;
  gpu::Spread time_s, cublas_s, prefetch_s;
  double t_hbm_s = 0, t_host_s = 0, t_comp_s = 0;  // summed over the ops
  bool compute_counted = false;
  double ideal_s = 0;
  std::string bound;
  double eb = 0, ideal_eb = 0, ratio = 0;
  double x_star = -1;          // B_h T_comp / C, compute-bound N only
  std::string target;          // "" = none for this row
  bool target_met = true;
  bool same_bits = false;
};

std::string us(double s) { return fmt::format("{:.1f}", s * 1e6); }

Row make_row(const Experiment& e, size_t p, const gpu::GemmBenchResult& r, double b_g, double b_h,
             double eb_at_zero) {
  Row row;
  row.e = &e;
  row.point = p;
  const gpu::GemmPointResult& pr = r.points[p];
  row.time_s = pr.tiered_s;
  row.prefetch_s = pr.prefetch_s;
  row.cublas_s = r.cublas_s;
  row.same_bits = pr.same_bits;
  row.compute_counted = e.N > 64;
  double t_bound[3] = {0, 0, 0};  // hbm, host, compute: ideal time attributed to the term that binds
  for (size_t i = 0; i < e.ops.size(); ++i) {
    const Linear& op = e.ops[i];
    const double c = op.bytes(), h = double(e.schedules[p][i].m_host) * double(op.K) * 2;
    const double tg = (c - h) / b_g, th = h / b_h, tc = r.cublas_op_s[i].min;  // 2NMK / R = best cuBLAS time
    row.bytes += c;
    row.host_bytes += h;
    row.t_hbm_s += tg;
    row.t_host_s += th;
    row.t_comp_s += tc;
    const double t = std::max({tg, th, row.compute_counted ? tc : 0.0});
    row.ideal_s += t;
    t_bound[t == tg ? 0 : t == th ? 1 : 2] += t;
  }
  const char* names[3] = {"hbm", "host", "compute"};
  row.bound = names[std::max_element(t_bound, t_bound + 3) - t_bound];
  row.x_actual = row.host_bytes / row.bytes;
  row.eb = row.bytes / row.time_s.median;
  row.ideal_eb = row.bytes / row.ideal_s;
  row.ratio = row.ideal_s / row.time_s.median;
  if (row.compute_counted) row.x_star = b_h * row.t_comp_s / row.bytes;

  auto verdict = [&](bool ok, const std::string& what) {
    row.target = fmt::format("{} {}", what, ok ? "met" : "MISSED");
    row.target_met = ok;
  };
  if (e.N == 8) {
    if (row.host_bytes == 0) {
      verdict(row.ratio >= 0.95 && row.time_s.median <= row.cublas_s.median, ">=95% ideal, <=cuBLAS");
    } else {
      verdict(row.ratio >= 0.95, ">=95% ideal");
    }
  } else if (e.N == 512) {
    if (row.host_bytes == 0) {
      verdict(row.cublas_s.median / row.time_s.median >= 0.90, ">=90% cuBLAS");
    } else if (row.x_actual <= row.x_star) {
      verdict(row.eb >= 0.95 * eb_at_zero, "EB>=95% EB(0)");
    } else if (row.bound == "host") {
      verdict(row.time_s.median * b_h / row.host_bytes <= 1.05, "t*B_h/host<=1.05");
    }
  }
  return row;
}

nlohmann::json spread_json(const gpu::Spread& s) {
  return {{"median", s.median * 1e6}, {"min", s.min * 1e6}, {"max", s.max * 1e6}};
}

void run_bench_gemm_gpu(const BenchGemmArgs& a, const std::vector<LocatedConfig>& models,
                        const std::vector<int64_t>& tokens, const std::vector<double>& ratios,
                        const std::optional<Congestion>& cong) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string why;
  const auto dev = gpu::probe_device(0, &why);
  if (!dev) fail("dak bench gemm needs a Hopper GPU: " + why, "dak bench gemm", "run it on the GPU machine");
  const Plan plan = build_plan(a, models, tokens, ratios, cong, dev->sm_count, device_limits(a));
  const int runs = a.runs;
  const int warmup = a.quick ? 1 : 2;

  std::vector<gpu::GemmBenchRequest> requests;
  for (const Experiment& e : plan.experiments) {
    gpu::GemmBenchRequest q;
    q.timing = e.method == Method::kGemm ? gpu::GemmTiming::kPerLaunch : gpu::GemmTiming::kGraphStack;
    for (const Linear& op : e.ops) q.ops.push_back({op.op, op.M, op.K});
    q.N = e.N;
    q.layers = e.layers;
    q.reference = e.reference;
    for (size_t p = 0; p < e.ratios.size(); ++p) q.points.push_back({e.ratios[p] / 100.0, e.schedules[p]});
    q.runs = runs;
    q.warmup = warmup;
    q.warmup_s = a.warmup_ms * 1e-3;
    q.weights_seed = a.seed;
    requests.push_back(std::move(q));
  }
  const uint64_t bh_bytes = a.quick ? (256ull << 20) : (512ull << 20);
  uint64_t host_bytes = bh_bytes;
  for (const gpu::GemmBenchRequest& q : requests) host_bytes = std::max(host_bytes, gpu::gemm_bench_host_bytes(q));
  std::fprintf(stderr, "dak: pinning %s of host memory for the host rows of W\n", gpu::format_gib(host_bytes).c_str());
  gpu::PinnedHostArena host(host_bytes, "dak bench gemm: host rows of W");

  const uint64_t bg_bytes = a.quick ? (1ull << 30) : (4ull << 30);
  std::fprintf(stderr, "dak: measuring B_g (TMA bulk stream of %s)\n", gpu::format_gib(bg_bytes).c_str());
  const gpu::HbmBandwidth hbm = gpu::measure_hbm_bandwidth(bg_bytes, a.quick ? 5 : 10);
  std::fprintf(stderr, "dak: measuring B_h (TMA bulk reads of %s of pinned host memory)\n",
               gpu::format_gib(bh_bytes).c_str());
  const gpu::HostReadBandwidth link =
      gpu::measure_host_read_bandwidth(host.allocate(bh_bytes, "B_h buffer"), bh_bytes, std::max(runs, 5));
  const double b_g = hbm.best_bytes_per_s, b_h = link.best_bytes_per_s;

  std::vector<gpu::GemmBenchResult> results;
  for (size_t k = 0; k < plan.experiments.size(); ++k) {
    const Experiment& e = plan.experiments[k];
    std::fprintf(stderr, "dak: [%zu/%zu] %s N=%lld %s %s, %zu points (%.1f s so far)\n", k + 1,
                 plan.experiments.size(), e.model.c_str(), static_cast<long long>(e.N), e.method_name().c_str(),
                 e.op_name().c_str(), e.ratios.size(), seconds_since(t0));
    results.push_back(gpu::run_gemm_bench(requests[k], host));
  }

  std::vector<Row> rows;
  for (size_t k = 0; k < plan.experiments.size(); ++k) {
    const Experiment& e = plan.experiments[k];
    const gpu::GemmBenchResult& r = results[k];
    double eb0 = e.layer_bytes() / r.tiered_ref_s.median;
    for (size_t p = 0; p < e.ratios.size(); ++p) {
      if (e.ratios[p] == 0) eb0 = e.layer_bytes() / r.points[p].tiered_s.median;
    }
    for (size_t p = 0; p < e.ratios.size(); ++p) rows.push_back(make_row(e, p, r, b_g, b_h, eb0));
  }
  std::vector<std::string> skipped;
  for (const Experiment& e : plan.experiments) skipped.insert(skipped.end(), e.skipped.begin(), e.skipped.end());

  // JSON
  nlohmann::json j;
  j["device"] = dev->name;
  j["sm_count"] = dev->sm_count;
  j["b_g"] = {{"gbps", b_g * 1e-9}, {"median_gbps", hbm.median_bytes_per_s * 1e-9}, {"buffer_bytes", hbm.buffer_bytes},
              {"chunk_bytes", hbm.chunk_bytes}, {"stages", hbm.stages}, {"ctas_per_sm", hbm.ctas_per_sm},
              {"runs", hbm.runs}, {"configs", hbm.configs}};
  j["b_h"] = {{"gbps", b_h * 1e-9}, {"max_gbps", link.max_bytes_per_s * 1e-9}, {"buffer_bytes", link.buffer_bytes},
              {"chunk_bytes", link.chunk_bytes}, {"stages", link.stages}, {"ctas", link.ctas}, {"runs", link.runs},
              {"configs", link.configs}};
  j["config"] = {{"runs", runs}, {"warmup", warmup}, {"warmup_ms", a.warmup_ms}, {"layers", a.layers}, {"per_gemm_min_mib", a.per_gemm_min_mib},
                 {"stack_host_gib", a.stack_host_gib}, {"full", a.full}, {"quick", a.quick}, {"seed", a.seed},
                 {"congestion", a.congestion}, {"host_rows", a.host_rows}, {"max_cluster", a.max_cluster},
                 {"compute_tile", a.compute_tile}};
  j["skipped"] = skipped;
  for (size_t k = 0; k < plan.experiments.size(); ++k) {
    const Experiment& e = plan.experiments[k];
    const gpu::GemmBenchResult& r = results[k];
    nlohmann::json je = {{"model", e.model}, {"method", e.method_name()}, {"N", e.N}, {"layers", e.layers},
                         {"bytes", e.layer_bytes()}, {"tiered_x0_us", spread_json(r.tiered_ref_s)},
                         {"cublas_us", spread_json(r.cublas_s)}, {"prefetch_gemm", r.prefetch_gemm},
                         {"max_rel_diff_vs_cublas", r.max_rel_diff_vs_cublas}, {"gated", r.gated}};
    for (size_t i = 0; i < e.ops.size(); ++i) {
      je["ops"].push_back({{"op", e.ops[i].op}, {"M", e.ops[i].M}, {"K", e.ops[i].K},
                           {"cublas_us", spread_json(r.cublas_op_s[i])}});
    }
    j["experiments"].push_back(je);
  }
  for (const Row& row : rows) {
    const Experiment& e = *row.e;
    nlohmann::json jr = {{"model", e.model}, {"method", e.method_name()}, {"op", e.op_name()}, {"N", e.N},
                         {"x_pct", e.ratios[row.point]}, {"x_actual_pct", row.x_actual * 100}, {"bytes", row.bytes},
                         {"host_bytes", row.host_bytes}, {"time_us", spread_json(row.time_s)},
                         {"eb_gbps", row.eb * 1e-9}, {"ideal_gbps", row.ideal_eb * 1e-9},
                         {"ideal_us", row.ideal_s * 1e6}, {"t_hbm_us", row.t_hbm_s * 1e6},
                         {"t_host_us", row.t_host_s * 1e6}, {"t_comp_us", row.t_comp_s * 1e6},
                         {"compute_counted", row.compute_counted}, {"bound", row.bound}, {"ratio", row.ratio},
                         {"cublas_us", spread_json(row.cublas_s)}, {"prefetch_us", spread_json(row.prefetch_s)},
                         {"same_bits", row.same_bits}, {"target", row.target}, {"target_met", row.target_met}};
    if (row.x_star >= 0) jr["x_star_pct"] = row.x_star * 100;
    for (size_t i = 0; i < e.ops.size(); ++i) {
      const TieredGemmSchedule& s = e.schedules[row.point][i];
      jr["schedules"].push_back({{"op", e.ops[i].op}, {"M", s.M}, {"K", s.K}, {"m_host", s.m_host},
                                 {"tile", fmt::format("{}x{}", s.tile.bm, s.tile.bn)}, {"k_splits", s.k_splits},
                                 {"host_ctas", s.host_ctas}, {"host_stages", s.host_stages},
                                 {"hbm_ctas", s.hbm_ctas}, {"hbm_stages", s.hbm_stages}, {"cluster", s.cluster}});
    }
    j["rows"].push_back(jr);
  }

  // CSV (tools/plot_gemm_eb.py reads it)
  std::ostringstream csv;
  csv << "model,method,op,M,K,N,x_pct,x_actual_pct,m_host,bytes,host_bytes,time_us,time_min_us,time_max_us,eb_gbps,"
         "ideal_gbps,ideal_us,t_hbm_us,t_host_us,t_comp_us,compute_counted,bound,ratio,cublas_us,prefetch_us,"
         "prefetch_min_us,prefetch_max_us,prefetch_gemm,same_bits,target,target_met,b_g_gbps,b_h_gbps,host_ctas,"
         "host_stages,hbm_ctas,hbm_stages,cluster\n";
  for (size_t k = 0, n = 0; k < plan.experiments.size(); ++k) {
    const Experiment& e = plan.experiments[k];
    for (size_t p = 0; p < e.ratios.size(); ++p, ++n) {
      const Row& row = rows[n];
      const bool one = e.ops.size() == 1;
      const TieredGemmSchedule& s = e.schedules[p][0];
      csv << fmt::format("{},{},{},{},{},{},{:.4g},{:.4g},{},{:.0f},{:.0f},{:.2f},{:.2f},{:.2f},{:.2f},{:.2f},{:.2f},"
                         "{:.2f},{:.2f},{:.2f},{},{},{:.4f},{:.2f},{:.2f},{:.2f},{:.2f},{},{},\"{}\",{},{:.2f},{:.3f},"
                         "{},{},{},{},{}\n",
                         e.model, e.method_name(), e.op_name(), one ? e.ops[0].M : 0, one ? e.ops[0].K : 0, e.N,
                         e.ratios[p], row.x_actual * 100, one ? s.m_host : -1, row.bytes, row.host_bytes,
                         row.time_s.median * 1e6, row.time_s.min * 1e6, row.time_s.max * 1e6, row.eb * 1e-9,
                         row.ideal_eb * 1e-9, row.ideal_s * 1e6, row.t_hbm_s * 1e6, row.t_host_s * 1e6,
                         row.t_comp_s * 1e6, row.compute_counted ? 1 : 0, row.bound, row.ratio,
                         row.cublas_s.median * 1e6, row.prefetch_s.median * 1e6, row.prefetch_s.min * 1e6,
                         row.prefetch_s.max * 1e6, results[k].prefetch_gemm, row.same_bits ? 1 : 0, row.target,
                         row.target.empty() ? "" : (row.target_met ? "1" : "0"), b_g * 1e-9, b_h * 1e-9,
                         one ? s.host_ctas : -1, one ? s.host_stages : -1, one ? s.hbm_ctas : -1,
                         one ? s.hbm_stages : -1, one ? s.cluster : -1);
    }
  }

  // Text
  std::ostringstream txt;
  txt << fmt::format("dak bench gemm: tiered GEMM (SplitK) vs cuBLAS and the prefetch baseline on {}, {} SMs\n",
                     dev->name, dev->sm_count);
  txt << fmt::format("B_g = {:.1f} GB/s (HBM read: TMA bulk stream of {}, best of {} launches x {} configs; best "
                     "config {} KiB x {} stages, {} CTA/SM)\n",
                     b_g * 1e-9, gpu::format_gib(hbm.buffer_bytes), hbm.runs, hbm.configs, hbm.chunk_bytes >> 10,
                     hbm.stages, hbm.ctas_per_sm);
  txt << fmt::format("B_h = {:.2f} GB/s (SMs reading pinned host memory: TMA bulk copies of {}, median of {} launches "
                     "of the best of {} configs: {} CTAs x {} stages x {} KiB; its best launch {:.2f} GB/s)\n",
                     b_h * 1e-9, gpu::format_gib(link.buffer_bytes), link.runs, link.configs, link.ctas, link.stages,
                     link.chunk_bytes >> 10, link.max_bytes_per_s * 1e-9);
  txt << fmt::format("x* (memory-bound balance) = B_h / (B_g + B_h) = {:.2f} %; times are medians [min, max] of {} "
                     "runs after {} ms of sustained load and {} warm-up(s); gemm = per launch, stack{} = per layer of a {}-layer "
                     "CUDA graph\n",
                     100 * b_h / (b_g + b_h), runs, a.warmup_ms, warmup, a.layers, a.layers);
  if (cong) txt << fmt::format("--congestion: {} host CTAs x {} stages at every x > 0\n", cong->host_ctas,
                               cong->host_stages);
  if (a.compute_tile != "auto") txt << fmt::format("--compute-tile: 128 x {} at every N > 64\n", a.compute_tile);
  txt << fmt::format("multicast: W tiles shared by clusters of up to {} CTAs at N > 64 ({} CTAs co-resident in "
                     "clusters of 4)\n",
                     a.max_cluster, device_limits(a).cluster4_ctas);
  txt << "\n| model | method | op | M | K | N | x % | m_host | MB | time us [min, max] | EB GB/s | ideal GB/s | "
         "bound | ratio | cuBLAS us | prefetch us | bits | target |\n";
  txt << "|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---:|---:|---:|---|---|\n";
  for (size_t k = 0, n = 0; k < plan.experiments.size(); ++k) {
    const Experiment& e = plan.experiments[k];
    for (size_t p = 0; p < e.ratios.size(); ++p, ++n) {
      const Row& row = rows[n];
      const bool one = e.ops.size() == 1;
      txt << fmt::format("| {} | {} | {} | {} | {} | {} | {:g} | {} | {:.1f} | {} [{}, {}] | {:.1f} | {:.1f} | {} | "
                         "{:.3f} | {} | {} | {} | {} |\n",
                         e.model, e.method_name(), e.op_name(), one ? std::to_string(e.ops[0].M) : "-",
                         one ? std::to_string(e.ops[0].K) : "-", e.N, e.ratios[p],
                         one ? std::to_string(e.schedules[p][0].m_host) : "-", row.bytes / 1e6, us(row.time_s.median),
                         us(row.time_s.min), us(row.time_s.max), row.eb * 1e-9, row.ideal_eb * 1e-9, row.bound,
                         row.ratio, us(row.cublas_s.median), us(row.prefetch_s.median),
                         row.same_bits ? "ok" : "DIFF", row.target.empty() ? "-" : row.target);
    }
  }
  int met = 0, missed = 0, diff = 0;
  for (const Row& row : rows) {
    if (!row.target.empty()) (row.target_met ? met : missed)++;
    if (!row.same_bits) ++diff;
  }
  txt << fmt::format("\ntargets: {} met, {} MISSED; split invariance: {} of {} points with different bits\n", met,
                     missed, diff, rows.size());
  for (size_t k = 0; k < plan.experiments.size(); ++k) {
    const Experiment& e = plan.experiments[k];
    const gpu::GemmBenchResult& r = results[k];
    txt << fmt::format("{} N={} {} {}: tiered x=0 {} us, cuBLAS {} us, prefetch GEMM {}, max |tiered - cuBLAS| / "
                       "max |cuBLAS| = {:.2e}{}\n",
                       e.model, e.N, e.method_name(), e.op_name(), us(r.tiered_ref_s.median), us(r.cublas_s.median),
                       r.prefetch_gemm, r.max_rel_diff_vs_cublas,
                       r.gated ? "" : " (a host gate timed out: host launch gaps may be in these times)");
  }
  for (const std::string& s : skipped) txt << s << "\n";
  txt << fmt::format("total {:.1f} s\n", seconds_since(t0));

  emit_report(txt.str(), j, csv.str(), "text", a.json_file, a.csv_file);
}

#endif  // DAK_HAVE_CUDA

void run_bench_gemm(const BenchGemmArgs& args) {
  BenchGemmArgs a = args;
  if (!a.dry_run) check_report_files(a.json_file, a.csv_file);
  if (a.dry_run && (!a.json_file.empty() || !a.csv_file.empty())) {
    fail("--dry-run measures nothing, so it writes no --json / --csv report", "--dry-run",
         "drop --json / --csv, or run without --dry-run on the GPU machine");
  }
  check_timed_runs(a.runs, "--runs");
  a.warmup_ms += 0.0;  // -0 reads as 0 ("-0 ms" in the dry run's timing line, a session-37 trial)
  if (!(a.warmup_ms >= 0 && a.warmup_ms <= 10000)) {
    fail(fmt::format("--warmup-ms {} is outside [0, 10000]", a.warmup_ms), "--warmup-ms", "use e.g. --warmup-ms 20");
  }
  if (a.layers < 1 || a.layers > 1024) {
    fail(fmt::format("--layers {} is outside [1, 1024]", a.layers), "--layers", "use e.g. --layers 8");
  }
  if (!(a.per_gemm_min_mib >= 0) || !(a.stack_host_gib > 0)) {
    fail("--per-gemm-min-mib must be >= 0 and --stack-host-gib > 0", "--per-gemm-min-mib / --stack-host-gib",
         "use e.g. --per-gemm-min-mib 256 --stack-host-gib 8");
  }
  if (a.quick) a.runs = 5;
  const std::vector<int64_t> tokens =
      parse_count_list(a.tokens, "--tokens", kMaxTokens, "token counts", "8,512", " (the tiered GEMM's N range)");
  const std::vector<double> ratios = parse_ratios(a.ratios);
  // --ratios is in percent here, a fraction in dak bench attention and --offload-ratio: a list of
  // fractions below 1 is most likely meant as such (the session-16 trial's --ratios 0.5).
  if (!ratios.empty() && std::all_of(ratios.begin(), ratios.end(), [](double x) { return x <= 1; }) &&
      std::any_of(ratios.begin(), ratios.end(), [](double x) { return x > 0 && x < 1; })) {
    std::fprintf(stderr,
                 "dak: notice: --ratios %s is read in percent (0.5 = 0.5 %% of each weight's rows on the host); for "
                 "fractions of the rows multiply by 100 (e.g. --ratios 50)\n",
                 a.ratios.c_str());
  }
  const std::optional<Congestion> cong = parse_congestion(a.congestion);
  if (cong && std::all_of(ratios.begin(), ratios.end(), [](double x) { return x == 0; })) {
    std::fprintf(stderr, "dak: notice: --congestion %s has no effect: it sets the host CTAs of points with host rows, "
                         "and every --ratios is 0\n", a.congestion.c_str());
  }
  if (a.max_cluster != 1 && a.max_cluster != 2 && a.max_cluster != 4) {
    fail(fmt::format("--max-cluster {} is not 1, 2 or 4", a.max_cluster), "--max-cluster",
         "give the largest multicast cluster: 4, 2, or 1 to turn multicast off");
  }
  std::vector<LocatedConfig> models;
  for (const std::string& name : parse_name_list(a.models, "--models")) {
    LocatedConfig c;
    try {
      c = locate_model_config(name);
    } catch (const Error& e) {
      // Keep the file the error is about when it names one (a broken config.json of one of several models).
      const bool names_file = e.where_part().find('/') != std::string::npos;  // a path, not an option
      fail(e.what_part(), names_file ? e.where_part() + " (--models " + name + ")" : "--models " + name, e.fix_part());
    }
    const bool dup =
        std::any_of(models.begin(), models.end(), [&](const LocatedConfig& m) { return m.path == c.path; });
    if (!dup) notice_defaulted_sizes(c.config, c.path.string());
    if (!dup) models.push_back(std::move(c));
    if (a.quick) break;
  }
  // Every schedule (and --congestion) is checked here, before looking for a GPU.
  const Plan dry = build_plan(a, models, tokens, ratios, cong, kDrySmCount, dry_limits(a));
  if (a.dry_run) {
    std::cout << print_plan(dry, kDrySmCount, a) << std::flush;
    return;
  }
  const std::string why = gpu_unavailable_reason();
  if (!why.empty()) {
    fail("dak bench gemm needs a Hopper GPU: " + why, "dak bench gemm",
         "run it on the GPU machine; `dak bench gemm --dry-run` lists the shapes, points and schedules without one");
  }
#ifdef DAK_HAVE_CUDA
  run_bench_gemm_gpu(a, models, tokens, ratios, cong);
#endif
}

}  // namespace

void add_bench_gemm_command(CLI::App& bench) {
  auto a = std::make_shared<BenchGemmArgs>();
  CLI::App* c = bench.add_subcommand(
      "gemm", "EB(x) of the tiered GEMM at offload ratios x next to its ideal from B_g and B_h of the same run, cuBLAS "
              "at x = 0 and the prefetch baseline, for the linear layers of shipped models");
  // The comma lists' syntax is checked while parsing (exit 2), their ranges by run_bench_gemm (exit 1).
  c->add_option("--models", a->models,
                "Comma list of shipped config names (llama-2-7b, llama-2-70b, opt-30b, ...), config.json files or "
                "model folders")
      ->capture_default_str()
      ->check(value_syntax([](const std::string& s) { parse_name_list(s, "--models"); }));
  c->add_option("--tokens,-n", a->tokens, "Tokens N per GEMM, comma list, each in [1, 8192]")->capture_default_str()
      ->check(value_syntax([](const std::string& s) { parse_count_list(s, "--tokens", 1, "token counts", "8,512"); }));
  c->add_option("--ratios,-x", a->ratios, "Offload ratios x in percent, comma list, each in [0, 100]")
      ->capture_default_str()
      ->check(value_syntax([](const std::string& s) { parse_ratios(s); }));
  // whole_number reads the integer flags as decimal (CLI11 alone took 010 as 8 and 0x4 as 4) within int;
  // run_bench_gemm refuses values outside the ranges their texts give.
  c->add_option("--runs,-r", a->runs, "Timed launches / graph replays per figure (>= 5)")
      ->capture_default_str()
      ->transform(whole_number("a count from 5 to 1000", INT32_MIN, INT32_MAX));  // the range: check_timed_runs
  c->add_option("--warmup-ms", a->warmup_ms,
                "Sustained load before each figure, ms: the launch (or replay) repeats this long before its timed "
                "runs (0 to 10000; 0: none, as B_g and B_h are measured)")
      ->capture_default_str()
      ->transform(decimal_number("a time in ms, 0 or more, at most 10000 (e.g. 20)", 0.0, 10000.0));
  c->add_option("--layers", a->layers, "Decoder layers of the graph-replayed stack (each its own weights)")
      ->capture_default_str()
      ->transform(whole_number("a count from 1 to 1024", INT32_MIN, INT32_MAX));
  c->add_option("--congestion", a->congestion,
                "HOST_CTAS,HOST_STAGES: override the schedule's host CTA count (rounded up to whole multicast "
                "clusters) and TMA stages in flight per host CTA at every x > 0 (the remaining SMs take the HBM rows)")
      ->check(value_syntax([](const std::string& s) { parse_congestion(s); }));
  c->add_option("--max-cluster", a->max_cluster,
                "Largest TMA multicast cluster of CTAs sharing host W tiles: 4 (default), 2, or 1 (multicast off); "
                "used with host rows where N spans two or more n-tiles of the compute tile (128 or 256 tokens)")
      ->capture_default_str()
      ->transform(whole_number("4, 2 or 1 (multicast off)", INT32_MIN, INT32_MAX));
  c->add_option("--compute-tile", a->compute_tile,
                "Tile above 64 tokens: auto (128 x 128 or 128 x 256 and k-splits, chosen per shape by the fitted cost "
                "model), or 128 / 256 to force 128 x 128 / 128 x 256 (A/B measurements)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "128", "256"}));
  c->add_option("--host-rows", a->host_rows,
                "tile: host rows in whole 128-row units, as the planner places them (the nearest count, at least one "
                "when x > 0); row: m_host = round(x * M) rows (awkward partial tiles)")
      ->capture_default_str()
      ->check(CLI::IsMember({"tile", "row"}));
  c->add_option("--per-gemm-min-mib", a->per_gemm_min_mib,
                "Time single GEMMs (events per launch) for weights of at least this many MiB; smaller ones stay in "
                "the stack only (repeated launches of a weight near the L2 size would hit the L2)")
      ->capture_default_str()
      ->transform(decimal_number("a size in MiB, 0 or more, at most 1048576 (e.g. 256)", 0.0, 1048576.0));
  c->add_option("--stack-host-gib", a->stack_host_gib,
                "Skip stack points with more host rows than this per replay (listed in the output); --full lifts it")
      ->capture_default_str()
      ->transform(decimal_number("a size in GiB above 0 and at most 1048576 (e.g. 8)", 0.0, 1048576.0, true));
  c->add_flag("--full", a->full, "Measure every stack point, however many host bytes it reads");
  c->add_flag("--quick", a->quick, "Smoke run: the first model only, 5 runs, smaller B_g / B_h buffers");
  c->add_flag("--dry-run", a->dry_run, "Print the shapes, points and kernel schedules, and exit (no GPU needed)");
  c->add_option("--json", a->json_file, "Also write everything as JSON to FILE");
  c->add_option("--csv", a->csv_file, "Also write one row per (experiment, x) as CSV to FILE (tools/plot_gemm_eb.py)");
  c->add_option("--seed", a->seed, "Seed of the random weights and activations")->capture_default_str()
      ->transform(unsigned_64());
  c->footer(kFooter);
  c->callback([a] { run_bench_gemm(*a); });
}

}  // namespace dak::cli
