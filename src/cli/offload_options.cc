#include "cli/offload_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <utility>

#include "cli/cli_common.h"
#include "core/byte_size.h"
#include "core/error.h"
#include "core/hardware_profile.h"
#include "core/planner.h"

namespace dak::cli {

namespace {

/// The command that remakes the --plan file for `model` at `shape` in `mode`, with the budget it was
/// made with, written next to it (never over it).
std::string replan_command(const Plan& plan, const OffloadArgs& a, const ModelConfig& config,
                           const std::string& model, const RequestedShape& shape, const std::string& mode) {
  return plan_command_for(model, shape, mode, fresh_plan_file_name(a.plan_file, model),
                          planned_budget_flags_for(plan.inputs, config, shape));
}

/// The plan's prediction is for the mode it was made for: a run in another mode would report it
/// next to a different engine. Plan files before session 11 do not record their mode (accepted).
void check_plan_mode(const Plan& plan, const OffloadArgs& a, const ModelConfig& config, const std::string& model,
                     const RequestedShape& shape) {
  if (plan.inputs.offload_mode.empty() || plan.inputs.offload_mode == a.mode) return;
  fail(fmt::format("the plan was made for --offload {}; this run asks for --offload {}", plan.inputs.offload_mode,
                   a.mode),
       a.plan_file,
       fmt::format("drop --offload {} (the run then takes the plan's mode), or make the plan for this mode: {}",
                   a.mode, replan_command(plan, a, config, model, shape, a.mode)));
}

/// A plan fixes one batch and KV capacity per sequence: refused for a run of another shape.
void check_plan_shape(const Plan& plan, const OffloadArgs& a, const ModelConfig& config, const std::string& model,
                      const RequestedShape& shape) {
  const int64_t need = shape.prompt_len + shape.gen_len;
  const bool batch_differs = plan.inputs.batch != shape.batch, too_short = plan.inputs.max_context < need;
  if (!batch_differs && !too_short) return;
  // Each part named only where it is the fault: the batch must match, a plan's positions need only
  // suffice (trial of session 49: "batch 8 with 64 positions; this run has batch 1 and needs 6").
  std::string what, other;
  if (batch_differs) {
    what = fmt::format("the plan is for batch {} (sequences decoded together); this run has batch {}",
                       plan.inputs.batch, shape.batch);
    // Running as planned is a fix only where the plan's positions suffice (else the new plan is).
    if (!too_short) {
      const int64_t b = plan.inputs.batch;
      other = shape.terms.command == ShapeTerms::Command::kGenerate
                  ? fmt::format("give {} prompt{} (more with --max-batch {}), or ", b, b == 1 ? "" : "s", b)
                  : fmt::format("run --batch {}, or ", b);
    }
  }
  if (too_short) {
    // Where the positions come from: --max-context's, or the longest prompt and the new tokens.
    const std::string from = shape.terms.max_context
                                 ? std::string("--max-context")
                                 : fmt::format("prompt {} + {} new", shape.prompt_len, shape.gen_len);
    what += fmt::format("{}the plan holds {} positions per sequence, fewer than the {} this run needs ({})",
                        batch_differs ? "; and " : "", plan.inputs.max_context, need, from);
  }
  fail(what, a.plan_file,
       other + "make the plan for this run: " +
           replan_command(plan, a, config, model, shape, plan.inputs.offload_mode));
}

/// A --plan file against the run: its mode first (the fixes then suggest plans in the run's), the
/// model, then the batch and context.
void check_plan_for_run(const Plan& plan, const OffloadArgs& a, const ModelConfig& config, const std::string& model,
                        const RequestedShape& shape) {
  // A run's steps are decode steps, placed and predicted by a decode plan (a prefill plan prices
  // one prefill pass: the session-25 second trial's hand-edited phase was taken silently).
  if (plan.inputs.phase == Phase::kPrefill)
    fail("the plan was made for --phase prefill (it places and predicts the prefill); a run applies a decode "
         "plan",
         a.plan_file,
         "make a decode plan for this run: " + replan_command(plan, a, config, model, shape, plan.inputs.offload_mode));
  check_plan_mode(plan, a, config, model, shape);
  check_plan_model(plan, config, model, a.plan_file, shape);
  check_plan_shape(plan, a, config, model, shape);
  check_plan_fields(plan, config, model, a.plan_file, shape);  // after the shape: an edited batch is named as one
}

constexpr int64_t kGiB = int64_t(1) << 30;
// The most --cpu-offload-gb takes: far beyond any host memory, small enough to count in bytes.
constexpr double kMaxCpuOffloadGib = 1e6;
constexpr const char* kMaxCpuOffloadGibText = "1e6";
// HBM left free under the default budget for what the plan does not count: the engine's pass
// buffers (logits of a 1024-token prefill chunk), cuBLASLt plans, the CUDA graph.
constexpr int64_t kDefaultHeadroomBytes = 2 * kGiB;

/// CLI11 validator (use with ->transform, after decimal_number's, so that it runs first) for
/// --cpu-offload-gb: a number followed by a unit ("4GiB", "512 MB"), which --gpu-memory takes but
/// this amount in GiB does not, is refused at parsing (exit 2) saying to drop the unit.
CLI::Validator plain_gib_number() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const size_t unit = s.find_first_not_of("0123456789.+- ");
        if (unit == 0 || unit == std::string::npos) return "";
        const std::string number = s.substr(0, s.find_last_not_of(' ', unit - 1) + 1);
        try {
          parse_byte_size("1" + s.substr(unit), "--cpu-offload-gb");  // a unit --gpu-memory takes
        } catch (const Error&) {
          return "";  // no unit: decimal_number says what is wrong
        }
        if (!parse_number(number)) return "";
        return fmt::format("'{}' has a unit, but this option takes a plain number of GiB: drop the unit "
                           "(--cpu-offload-gb {}; an HBM budget with a unit goes to --gpu-memory)",
                           s, number);
      },
      "");
}

}  // namespace

