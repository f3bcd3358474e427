// `dak bench`: TTFT, TPOT, tokens/s and EB of the GPU engine next to the HBM floor of the same
// run, with a per-operator breakdown of a decode step (gpu/bench.h has the definitions).
//
//   dak bench --model llama-2-7b --random-weights --batch 1,8,64 --prompt-len 32 --gen-len 32
//             [--repeats 5] [--output text|json|csv] [--csv FILE] [--json FILE]
//             [--offload-ratio 0,0.1,0.3] [--gpu-memory SIZE | --cpu-offload-gb GIB] | [--plan FILE]
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/offload_options.h"
#include "core/config_locator.h"
#include "core/error.h"
#include "core/hardware_profile.h"
#ifdef DAK_HAVE_CUDA
#include "core/offload_floor.h"
#include "core/placement.h"
#include "gpu/bench.h"
#include "gpu/device.h"
#include "gpu/gpu_engine.h"
#include "gpu/host_arena.h"
#include "gpu/gpu_weights.h"
#include "gpu/hbm_arena.h"
#endif

namespace dak::cli {
namespace {

struct BenchArgs {
  std::string model;
  bool random_weights = false;
  uint64_t weights_seed = 0;
  std::string batch = "1";
  std::string prompt_len = "32";
  std::string gen_len = "32";
  int64_t repeats = 5;
  std::string output = "text";
  std::string csv_file;
  std::string json_file;
  double hbm_buffer_gib = 4.0;
  int hbm_runs = 10;
  std::string gemm = "auto";
  OffloadArgs offload;
};

/// One bench point's offload: the plan applied (none: all in HBM) and what it predicts.
struct OffloadPoint {
  std::optional<double> ratio;  // the forced ratio of the point, if any
  bool planned = false;         // a plan with host bytes was applied
  double host_ratio = 0;        // host bytes / (splittable weights + KV), the plan's
  uint64_t host_bytes = 0;      // the engine's pinned bytes (weights + KV), measured after the run
  double host_step_bytes = 0;   // bytes a decode step reads from the host tier (the plan's)
  double staged_step_bytes = 0; // the part of them the copy engine stages into HBM (this mode)
  double predicted_s = 0;       // the planner's TPOT
  std::string profile_name;     // the hardware profile the plan was made with
  double floor_s = 0;           // core/offload_floor.h: max((HBM + 2 staged) / B_g, direct / B_h + staged / B_ce)
};

/// Says on stderr when this host's link, measured by the run (B_h of the SMs' TMA reads, B_ce of the
/// copy engine, GB/s), differs by more than 15 % from the profile the planner uses: hosts with the
/// same GPU differ (two H100 machines of session 33: SM reads 34.7 and 51.3 GB/s), and plans and
/// predictions follow the profile. Where another compiled-in profile of this GPU (`mine`,
/// HardwareProfile::all_for_device) was measured on a link within 15 % of this one, it is named.
[[maybe_unused]] void notice_host_link_mismatch(const HardwareProfile& prof, const std::vector<HardwareProfile>& mine,
                                                double sm_gbps, double ce_gbps) {
  const auto off = [](double measured, double assumed) {
    return assumed > 0 && measured > 0 && std::abs(measured / assumed - 1) > 0.15;
  };
  if (!off(sm_gbps, prof.host_sm_read_gbps) && !off(ce_gbps, prof.host_copy_engine_gbps)) return;
  std::string near;
  if (!mine.empty()) {
    const HardwareProfile& n = HardwareProfile::nearest_host_link(mine, sm_gbps);
    if (n.name != prof.name && !off(sm_gbps, n.host_sm_read_gbps) && !off(ce_gbps, n.host_copy_engine_gbps)) {
      near = fmt::format("; the compiled-in '{}' was measured on a link like this one ({:.1f} and {:.1f}): "
                         "--profile {} prices the direct and zero-copy modes closer",
                         n.name, n.host_sm_read_gbps, n.host_copy_engine_gbps, n.name);
    }
  }
  std::fprintf(stderr,
               "dak: notice: this host's link measured B_h %.1f GB/s (SM reads) and B_ce %.1f GB/s (copy engine); the "
               "planner's profile '%s' assumes %.1f and %.1f, so its plans and predictions may not fit this machine: "
               "measure it once with `dak profile --output host.json` and pass --profile host.json%s\n",
               sm_gbps, ce_gbps, prof.name.c_str(), prof.host_sm_read_gbps, prof.host_copy_engine_gbps, near.c_str());
}

/// The profile name of the first point that applied a plan ("-" where none did).
[[maybe_unused]] std::string planned_profile_name(const std::vector<OffloadPoint>& points) {
  for (const OffloadPoint& p : points) {
    if (p.planned && !p.profile_name.empty()) return p.profile_name;
  }
  return "-";
}

constexpr const char* kFooter = R"(Metrics (all GPU times from CUDA events; medians over repeats, [min, max] of the per-repeat medians):
  TTFT   prefill of batch x prompt-len tokens, first ids sampled and copied back.
  TPOT   one decode step from the CUDA graph (replay + sampling + id copy), median over every decode
         step of every repeat; "wall" is the host's view of the same steps.
  tok/s  batch / TPOT (decode throughput).
  bytes  what a decode step must read at the mean context prompt + gen/2: all bf16 weights except the
         embedding table (only the batch's rows), norms, biases, the KV cache read + the token appended.
  EB     bytes / TPOT.   floor = bytes / B_g.   TPOT/floor = 1.0 means at the HBM bound.
  B_g    best HBM read bandwidth of this run: TMA bulk copies (cp.async.bulk into an SMEM ring on
         mbarriers, all SMs) of a buffer of --hbm-buffer-gib, best launch of --hbm-runs per configuration.
  model  the planner's cost model TPOT (no offload; the compiled-in profile of this GPU, h200-default
         where none matches, with this run's B_g).
  target the GPU engine's targets for Llama-2-7B shapes, prompt 32, gen 32: TPOT <= 1.15 x floor at
         batch 1 and 8, <= 1.25 x floor at batch 64 (shown only for those runs).
  offload with --offload-ratio (a comma list sweeps), --gpu-memory, --cpu-offload-gb or --plan, every
         point applies its plan (its own engine) in the --offload mode; the offload table gives the host bytes,
         the planner's TPOT and floor = max((HBM step bytes + 2 staged) / B_g, direct host bytes / B_h +
         staged host bytes / B_ce), with B_h (TMA reads of pinned host memory by the SMs) and B_ce (the
         copy engine's host-to-HBM rate) measured in the same run; staged = the host rows of linears the
         copy engine brings into HBM (auto: the plan's staged operators; prefetch: every linear's; none in
         direct and zero-copy). Issue 3's targets apply to offload none only.
The per-operator table times decode steps at the mean context run eagerly (outside the graph, held
behind a host gate until fully enqueued) with an event between operators; its sum exceeds TPOT by
the event and kernel-boundary gaps the graph removes.
Each (batch, prompt, gen) runs one untimed warm-up generation first; greedy sampling, EOS ignored.
Needs a Hopper GPU: without one dak bench fails with the reason and exit code 1.)";

/// "1,8,64" -> {1, 8, 64}, every value in [`min`, 2^31 - 1], or with `batch` in the range
/// check_batch_size allows (1 to 65536, as dak plan --batch: `min` unused). Throws dak::UsageError
/// naming `flag` for text that is not a comma list of whole numbers, dak::Error for a value out of range.
std::vector<int64_t> parse_sizes(const std::string& s, const std::string& flag, int64_t min, bool batch = false) {
  std::vector<int64_t> out;
  for (const std::string& tok : split_list(s)) {
    if (!is_integer_text(tok)) {
      fail_usage(fmt::format("'{}' is not a comma-separated list of whole numbers: {}", s, bad_item(tok)), flag,
                 fmt::format("write sizes of at least {} separated by commas, e.g. 1,8,64", min));
    }
    const std::optional<int64_t> v = parse_integer(tok);  // nullopt: beyond int64
    if (batch) {  // dak plan's cap, and message: a batch the planner refuses could not be planned or offloaded
      check_batch_size(v ? *v : (tok.find('-') != std::string::npos ? INT64_MIN : INT64_MAX), flag, tok);
    } else if (!v || *v < min || *v > INT32_MAX) {
      fail(fmt::format("{} must be from {} to {}, got {}", flag, min, INT32_MAX, tok), flag,
           fmt::format("pass values >= {} (a comma list sweeps them)", min));
    }
    out.push_back(*v);
  }
  return out;
}

/// Issue 3's TPOT/floor target for this run, 0 when it has none (Llama-2-7B shapes, p32 g32).
[[maybe_unused]] double issue_target(const ModelConfig& c, int64_t batch, int64_t prompt, int64_t gen) {
  const bool llama2_7b = c.arch == Arch::kLlama && c.hidden_size == 4096 && c.num_layers == 32 &&
                         c.num_heads == 32 && c.num_kv_heads == 32 && c.intermediate_size == 11008 &&
                         c.vocab_size == 32000;
  if (!llama2_7b || prompt != 32 || gen != 32) return 0;
  if (batch == 1 || batch == 8) return 1.15;
  if (batch == 64) return 1.25;
  return 0;
}

/// Refuses, before a GPU is looked for (as dak plan does without one), runs of the sweep the model
/// cannot hold: a --prompt-len + --gen-len beyond its context (max_position_embeddings), with
/// --plan a batch or context the plan was not made for (a plan fixes one shape), and with
/// --gpu-memory, a forced ratio or --cpu-offload-gb a point whose plan dak plan refuses
/// (check_plan_without_gpu: e.g. an --offload-ratio that leaves more in HBM than the budget holds);
/// a sweep names the point. Throws dak::Error.
void check_shapes_fit(const OffloadArgs& offload, const LocatedConfig& located, const std::vector<int64_t>& batches,
                      const std::vector<int64_t>& prompts, const std::vector<int64_t>& gens) {
  const int64_t context = located.config.max_position_embeddings;
  const int64_t prompt = *std::max_element(prompts.begin(), prompts.end());
  const int64_t gen = *std::max_element(gens.begin(), gens.end());
  if (prompt + gen > context) {  // each at most 2^31 - 1 (parse_sizes): the sum fits
    fail(fmt::format("prompt {} + gen {} = {} positions exceed the context of {} ({} tokens)", prompt, gen,
                     prompt + gen, located.name, context),
         "--prompt-len / --gen-len",
         fmt::format("pass a --prompt-len + --gen-len of at most {} (the model's context)", context));
  }
  // Every point in the order the sweep runs them: each forced ratio (or none) for each shape.
  std::vector<std::optional<double>> ratios;
  for (double r : offload.ratios(/*list=*/true)) ratios.push_back(r);
  if (ratios.empty()) ratios.push_back(std::nullopt);
  for (const std::optional<double>& ratio : ratios) {
    for (int64_t b : batches) {
      for (int64_t p : prompts) {
        for (int64_t g : gens) {
          try {
            check_plan_without_gpu(offload, ratio, located.config, located.name,
                                   RequestedShape{b, p, g, ShapeTerms{ShapeTerms::Command::kBench}});
          } catch (const Error& e) {
            // A sweep's point: say which one (the session-23 trial could not tell from a ratio list).
            const bool sweep = ratios.size() * batches.size() * prompts.size() * gens.size() > 1;
            if (!sweep) throw;
            fail(fmt::format("{} (the sweep's point{}: batch {}, prompt {}, gen {})", e.what_part(),
                             ratio ? fmt::format(" at --offload-ratio {:g}", *ratio) : std::string(), b, p, g),
                 e.where_part(), e.fix_part());
          }
        }
      }
    }
  }
}

void run_bench_command(const BenchArgs& a) {
  check_report_files(a.json_file, a.csv_file);
  check_timed_runs(a.repeats, "--repeats");
  const std::vector<int64_t> batches = parse_sizes(a.batch, "--batch", 1, /*batch=*/true);
  const std::vector<int64_t> prompts = parse_sizes(a.prompt_len, "--prompt-len", 1);
  const std::vector<int64_t> gens = parse_sizes(a.gen_len, "--gen-len", 2);
  check_offload_args(a.offload, /*ratio_list=*/true);  // before the model and the GPU
  check_hbm_measurement(a.hbm_buffer_gib, a.hbm_runs);
  // Model first (so a typo is reported on any machine), then the GPU.
  std::unique_ptr<Checkpoint> ckpt;
  LocatedConfig located;
  if (a.random_weights) {
    // Without --model, the model --model defaults to (README): $DAK_MODEL, else the default model.
    located = locate_model_config(a.model.empty() ? default_model_path().string() : a.model);
    notice_defaulted_sizes(located.config, located.path.string());
  } else {
    ckpt = open_model(a.model);
    located.config = ckpt->config();
    located.name = ckpt->path().filename().string();
    located.path = ckpt->path();
  }
  // A plan fixes one shape: a sweep of shapes with --plan is refused up front (the session-25 second trial
  // followed a fix for the first batch, then was refused for the next, and so on).
  if (!a.offload.plan_file.empty() && (batches.size() > 1 || prompts.size() > 1 || gens.size() > 1)) {
    std::string swept;
    for (const auto& [flag, n] : {std::pair<const char*, size_t>{"--batch", batches.size()},
                                  {"--prompt-len", prompts.size()},
                                  {"--gen-len", gens.size()}}) {
      if (n > 1) swept += std::string(swept.empty() ? "" : " / ") + flag;
    }
    const PlanInputs& in = a.offload.plan().inputs;
    fail(fmt::format("a plan serves one shape (batch {}, prompt {}, gen {} for {}), but this bench sweeps {} "
                     "shapes",
                     in.batch, in.prompt_len, in.gen_len, a.offload.plan_file,
                     batches.size() * prompts.size() * gens.size()),
         swept,
         fmt::format("run one shape per --plan (the plan's: --batch {} --prompt-len {} --gen-len {}), or drop --plan "
                     "to plan every point of the sweep",
                     in.batch, in.prompt_len, std::max<int64_t>(2, in.gen_len)));
  }
  // A plan fixes one batch and context: the fix suggests the sweep's first batch at its longest lengths.
  check_plan_file_model(a.offload, located.config, a.random_weights && !a.model.empty() ? a.model : located.path.string(),
                        {batches.front(), *std::max_element(prompts.begin(), prompts.end()),
                         *std::max_element(gens.begin(), gens.end()), ShapeTerms{ShapeTerms::Command::kBench}});
  check_shapes_fit(a.offload, located, batches, prompts, gens);
  const std::string why = gpu_unavailable_reason();
  if (!why.empty()) {
    fail("dak bench needs a Hopper GPU: " + why, "dak bench",
         "run it on the GPU machine (tools/device/gpu_check.sh runs it there); `dak plan` predicts TPOT without a "
         "GPU");
  }
#ifdef DAK_HAVE_CUDA
  std::vector<gpu::BenchShape> shapes;
  for (int64_t b : batches) {
    for (int64_t p : prompts) {
      for (int64_t g : gens) shapes.push_back({b, p, g});
    }
  }
  const ModelConfig& mc = located.config;
  uint64_t kv_max = 0;
  for (const gpu::BenchShape& s : shapes) {
    kv_max = std::max<uint64_t>(kv_max, 2 * uint64_t(mc.num_layers) * uint64_t(s.batch) *
                                            uint64_t(s.prompt_len + s.gen_len) * uint64_t(mc.kv_dim()) * 2);
  }
  const uint64_t weight_bytes = ckpt ? gpu::GpuWeights::plan_bytes(*ckpt) : gpu::GpuWeights::plan_bytes(mc);
  // Model + KV of the largest run must fit unless an offload is asked for (then each point's plan
  // decides, and the engine refuses what does not fit).
  const bool offloading = a.offload.mode != "none" && a.offload.requested();
  if (!offloading) gpu::require_free_hbm(weight_bytes + kv_max,
                        fmt::format("{}: bf16 weights ({}) plus the KV cache of the largest run ({})", located.name,
                                    gpu::format_gib(weight_bytes), gpu::format_gib(kv_max)));
  std::fprintf(stderr, "dak: measuring HBM read bandwidth (TMA bulk stream of %.2f GiB)\n", a.hbm_buffer_gib);
  const gpu::HbmBandwidth hbm =
      gpu::measure_hbm_bandwidth(uint64_t(a.hbm_buffer_gib * double(1ull << 30)), a.hbm_runs);
  gpu::GpuEngineOptions opts = gpu::bench_engine_options(shapes);
  opts.gemm = gemm_backend_of(a.gemm);
  opts.offload_mode = offload_mode_of(a.offload);
  auto make_engine_with = [&](const gpu::GpuEngineOptions& o) {
    if (a.random_weights) {
      return std::make_unique<gpu::GpuEngine>(located.config, a.weights_seed, located.path.string(), 0, o);
    }
    return std::make_unique<gpu::GpuEngine>(*ckpt, 0, o);
  };
  if (a.random_weights) {
    std::fprintf(stderr, "dak: %s with random bf16 weights (seed %llu)\n", located.name.c_str(),
                 static_cast<unsigned long long>(a.weights_seed));
  }
  // Offload points: every forced ratio (or the budget flags once) for every shape. Each point with
  // host bytes gets its own engine (its placement); the others share the all-HBM engine.
  std::vector<std::optional<double>> ratios;
  for (double r : a.offload.ratios(/*list=*/true)) ratios.push_back(r);
  if (ratios.empty()) ratios.push_back(std::nullopt);
  gpu::HostReadBandwidth host_bw;
  gpu::Spread copy_gbps;  // B_ce
  if (offloading) {
    std::fprintf(stderr, "dak: measuring host read bandwidth B_h (TMA from pinned host memory) and B_ce (copy engine)\n");
    gpu::PinnedHostArena probe(uint64_t(1) << 30, "B_h measurement buffer");
    host_bw = gpu::measure_host_read_bandwidth(probe.base(), probe.capacity(), 5);
    gpu::HbmArena dst(probe.capacity(), "B_ce measurement buffer");
    copy_gbps = gpu::measure_h2d_copy_gbps(dst.allocate(probe.capacity(), "copy destination"), probe.base(),
                                           probe.capacity(), 5);
    if (a.offload.plan_file.empty()) {
      const HardwareProfile prof = a.offload.profile.empty() ? gpu_default_profile(host_bw.best_bytes_per_s * 1e-9)
                                                             : load_profile(a.offload.profile);
      std::string why;
      const std::optional<gpu::DeviceInfo> dev = gpu::probe_device(0, &why);
      notice_host_link_mismatch(
          prof, dev ? HardwareProfile::all_for_device(dev->name, dev->sm_count, dev->hbm_bytes) : std::vector<HardwareProfile>{},
          host_bw.best_bytes_per_s * 1e-9, copy_gbps.median);
    }
  }
  std::unique_ptr<gpu::GpuEngine> engine;  // the all-HBM engine, made on first use
  std::vector<gpu::BenchResult> results;
  std::vector<OffloadPoint> points;
  const auto t_sweep = std::chrono::steady_clock::now();
  std::string device_name;
  uint64_t weight_arena_bytes = 0;
  for (const std::optional<double>& ratio : ratios) {
    for (const gpu::BenchShape& s : shapes) {
      OffloadPoint pt;
      pt.ratio = ratio;
      std::optional<Plan> plan;
      if (offloading) {
        // Each offload point is planned against the HBM free now and may build its own engine: an
        // all-HBM engine of an earlier point (its weights and KV cache) must not hold HBM then.
        engine.reset();
        plan = plan_offload(a.offload, ratio, mc, located.name,
                            RequestedShape{s.batch, s.prompt_len, s.gen_len, ShapeTerms{ShapeTerms::Command::kBench}},
                            free_hbm_bytes_now());
      }
      std::unique_ptr<gpu::GpuEngine> own;
      gpu::GpuEngine* eng = nullptr;
      if (plan) {
        Placement placement = placement_from_plan(*plan, mc, located.name);
        if (!placement.all_in_hbm()) {
          std::fprintf(stderr, "dak: %s\n", describe_plan(*plan).c_str());
          gpu::GpuEngineOptions o = opts;
          o.placement = std::move(placement);
          own = make_engine_with(o);
          eng = own.get();
          pt.planned = true;
          pt.host_ratio = plan->totals.host_ratio;
          pt.predicted_s = plan->predicted_tpot_s;
          pt.profile_name = plan->inputs.profile_name;
          for (const PlanOp& op : plan->ops) {
            const double host_step = op.step_bytes * op.host_fraction;
            pt.host_step_bytes += host_step;
            // The engine stages linear weights only: the plan's staged ones under auto, all under prefetch.
            const bool staged = op.kind == OpKind::kLinear &&
                                (a.offload.mode == "prefetch" || (a.offload.mode == "auto" && op.path == DataPath::kStaged));
            if (staged) pt.staged_step_bytes += host_step;
          }
        }
      }
      if (!eng) {
        if (!engine) engine = make_engine_with(opts);
        eng = engine.get();
      }
      // Progress: the point, of how many, and the time so far (a sweep of offloaded points can take minutes).
      std::fprintf(stderr, "dak: [%zu/%zu, %.0f s] bench batch %lld, prompt %lld, gen %lld%s\n", results.size() + 1,
                   ratios.size() * shapes.size(), seconds_since(t_sweep), static_cast<long long>(s.batch),
                   static_cast<long long>(s.prompt_len), static_cast<long long>(s.gen_len),
                   ratio ? fmt::format(", offload ratio {}", *ratio).c_str() : "");
      results.push_back(gpu::run_bench(*eng, s, a.repeats, hbm.best_bytes_per_s));
      const gpu::BenchResult& r = results.back();
      pt.host_bytes = eng->host_bytes();
      pt.floor_s = r.floor_s;
      if (pt.planned && host_bw.best_bytes_per_s > 0 && copy_gbps.median > 0) {
        const StepBytes bytes{std::max(0.0, r.step_bytes - pt.host_step_bytes),
                              pt.host_step_bytes - pt.staged_step_bytes, pt.staged_step_bytes};
        pt.floor_s = step_floor_s(bytes, hbm.best_bytes_per_s, host_bw.best_bytes_per_s, copy_gbps.median * 1e9);
      }
      if (!pt.planned) pt.predicted_s = r.model_tpot_s;
      points.push_back(pt);
      device_name = eng->device_name();
      weight_arena_bytes = std::max<uint64_t>(weight_arena_bytes, eng->weight_bytes());
    }
  }

  const ModelConfig& c = located.config;
  const std::string weights = a.random_weights ? fmt::format("random (seed {})", a.weights_seed) : "checkpoint";
  const double ms = 1e3, tbs = 1e-12;
  // Issue 3's targets are for the all-HBM engine: offloaded points have none (their floor and the
  // planner's prediction are in the offload table).
  auto target_of = [&](const gpu::BenchResult& r) {
    const size_t i = size_t(&r - results.data());
    if (points[i].planned) return 0.0;
    return issue_target(c, r.shape.batch, r.shape.prompt_len, r.shape.gen_len);
  };

  // JSON
  nlohmann::json j;
  j["model"] = located.path.string();
  j["model_name"] = located.name;
  j["weights"] = weights;
  j["device"] = device_name;
  j["gemm"] = a.gemm;
  j["gemm_auto_tiered_max_tokens"] = gpu::kAutoTieredMaxTokens;
  j["cublaslt_tuned"] = gpu::cublaslt_tuning_enabled(opts.tune_cublaslt) && a.gemm != "tiered";
  j["weight_arena_bytes"] = weight_arena_bytes;
  if (offloading) {
    j["host"] = {{"gb_s", host_bw.best_bytes_per_s * 1e-9}, {"max_gb_s", host_bw.max_bytes_per_s * 1e-9},
                 {"ctas", host_bw.ctas}, {"stages", host_bw.stages}, {"chunk_bytes", host_bw.chunk_bytes},
                 {"copy_engine_gb_s", copy_gbps.median}, {"copy_engine_min_gb_s", copy_gbps.min},
                 {"copy_engine_max_gb_s", copy_gbps.max}};
  }
  j["hbm"] = {{"best_tb_s", hbm.best_bytes_per_s * tbs}, {"median_tb_s", hbm.median_bytes_per_s * tbs},
              {"buffer_bytes", hbm.buffer_bytes}, {"chunk_bytes", hbm.chunk_bytes}, {"stages", hbm.stages},
              {"ctas_per_sm", hbm.ctas_per_sm}, {"sm_count", hbm.sm_count}, {"runs", hbm.runs},
              {"configs", hbm.configs}};
  for (size_t i = 0; i < results.size(); ++i) {
    const gpu::BenchResult& r = results[i];
    const OffloadPoint& pt = points[i];
    nlohmann::json jr;
    jr["offload"] = {{"ratio", pt.ratio ? nlohmann::json(*pt.ratio) : nlohmann::json(nullptr)},
                     {"mode", pt.planned ? a.offload.mode : std::string("none")},
                     {"planned", pt.planned},
                     {"host_ratio", pt.host_ratio},
                     {"host_bytes", pt.host_bytes},
                     {"host_step_bytes", pt.host_step_bytes},
                     {"staged_step_bytes", pt.staged_step_bytes},
                     {"predicted_tpot_ms", pt.predicted_s * ms},
                     {"floor_ms", pt.floor_s * ms},
                     {"tpot_over_predicted", r.tpot_s.median / pt.predicted_s},
                     {"tpot_over_floor", r.tpot_s.median / pt.floor_s}};
    jr["batch"] = r.shape.batch;
    jr["prompt_len"] = r.shape.prompt_len;
    jr["gen_len"] = r.shape.gen_len;
    jr["repeats"] = r.repeats;
    jr["decode_steps_timed"] = r.decode_steps_timed;
    jr["ttft_ms"] = {{"median", r.ttft_s.median * ms}, {"min", r.ttft_s.min * ms}, {"max", r.ttft_s.max * ms}};
    jr["tpot_ms"] = {{"median", r.tpot_s.median * ms}, {"min", r.tpot_s.min * ms}, {"max", r.tpot_s.max * ms}};
    jr["tpot_wall_ms"] = r.tpot_wall_s * ms;
    jr["decode_tokens_per_s"] = r.decode_tokens_per_s;
    jr["e2e_tokens_per_s"] = r.e2e_tokens_per_s;
    jr["step_bytes"] = r.step_bytes;
    jr["kv_step_bytes"] = r.kv_step_bytes;
    jr["eb_tb_s"] = r.eb_bytes_per_s * tbs;
    jr["floor_ms"] = r.floor_s * ms;
    jr["tpot_over_floor"] = r.ratio;
    jr["target"] = target_of(r);
    jr["model_tpot_ms"] = r.model_tpot_s * ms;
    jr["profiled_step_ms"] = r.profiled_step_s * ms;
    jr["profile_gated"] = r.profile_gated;
    for (const gpu::OpBreakdown& o : r.ops) {
      jr["ops"].push_back({{"op", gpu::step_op_name(o.op)}, {"ms", o.time_s * ms}, {"share", o.share},
                           {"launches", o.launches}, {"bytes", o.bytes}});
    }
    j["results"].push_back(jr);
  }

  // CSV: one row per run, the operator times as columns.
  std::ostringstream csv;
  csv << "model,weights,device,batch,prompt_len,gen_len,repeats,ttft_ms,ttft_min_ms,ttft_max_ms,tpot_ms,"
         "tpot_min_ms,tpot_max_ms,tpot_wall_ms,decode_tok_s,e2e_tok_s,step_bytes,kv_step_bytes,eb_tb_s,hbm_tb_s,"
         "floor_ms,tpot_over_floor,target,model_tpot_ms,profiled_step_ms,offload_ratio,host_ratio,host_bytes,"
         "predicted_tpot_ms,offload_floor_ms,offload_mode";
  for (int k = 0; k < int(gpu::StepOp::kCount); ++k) csv << ",op_" << gpu::step_op_name(gpu::StepOp(k)) << "_ms";
  csv << "\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const gpu::BenchResult& r = results[i];
    const OffloadPoint& pt = points[i];
    csv << fmt::format("{},{},\"{}\",{},{},{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.1f},{:.1f},{:.0f},"
                       "{:.0f},{:.4f},{:.4f},{:.4f},{:.4f},{},{:.4f},{:.4f}",
                       located.name, a.random_weights ? "random" : "checkpoint", device_name, r.shape.batch,
                       r.shape.prompt_len, r.shape.gen_len, r.repeats, r.ttft_s.median * ms, r.ttft_s.min * ms,
                       r.ttft_s.max * ms, r.tpot_s.median * ms, r.tpot_s.min * ms, r.tpot_s.max * ms,
                       r.tpot_wall_s * ms, r.decode_tokens_per_s, r.e2e_tokens_per_s, r.step_bytes, r.kv_step_bytes,
                       r.eb_bytes_per_s * tbs, hbm.best_bytes_per_s * tbs, r.floor_s * ms, r.ratio, target_of(r),
                       r.model_tpot_s * ms, r.profiled_step_s * ms);
    csv << fmt::format(",{},{:.4f},{},{:.4f},{:.4f},{}", pt.ratio ? fmt::format("{}", *pt.ratio) : "", pt.host_ratio,
                       pt.host_bytes, pt.predicted_s * ms, pt.floor_s * ms, pt.planned ? a.offload.mode : "none");
    std::vector<double> op_ms(size_t(gpu::StepOp::kCount), 0.0);
    for (const gpu::OpBreakdown& o : r.ops) op_ms[size_t(o.op)] = o.time_s * ms;
    for (double v : op_ms) csv << fmt::format(",{:.4f}", v);
    csv << "\n";
  }