bool OffloadArgs::requested() const {
  return mode == "direct" || mode == "zero-copy" || mode == "prefetch" || !gpu_memory.empty() ||
         cpu_offload_given() || !offload_ratio.empty() || !plan_file.empty();
}

std::vector<double> OffloadArgs::ratios(bool list) const {
  std::vector<double> out;
  if (offload_ratio.empty()) return out;
  for (const std::string& item : split_list(offload_ratio)) {
    const std::optional<double> v = parse_number(item);
    const std::string fix = list ? "give fractions, e.g. --offload-ratio 0,0.1,0.3 (a comma list sweeps)"
                                 : "give one fraction, e.g. --offload-ratio 0.3 for 30 % of the weight + KV bytes on "
                                   "the host";
    // Checked while the command line parses, for every command alike: a fix that fits both.
    if (!v)
      fail_usage(fmt::format("'{}' is not a number, so not a fraction in [0, 1]", item), "--offload-ratio",
                 "give a fraction, e.g. --offload-ratio 0.3 for 30 % of the weight + KV bytes on the host (dak bench "
                 "also takes a comma list, e.g. 0,0.1,0.3, and sweeps it)");
    if (!(*v >= 0 && *v <= 1)) fail(fmt::format("'{}' is not a fraction in [0, 1]", item), "--offload-ratio", fix);
    if (number_underflows(item)) {
      fail(fmt::format("'{}' is too small to hold (below {:g}, the smallest normal double), so it would plan 0 %", item,
                       std::numeric_limits<double>::min()),
           "--offload-ratio", "give 0 for no offload, or a fraction such as 0.001");
    }
    out.push_back(*v);
  }
  if (!list && out.size() > 1) {
    fail(fmt::format("--offload-ratio {} lists {} ratios; only dak bench sweeps a list", offload_ratio, out.size()),
         "--offload-ratio", "give one fraction, e.g. --offload-ratio 0.3");
  }
  return out;
}

CLI::Validator offload_ratio_syntax() {
  return value_syntax([](const std::string& s) {
    OffloadArgs parsed;
    parsed.offload_ratio = s;
    parsed.ratios(/*list=*/true);  // the count (one for a generation) is checked with the other flags
  });
}

double parse_offload_ratio(const std::string& text) {
  OffloadArgs parsed;
  parsed.offload_ratio = text;
  return parsed.ratios(/*list=*/false).front();
}