  // Text
  std::ostringstream txt;
  txt << fmt::format("dak bench: {} ({}), {} weights, {}; linears: --gemm {}{}\n", located.name,
                     located.path.string(), weights, device_name, a.gemm,
                     a.gemm == "auto" ? fmt::format(" (tiered GEMM up to {} tokens, cuBLASLt above, its plans tuned "
                                                    "on the warm-up step unless DAK_CUBLASLT_TUNE=0; with an offload "
                                                    "placement every linear is tiered)",
                                                    gpu::kAutoTieredMaxTokens)
                                      : "");
  txt << fmt::format("weights {} bf16; B_g = {:.3f} TB/s (TMA bulk stream of {}, best of {} launches x {} configs; "
                     "best config {} KiB x {} stages, {} CTA/SM x {} SMs, its median {:.3f} TB/s)\n\n",
                     gpu::format_gib(weight_arena_bytes), hbm.best_bytes_per_s * tbs,
                     gpu::format_gib(hbm.buffer_bytes), hbm.runs, hbm.configs, hbm.chunk_bytes >> 10, hbm.stages,
                     hbm.ctas_per_sm, hbm.sm_count, hbm.median_bytes_per_s * tbs);
  txt << "| batch | prompt | gen | offload | TTFT ms | TPOT ms [min, max] | wall ms | HBM floor ms | TPOT/floor | "
         "target | tok/s | EB TB/s | GB/step | model ms |\n";
  txt << "|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---:|---:|---:|---:|\n";
  for (const gpu::BenchResult& r : results) {
    const OffloadPoint& pt = points[size_t(&r - results.data())];
    const double t = target_of(r);
    const std::string target = t > 0 ? fmt::format("<= {:.2f} {}", t, r.ratio <= t ? "met" : "MISSED") : "-";
    txt << fmt::format("| {} | {} | {} | {} | {:.2f} | {:.3f} [{:.3f}, {:.3f}] | {:.3f} | {:.3f} | {:.3f} | {} | {:.0f} | "
                       "{:.3f} | {:.2f} | {:.3f} |\n",
                       r.shape.batch, r.shape.prompt_len, r.shape.gen_len,
                       pt.planned ? fmt::format("{:.1f} %", 100 * pt.host_ratio) : "none", r.ttft_s.median * ms,
                       r.tpot_s.median * ms,
                       r.tpot_s.min * ms, r.tpot_s.max * ms, r.tpot_wall_s * ms, r.floor_s * ms, r.ratio, target,
                       r.decode_tokens_per_s, r.eb_bytes_per_s * tbs, r.step_bytes * 1e-9, r.model_tpot_s * ms);
  }
  if (offloading) {
    txt << fmt::format("\noffload (mode {}): B_h = {:.2f} GB/s (TMA reads of pinned host memory, best of {} "
                       "configurations, its median launch), B_ce = {:.2f} GB/s (copy engine, median of 5 copies); "
                       "floor = max((HBM + 2 staged) / B_g, direct / B_h + staged / B_ce); predicted = the planner's "
                       "TPOT for this mode ({})\n",
                       a.offload.mode, host_bw.best_bytes_per_s * 1e-9, host_bw.configs, copy_gbps.median,
                       !a.offload.plan_file.empty() ? "from --plan " + a.offload.plan_file
                       : a.offload.profile.empty() ? "compiled-in profile " + planned_profile_name(points)
                                                   : "profile " + a.offload.profile);
    txt << "| batch | ratio | host % | host GiB | host GB/step | staged GB/step | TPOT ms | predicted ms | TPOT/pred | "
           "floor ms | TPOT/floor |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (size_t i = 0; i < results.size(); ++i) {
      const gpu::BenchResult& r = results[i];
      const OffloadPoint& pt = points[i];
      txt << fmt::format("| {} | {} | {:.1f} | {:.2f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} |\n",
                         r.shape.batch, pt.ratio ? fmt::format("{}", *pt.ratio) : "-", 100 * pt.host_ratio,
                         double(pt.host_bytes) / double(1ull << 30), pt.host_step_bytes * 1e-9,
                         pt.staged_step_bytes * 1e-9, r.tpot_s.median * ms,
                         pt.predicted_s * ms, r.tpot_s.median / pt.predicted_s, pt.floor_s * ms,
                         r.tpot_s.median / pt.floor_s);
    }
  }
  for (const gpu::BenchResult& r : results) {
    txt << fmt::format("\nper-operator time of one decode step, batch {}, prompt {}, gen {} (eager, events between "
                       "operators, median of 3 steps at the mean context): sum {:.3f} ms vs TPOT {:.3f} ms\n",
                       r.shape.batch, r.shape.prompt_len, r.shape.gen_len, r.profiled_step_s * ms,
                       r.tpot_s.median * ms);
    if (!r.profile_gated) txt << "(the host gate timed out: these times include host launch gaps)\n";
    txt << "| op | ms | share | launches | GB read | GB/s |\n|---|---:|---:|---:|---:|---:|\n";
    for (const gpu::OpBreakdown& o : r.ops) {
      const std::string bytes = o.bytes > 0 ? fmt::format("{:.3f}", o.bytes * 1e-9) : "-";
      const std::string bw = o.bytes > 0 && o.time_s > 0 ? fmt::format("{:.0f}", o.bytes / o.time_s * 1e-9) : "-";
      txt << fmt::format("| {} | {:.3f} | {:.1f} % | {} | {} | {} |\n", gpu::step_op_name(o.op), o.time_s * ms,
                         o.share * 100, o.launches, bytes, bw);
    }
  }