void add_offload_options(CLI::App* c, OffloadArgs* a) {
  a->mode_opt = c->add_option("--offload", a->mode,
                "auto: offload only what the budget forces (default); direct: apply the plan, every host byte "
                "streamed into SMEM by the tiered kernels (TMA); zero-copy: the same placement read by the ordinary "
                "kernels through host-mapped pointers (the vLLM UVA baseline); prefetch: the copy engine stages "
                "each linear's host rows into a 3-slot HBM ring, the copy of staged linear k waiting for the GEMM of "
                "linear k-3 (the FlexGen approach); none: everything in HBM")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "direct", "zero-copy", "prefetch", "none"}));
  c->add_option("--gpu-memory", a->gpu_memory,
                "HBM budget for weights + KV cache + workspaces, e.g. 40GiB (default: free HBM less 2 GiB)")
      ->check(value_syntax([](const std::string& s) { parse_byte_size(s, "--gpu-memory"); }));
  a->cpu_offload_opt = add_cpu_offload_option(c, &a->cpu_offload_gib);
  c->add_option("--offload-ratio", a->offload_ratio,
                "global fraction of weight + KV bytes in host memory, 0..1; overrides --cpu-offload-gb, and with "
                "--gpu-memory that budget must still hold what the ratio leaves in HBM; not with --plan (dak bench: a "
                "comma list sweeps)")
      ->check(offload_ratio_syntax());
  a->allocator_opt =
      c->add_option("--allocator", a->allocator, "how the planner spreads host bytes over operators: greedy or uniform")
          ->capture_default_str()
          ->check(CLI::IsMember({"greedy", "uniform"}));
  c->add_option("--plan", a->plan_file, "apply this plan (dak plan --output json) instead of planning");
  c->add_option("--profile", a->profile,
                "hardware profile for the planner: a JSON file (dak profile --output) or a compiled-in name, "
                "h200-default, h100-default or h100-fast-link (default: the compiled-in profile of this GPU, "
                "on an H100 80GB HBM3 h100-default or h100-fast-link, whichever was measured on a link nearer to "
                "this host's (measured at start); h200-default where none matches it, with a notice, in a build "
                "without CUDA, or without a GPU)");
}

namespace {

/// Plan::load, with a notice (once per file) for each field no planner writes: a misspelt or extra
/// field of a hand-edited plan is ignored, and the user should know.
Plan load_plan(const std::string& path) {
  std::vector<std::string> unknown;
  Plan plan = Plan::load(path, &unknown);
  static std::vector<std::string> noted;
  if (std::find(noted.begin(), noted.end(), path) == noted.end()) {
    noted.push_back(path);
    for (const std::string& f : unknown) {
      std::fprintf(stderr, "dak: notice: %s: unknown field '%s' ignored (check its spelling against a file "
                   "that dak plan --output json writes)\n", path.c_str(), f.c_str());
    }
  }
  return plan;
}

}  // namespace

const Plan& OffloadArgs::plan() const {
  if (!plan_ || plan_read_from_ != plan_file) {
    plan_ = std::make_shared<const Plan>(load_plan(plan_file));
    plan_read_from_ = plan_file;
  }
  return *plan_;
}

void adopt_plan_mode(OffloadArgs& a, bool notice) {
  if (a.plan_file.empty() || (a.mode_opt && a.mode_opt->count() > 0)) return;
  // Flags that conflict with --plan are check_offload_args' to refuse, before the file is read.
  if (!a.gpu_memory.empty() || a.cpu_offload_given() || !a.offload_ratio.empty()) return;
  const Plan& plan = a.plan();
  if (plan.inputs.offload_mode.empty() || plan.inputs.offload_mode == a.mode) return;
  if (notice) {
    std::fprintf(stderr, "dak: notice: %s was made for --offload %s; running in that mode\n", a.plan_file.c_str(),
                 plan.inputs.offload_mode.c_str());
  }
  a.mode = plan.inputs.offload_mode;
}

void check_offload_args(const OffloadArgs& a, bool ratio_list) {
  const bool cpu_gb = a.cpu_offload_given();
  const std::vector<double> ratios = a.ratios(ratio_list);  // checks every item
  if (a.mode == "none") {
    if (!a.plan_file.empty()) {  // the plan's own mode, which the run takes without --offload
      const std::string mode = a.plan().inputs.offload_mode;
      fail("--offload none keeps everything in HBM, but --plan places weights in host memory", "--offload none",
           fmt::format("drop --offload none (the run then takes the mode the plan was made for, --offload {}), or "
                       "drop --plan",
                       mode.empty() ? std::string("auto") : mode));
    }
    if (a.requested()) {
      fail("--offload none keeps everything in HBM, but an offload flag was given", "--offload none",
           "drop --gpu-memory / --cpu-offload-gb / --offload-ratio / --plan, or use --offload auto or direct");
    }
    return;
  }
  // The end-to-end issue's semantics: --gpu-memory (HBM budget) or --cpu-offload-gb (host amount),
  // not both; --offload-ratio overrides them (the budget still bounds HBM); a plan file fixes all.
  if (!a.plan_file.empty() && (!a.gpu_memory.empty() || cpu_gb || !ratios.empty())) {
    fail("--plan already fixes the split between HBM and host memory, so --gpu-memory / --cpu-offload-gb / "
         "--offload-ratio would be ignored",
         "--plan", "drop the other offload flags, or drop --plan to plan here");
  }
  check_budget_or_host_amount(!a.gpu_memory.empty(), cpu_gb);

  if (!a.plan_file.empty() && (!a.profile.empty() || a.allocator != "greedy")) {
    fail("--plan already fixes the placement, so --profile / --allocator would be ignored", "--plan",
         "drop --profile / --allocator, or drop --plan to plan here");
  }
  if (!a.gpu_memory.empty()) parse_byte_size(a.gpu_memory, "--gpu-memory");
  if (cpu_gb) check_cpu_offload_gib(a.cpu_offload_gib);
  if (!a.plan_file.empty()) a.plan();  // missing, malformed (its mode: check_plan_file_model)
  if (!a.profile.empty()) load_profile(a.profile);
}

void check_plan_file_model(const OffloadArgs& a, const ModelConfig& config, const std::string& model,
                           const RequestedShape& shape) {
  if (a.plan_file.empty()) return;
  check_plan_for_run(a.plan(), a, config, model, shape);
}

void apply_cpu_offload_gib(double gib, const ModelConfig& config, const HardwareProfile& profile, int64_t budget,
                           const std::string& budget_source, PlanRequest& req) {
  if (!req.gpu_memory_bytes) req.gpu_memory_is_profile_default = budget == profile.default_hbm_budget_bytes();
  req.gpu_memory_bytes = budget;
  const Capacity cap = Planner(config, profile, req).capacity();
  const int64_t host = int64_t(std::llround(gib * double(kGiB)));
  const int64_t movable = cap.splittable_weight_bytes + cap.kv_bytes;
  if (host > movable) {
    const auto [asked, can] = format_bytes_apart(host, movable);
    fail(fmt::format("--cpu-offload-gb {} asks for {} in host memory, but only {} of weights + KV cache can move "
                     "there",
                     gib, asked, can),
         "--cpu-offload-gb",
         // The tighter of the two limits (the trial of session 27 was told 128.49, then refused at the
         // profile's 120 pinnable GiB).
         movable <= profile.pinnable_host_bytes
             ? "give at most " + format_at_most(double(movable) / double(kGiB))
             : "give at most " + format_at_most(double(profile.pinnable_host_bytes) / double(kGiB)) +
                   " (what the hardware profile '" + profile.name + "' can pin)");
  }
  // Checked here, not as the forced ratio it becomes: the limit is named in the user's flag and unit.
  if (host > profile.pinnable_host_bytes)
    fail(fmt::format("--cpu-offload-gb {} asks for {} in host memory, but the hardware profile '{}' can pin only "
                     "{}",
                     gib, format_bytes(double(host)), profile.name, format_bytes(double(profile.pinnable_host_bytes))),
         "--cpu-offload-gb",
         "give at most " + format_at_most(double(profile.pinnable_host_bytes) / double(kGiB)) +
             ", or use a profile whose host_memory.pinnable_bytes is larger (`dak profile --pin-test-gib N` "
             "measures up to N GiB)");
  const int64_t left = std::max<int64_t>(1, cap.total_bytes - host);
  if (left > budget) {
    const auto [leaves, holds] = format_bytes_apart(left, budget);
    fail(fmt::format("--cpu-offload-gb {} leaves {} in HBM, more than the {} {}", gib, leaves, holds, budget_source),
         "--cpu-offload-gb", "give at least " + format_at_least(double(cap.total_bytes - budget) / double(kGiB)));
  }
  // Those bytes, as a forced share of what can move, under the GPU's own budget: HBM is not
  // capped at (total - host), so a staged plan's ring needs no further host bytes (session 21:
  // as a budget, the ring pushed OPT-6.7B's 1 GiB point off the staged path, 19.9 -> 21.7 ms).
  if (host > 0) {
    req.offload_ratio = double(host) / double(movable);
    req.cpu_offload_bytes = host;
  }
}