  emit_report(txt.str(), j, csv.str(), a.output, a.json_file, a.csv_file);
#endif
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* c = app.add_subcommand(
      "bench", "Measure TTFT, TPOT, tokens/s and EB on the GPU next to the HBM floor B_g of the same run, with a "
               "per-operator breakdown of a decode step");
  c->add_option("--model,-m", a->model,
                "HF model folder, .safetensors or .gguf (default: SmolLM2-135M-Instruct); with --random-weights a "
                "config.json, a model folder or a shipped config name (llama-2-7b, llama-2-70b, ...)");
  c->add_flag("--random-weights", a->random_weights,
              "Deterministic random bf16 weights generated on the GPU for the config (no checkpoint needed)");
  CLI::Option* weights_seed = add_weights_seed_option(c, &a->weights_seed);
  // The comma lists' syntax is checked while parsing (exit 2), their ranges by the command (exit 1).
  const auto sizes = [](const char* flag, int64_t min) {
    return value_syntax([flag, min](const std::string& s) { parse_sizes(s, flag, min); });
  };
  c->add_option("--batch,-b", a->batch,
                fmt::format("Sequences per step, {}; a comma list sweeps, e.g. 1,8,64", batch_range_text()))
      ->capture_default_str()
      ->check(sizes("--batch", 1));
  c->add_option("--prompt-len,-p", a->prompt_len, "Prompt tokens per sequence (comma list sweeps)")
      ->capture_default_str()
      ->check(sizes("--prompt-len", 1));
  c->add_option("--gen-len,-g", a->gen_len,
                "Tokens generated per sequence: 1 by the prefill + gen-1 decode steps; >= 2 (comma list sweeps)")
      ->capture_default_str()
      ->check(sizes("--gen-len", 2));
  c->add_option("--repeats,-r", a->repeats, "Timed generations per run (>= 5), after one warm-up")
      ->capture_default_str()
      ->transform(whole_number("a count from 5 to 1000"));  // the range: check_timed_runs
  c->add_option("--output", a->output, "What to print on stdout: text (tables), json or csv")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json", "csv"}));
  c->add_option("--csv", a->csv_file, "Also write the CSV (one row per run, operator times as columns) to FILE");
  c->add_option("--json", a->json_file, "Also write the JSON (everything, per-operator tables included) to FILE");
  c->add_option("--hbm-buffer-gib", a->hbm_buffer_gib, "Buffer streamed to measure B_g, GiB (several times the L2)")
      ->capture_default_str()
      ->transform(decimal_number(kHbmBufferGibText, 0.0, 64.0, true));
  add_gemm_option(c, &a->gemm);
  c->add_option("--hbm-runs", a->hbm_runs, "Timed launches per stream configuration for B_g")->capture_default_str()
      ->transform(whole_number("a count from 1 to 1000", INT32_MIN, INT32_MAX));  // the range: check_hbm_measurement
  add_offload_options(c, &a->offload);
  c->footer(kFooter);
  // CLI11 runs this callback after a subcommand's (dak bench gemm / attention): nothing to do then.
  c->callback([a, c, weights_seed] {
    if (c->get_subcommands().empty()) {
      check_weights_seed(*weights_seed, a->random_weights);
      adopt_plan_mode(a->offload);
      run_bench_command(*a);
    }
  });
  c->require_subcommand(0, 1);
  add_bench_gemm_command(*c);
  add_bench_attention_command(*c);
}

}  // namespace dak::cli