CLI::Option* add_cpu_offload_option(CLI::App* c, double* gib) {
  return c
      ->add_option("--cpu-offload-gb", *gib,
                   fmt::format("GiB of weights + KV cache to keep in host memory (as vLLM), a plain number from 0 to "
                               "{} without a unit (e.g. 4 or 0.5); not with --gpu-memory",
                               kMaxCpuOffloadGibText))
      ->transform(decimal_number(fmt::format("a number of GiB from 0 to {} (e.g. 4 or 0.5)", kMaxCpuOffloadGibText),
                                 -HUGE_VAL, HUGE_VAL))  // the range: check_cpu_offload_gib, after parsing
      ->transform(plain_gib_number());
}

void check_budget_or_host_amount(bool gpu_memory, bool cpu_offload_gb) {
  if (gpu_memory && cpu_offload_gb) {
    fail("--gpu-memory (the HBM budget) and --cpu-offload-gb (the host amount) each fix the split between HBM and host "
         "memory",
         "--gpu-memory / --cpu-offload-gb", "give only one of them (--offload-ratio may be added to either)");
  }
}

void notice_ratio_overrides_cpu_offload(double gib) {
  static bool noted = false;  // once per process: dak bench plans each point
  if (noted) return;
  std::fprintf(stderr, "dak: notice: --offload-ratio overrides --cpu-offload-gb %g\n", gib);
  noted = true;
}

void check_cpu_offload_gib(double v) {
  if (!(v >= 0 && v <= kMaxCpuOffloadGib)) {
    fail(fmt::format("--cpu-offload-gb {} {}: it must be between 0 and {} GiB", v,
                     std::isnan(v) ? "is not a number" : v < 0 ? "is negative" : "is too large", kMaxCpuOffloadGibText),
         "--cpu-offload-gb", "give the GiB of weights + KV cache to keep in host memory, e.g. --cpu-offload-gb 4");
  }
}

std::optional<Plan> plan_offload(const OffloadArgs& a, std::optional<double> forced_ratio, const ModelConfig& config,
                                 const std::string& model_name, const RequestedShape& shape,
                                 int64_t free_hbm_bytes) {
  const bool cpu_gb = a.cpu_offload_given();
  const bool ratio = forced_ratio.has_value();
  if (a.mode == "none") return std::nullopt;
  if (!a.plan_file.empty()) {
    Plan plan = a.plan();
    check_plan_for_run(plan, a, config, model_name, shape);
    if (a.mode != "auto") {  // one path for every operator: the plan's staged marks do not apply
      for (PlanOp& op : plan.ops) {
        if (op.path == DataPath::kStaged) op.path = DataPath::kDirect;
      }
    }
    return plan;
  }
  const HardwareProfile profile = a.profile.empty() ? gpu_default_profile() : load_profile(a.profile);
  PlanRequest req;
  req.model_name = model_name;
  req.profile_file = profile_file_of(a.profile);
  req.shape.batch = shape.batch;
  req.shape.prompt_len = shape.prompt_len;
  req.shape.gen_len = shape.gen_len;
  req.terms = shape.terms;
  req.allocator = parse_allocator(a.allocator, "--allocator");
  // auto: the plan's per-operator choice between the direct and the staged (copy-engine) path;
  // the other modes apply one path to every operator, so they plan for the direct path and the
  // plan prices each operator on the mode's path (its predicted TPOT is that mode's).
  req.allow_staged = a.mode == "auto";
  req.single_path = single_path_of_mode(a.mode);
  if (ratio) req.offload_ratio = *forced_ratio;
  if (!a.gpu_memory.empty()) {
    req.gpu_memory_bytes = parse_byte_size(a.gpu_memory, "--gpu-memory");
  } else {
    int64_t budget = profile.default_hbm_budget_bytes();
    // Where the budget comes from, for the messages: the GPU's free memory where it is the lower.
    std::string budget_source = fmt::format("default HBM budget of the profile '{}'", profile.name);
    if (free_hbm_bytes > 0 && free_hbm_bytes - kDefaultHeadroomBytes < budget) {
      budget = std::max<int64_t>(0, free_hbm_bytes - kDefaultHeadroomBytes);
      budget_source = "budget of this GPU (its free HBM less 2 GiB)";
    }
    req.gpu_memory_bytes = budget;
    req.gpu_memory_is_profile_default = budget == profile.default_hbm_budget_bytes();
    if (cpu_gb && ratio) {  // the ratio sets the host share
      notice_ratio_overrides_cpu_offload(a.cpu_offload_gib);
    } else if (cpu_gb) {  // that many bytes on the host (vLLM's meaning: an amount, not an HBM budget)
      apply_cpu_offload_gib(a.cpu_offload_gib, config, profile, budget, budget_source, req);
    }
  }
  Plan plan = make_plan_for_gpu_memory(config, profile, req, a.gpu_memory);
  // A forced share (--offload-ratio, or --cpu-offload-gb as one) is applied even where all fits.
  if (auto_keeps_all_in_hbm(a.mode, req.offload_ratio.has_value(), plan)) return std::nullopt;
  return plan;
}

Plan make_plan_for_gpu_memory(const ModelConfig& config, const HardwareProfile& profile, const PlanRequest& req,
                              const std::string& gpu_memory) {
  try {
    return make_plan(config, profile, req);
  } catch (const Error& e) {
    const bool unitless = !gpu_memory.empty() && std::none_of(gpu_memory.begin(), gpu_memory.end(), [](char c) {
      return std::isalpha(static_cast<unsigned char>(c));
    });
    // 0 is no budget in any unit: the planner's own fix says so (the session-25 trial read the hint twice).
    if (!unitless || e.where_part() != "--gpu-memory" || parse_byte_size(gpu_memory, "--gpu-memory") == 0) throw;
    throw Error(e.what_part(), e.where_part(),
                "a size without a unit counts bytes: write e.g. 20GiB; " + e.fix_part());
  }
}

void check_plan_without_gpu(const OffloadArgs& a, std::optional<double> ratio, const ModelConfig& config,
                            const std::string& model_name, const RequestedShape& shape) {
  // Without --gpu-memory the planner takes the profile's default budget, the most any run gets (the
  // GPU's free memory only lowers it), so what it refuses here the GPU run refuses too (e.g. a ratio
  // whose host bytes exceed the pinnable memory: the session-23 trial's opt-30b at 80 %).
  if (a.mode == "none" ||
      (a.plan_file.empty() && a.gpu_memory.empty() && !ratio && !a.cpu_offload_given()))
    return;
  plan_offload(a, ratio, config, model_name, shape, /*free_hbm_bytes=*/0);
}

bool auto_keeps_all_in_hbm(const std::string& mode, bool ratio_forced, const Plan& plan) {
  // auto offloads only what the budget forces: where everything fits, the plan may still move a
  // few rows to the host because the cost model adds the link's bandwidth to HBM's; that gain is
  // not measured on this engine yet, so auto keeps such runs in HBM.
  return mode == "auto" && !ratio_forced && plan.capacity.required_host_bytes == 0;
}

std::string describe_plan(const Plan& plan) {
  int64_t weight_host = 0, kv_host = 0;
  for (const PlanOp& op : plan.ops) (op.kind == OpKind::kAttention ? kv_host : weight_host) += op.host_bytes;
  if (weight_host + kv_host == 0) {
    return fmt::format("offload: none needed (weights + KV cache {} fit the HBM budget {})",
                       format_bytes(double(plan.capacity.total_bytes)),
                       format_bytes(double(plan.capacity.hbm_budget_bytes)));
  }
  // The profile choice, once per process (dak bench describes every offload point).
  static bool noted = false;
  const bool say = !noted && !gpu_default_profile_note().empty() && plan.inputs.profile_file.empty();
  noted = noted || say;
  return fmt::format("offload{}: {} of weights and {} of KV cache in host memory ({:.1f} % of {}), {} read in place, "
                     "{} staged by the copy engine; predicted TPOT {:.2f} ms{}",
                     plan.inputs.offload_mode.empty() ? std::string() : " (" + plan.inputs.offload_mode + ")",
                     format_bytes(double(weight_host)), format_bytes(double(kv_host)), 100.0 * plan.totals.host_ratio,
                     format_bytes(double(plan.capacity.splittable_weight_bytes + plan.capacity.kv_bytes)),
                     format_bytes(double(plan.totals.direct_host_bytes + plan.totals.zero_copy_host_bytes)),
                     format_bytes(double(plan.totals.staged_host_bytes)),
                     plan.predicted_tpot_s * 1e3,
                     say ? "\ndak: notice: " + gpu_default_profile_note() : std::string());
}

}  // namespace dak::cli
