// `dak plan`: per-operator offload plan and predicted TPOT for a model config, batch and lengths,
// without a GPU (DESIGN.md §2; docs/planner.md).
//
//   dak plan --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 32 --gpu-memory 20GiB
//            [--allocator greedy|uniform] [--output text|json] [--profile FILE]
//            [--phase decode|prefill] [--offload-ratio R | --cpu-offload-gb N] [--no-staged] [--verbose]
//            [--offload auto|direct|prefetch|zero-copy]
//            [--sweep-ratios 0:100:10]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "cli/offload_options.h"
#include "core/byte_size.h"
#include "core/config_locator.h"
#include "core/error.h"
#include "core/op_graph.h"
#include "core/plan_report.h"
#include "core/planner.h"

namespace dak::cli {

namespace {

constexpr int kMaxSweepPoints = 1001;

// "0:100:10" (percent, inclusive) or "0,5,50" (percent) -> fractions. Throws dak::UsageError for text
// that is not such a list ("0:abc:10", "1,,2", "0:100"), dak::Error for a percentage outside
// [0, 100], an empty range or more than kMaxSweepPoints points.
std::vector<double> parse_ratio_list(const std::string& s) {
  const std::string where = "--sweep-ratios";
  const std::string fix = "write start:stop:step or a comma list, in percent, e.g. 0:100:10 or 0,5,50";
  // `part`: "start ", "stop " or "step " in start:stop:step, "" for a list item.
  auto number = [&](const std::string& t, const std::string& part) {
    const std::optional<double> v = parse_number(t);
    if (!v) fail_usage(fmt::format("{}'{}' is not a number", part, t), where, fix);
    if (part == "step " && !(*v > 0 && *v <= 100)) {
      fail(fmt::format("the step '{}' of '{}' is outside (0, 100] percent", t, s), where,
           "give a positive step of at most 100 percent, e.g. 0:100:10");
    }
    if (*v < 0 || *v > 100) {
      fail(fmt::format("{}'{}' is outside [0, 100] percent", part.empty() ? "" : "the " + part, t), where,
           "give percentages from 0 (nothing on the host) to 100 (every weight and KV byte on the host), e.g. "
           "0:100:10");
    }
    return *v == 0 ? 0.0 : *v;  // -0 is 0
  };
  std::vector<double> out;
  if (s.find(':') != std::string::npos) {
    size_t a = s.find(':'), b = s.find(':', a + 1);
    if (b == std::string::npos) fail_usage(fmt::format("'{}' needs start:stop:step", s), where, fix);
    double lo = number(s.substr(0, a), "start "), hi = number(s.substr(a + 1, b - a - 1), "stop "),
           step = number(s.substr(b + 1), "step ");
    if (step <= 0 || hi < lo) fail(fmt::format("'{}' is an empty range", s), where, fix);
    if ((hi - lo) / step > double(kMaxSweepPoints - 1) + 1e-6) {
      fail(fmt::format("'{}' has more than {} points", s, kMaxSweepPoints), where, "use a larger step");
    }
    for (int i = 0; lo + i * step <= hi + 1e-9; ++i) out.push_back((lo + i * step) / 100.0);
  } else {
    for (const std::string& item : split_list(s)) out.push_back(number(item, "") / 100.0);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());  // "0,0,50": one 0 % row
  return out;
}

}  // namespace

void add_plan_command(CLI::App& app) {
  struct Args {
    std::string model;
    int64_t batch = 8, prompt_len = 32, gen_len = 32, tile_rows = 128;
    std::string gpu_memory;
    std::string offload_ratio;
    std::string allocator = "greedy";
    std::string output = "text";
    std::string profile;
    std::string phase = "decode";
    std::string sweep;
    double cpu_offload_gib = 0;
    std::string mode = "auto";  // --offload
    bool no_staged = false;
    bool verbose = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand(
      "plan", "Plan per-operator offload ratios and predict TPOT (--phase prefill: the prefill time, TTFT) for a "
              "model config (no GPU needed)");
  // Without --model: $DAK_MODEL, as the other commands take it (README); a plan has no default model.
  c->add_option("--model", a->model,
                "config.json, HF model folder, .gguf file (or a folder holding one, as dak generate takes it), or a "
                "shipped config name (e.g. llama-2-7b); default: $DAK_MODEL, where set")
      ->required(dak_model_env().empty());
  // whole_number only reads the values as decimal (CLI11 alone took 010 as 8 and 0x10 as 16, and
  // clamped 10^22 to 2^63 - 1); the ranges are checked below and by the planner (build_op_graph).
  c->add_option("--batch", a->batch, "sequences per step")
      ->capture_default_str()
      ->transform(whole_number(batch_range_text()));  // the range: check_batch_size (shared with dak bench)
  const std::string length = "a count of at least 1; --prompt-len + --gen-len must fit in the model's context";
  c->add_option("--prompt-len", a->prompt_len, "prompt tokens per sequence")
      ->capture_default_str()
      ->transform(whole_number(length));
  c->add_option("--gen-len", a->gen_len,
                "generated tokens per sequence: the first comes from the prefill, each other from a decode step "
                "(--phase decode needs 2 or more)")
      ->capture_default_str()
      ->transform(whole_number(length));
  c->add_option("--gpu-memory", a->gpu_memory,
                "HBM budget, e.g. 20GiB, 40GB, 512MiB (default: the profile's free HBM minus its reserve)")
      ->check(value_syntax([](const std::string& s) { parse_byte_size(s, "--gpu-memory"); }));
  // As dak generate / bench take it, so a run with --cpu-offload-gb N can be planned as such (the trial of
  // session 27 had to turn N into a budget by hand).
  CLI::Option* cpu_gb_opt = add_cpu_offload_option(c, &a->cpu_offload_gib);
  CLI::Option* ratio_opt = c->add_option("--offload-ratio", a->offload_ratio,
                "force the global fraction R of weight + KV bytes on the host (0..1); with --gpu-memory the budget "
                "must still hold what R leaves in HBM")
      ->check(offload_ratio_syntax());  // generate's and bench's parser: the same values, the same words
  c->add_option("--allocator", a->allocator, "greedy or uniform")
      ->capture_default_str()
      ->check(CLI::IsMember({"greedy", "uniform"}));
  c->add_option("--output", a->output, "text or json")->capture_default_str()->check(CLI::IsMember({"text", "json"}));
  c->add_option("--profile", a->profile,
                "hardware profile: a JSON file (dak profile --output) or a compiled-in name, h200-default, "
                "h100-default or h100-fast-link (default: the compiled-in profile of this machine's GPU, "
                "on an H100 80GB HBM3 h100-default or h100-fast-link, whichever was measured on a link nearer to "
                "this host's (measured at start); h200-default where none matches it, with a notice, in a build "
                "without CUDA, or without a GPU)");
  c->add_option("--phase", a->phase,
                "decode (predicts TPOT, one decode step) or prefill (predicts the prefill time of batch x prompt "
                "tokens: the TTFT)")
      ->capture_default_str()
      ->check(CLI::IsMember({"decode", "prefill"}));
  c->add_option("--tile-rows", a->tile_rows, "weight rows per split unit (tiered GEMM tile height)")
      ->capture_default_str()
      ->transform(whole_number(fmt::format("a count of rows from 1 to {}", kMaxTileRows)));
  c->add_flag("--no-staged", a->no_staged, "direct path only (no copy-engine staging)");
  c->add_option("--offload", a->mode,
                "the engine mode to predict: auto (the plan's choice of direct or staged per operator), or one path "
                "for every operator as dak generate --offload applies it: direct, prefetch (linears staged by the copy "
                "engine) or zero-copy (the ordinary kernels read host memory in place)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "direct", "prefetch", "zero-copy"}));
  c->add_flag("--verbose", a->verbose, "list every operator of every layer");
  c->add_option("--sweep-ratios", a->sweep,
                "instead of one plan: greedy vs uniform TPOT (--phase prefill: prefill time) over global ratios, "
                "percent, e.g. 0:100:10")
      ->check(value_syntax([](const std::string& s) { parse_ratio_list(s); }));
  c->callback([a, ratio_opt, cpu_gb_opt] {
    const LocatedConfig model = a->model.empty() ? locate_model_config(default_model_path().string(), kDakModelWhere)
                                                 : locate_model_config(a->model);
    notice_defaulted_sizes(model.config, model.path.string());
    if (!model.config.quantization.empty() && model.path.extension() != ".gguf") {
      // The plan counts bf16 weights; a checkpoint stored quantized does not load (trial of session 50).
      std::fprintf(stderr,
                   "dak: notice: %s has a quantization_config (quant_method %s): the plan counts the model's "
                   "weights in bf16; dak runs bf16, fp16 or fp32 safetensors (or GGUF) checkpoints, not "
                   "quantized safetensors ones\n",
                   model.path.string().c_str(), model.config.quantization.c_str());
    }
    // Without --profile: the compiled-in profile of this machine's GPU, as generate and bench take
    // it, so a plan made here fits the runs here; h200-default on a machine without a GPU.
    const HardwareProfile profile = a->profile.empty() ? gpu_default_profile() : load_profile(a->profile);
    if (a->profile.empty() && !gpu_default_profile_note().empty()) {
      std::fprintf(stderr, "dak: notice: %s\n", gpu_default_profile_note().c_str());
    }
    PlanRequest req;
    req.model_name = model.name;
    req.profile_file = profile_file_of(a->profile);
    check_batch_size(a->batch, "--batch");
    for (const auto& [value, flag] : {std::pair{a->prompt_len, "--prompt-len"}, std::pair{a->gen_len, "--gen-len"}}) {
      if (value < 1) fail(fmt::format("{} {} is not a positive count", flag, value), flag, "pass 1 or more");
    }
    // The planner's own check says "step shape"; the user typed --tile-rows (the session-23 trial).
    // Both ends of its range in one check, with one fix that gives the range (session-35 trial).
    if (a->tile_rows < 1 || a->tile_rows > kMaxTileRows) {
      fail(a->tile_rows < 1
               ? fmt::format("--tile-rows {} is not a positive count", a->tile_rows)
               : fmt::format("--tile-rows {} is more than the planner supports ({} rows)", a->tile_rows, kMaxTileRows),
           "--tile-rows",
           fmt::format("pass --tile-rows between 1 and {} (default 128: the rows of one tiered GEMM tile)",
                       kMaxTileRows));
    }
    // One generated token comes from the prefill: no decode step runs, so a decode plan would predict
    // the TPOT of a step that never happens (the new-user trial read it as the run's; dak generate -n 1
    // prints TPOT n/a, dak bench refuses --gen-len 1). The prefill plan is the one such a run has.
    if (a->gen_len == 1 && a->phase == "decode") {
      fail("--gen-len 1 has no decode step: the one token of each sequence comes from the prefill, so there is "
           "no TPOT to predict (--phase decode is the default)",
           "--gen-len",
           "add --phase prefill to plan the prefill that makes the token (its time is the TTFT), or pass --gen-len "
           "2 or more to plan the decode steps");
    }
    req.shape.batch = a->batch;
    req.shape.prompt_len = a->prompt_len;
    req.shape.gen_len = a->gen_len;
    req.shape.phase = parse_phase(a->phase, "--phase");
    req.shape.tile_rows = a->tile_rows;
    const bool cpu_gb = cpu_gb_opt->count() > 0;
    if (cpu_gb) check_cpu_offload_gib(a->cpu_offload_gib);
    check_budget_or_host_amount(!a->gpu_memory.empty(), cpu_gb);
    if (!a->gpu_memory.empty()) req.gpu_memory_bytes = parse_byte_size(a->gpu_memory, "--gpu-memory");
    if (ratio_opt->count() > 0) req.offload_ratio = parse_offload_ratio(a->offload_ratio);
    req.allocator = parse_allocator(a->allocator, "--allocator");
    req.allow_staged = !a->no_staged;
    if (a->no_staged && a->mode != "auto")
      fail(fmt::format("--no-staged is for --offload auto; --offload {} already fixes the path", a->mode),
           "--no-staged", "drop one of the two");
    req.single_path = single_path_of_mode(a->mode);  // the planner then ignores allow_staged

    if (!a->sweep.empty()) {
      // The sweep compares both allocators over its own ratios (the session-17 trial: --offload-ratio
      // and --allocator were dropped without a word).
      if (ratio_opt->count() > 0 || a->allocator != Args{}.allocator || a->verbose || !a->gpu_memory.empty() ||
          cpu_gb) {
        fail("--sweep-ratios prints greedy vs uniform over its own ratios, so --offload-ratio, --cpu-offload-gb, "
             "--allocator, --gpu-memory and --verbose do not apply",
             "--sweep-ratios", "drop them, or drop --sweep-ratios for one plan");
      }
      // A long sweep (up to 1001 ratios, each planned twice) says how far it is on stderr, every 2 s
      // once it has run for 2 s (a trial waited 2 min on a silent one).
      const auto t0 = std::chrono::steady_clock::now();
      auto last = t0;
      const auto progress = [&](size_t done, size_t total) {
        const auto now = std::chrono::steady_clock::now();
        if (done == total || now - t0 < std::chrono::seconds(2) || now - last < std::chrono::seconds(2)) return;
        last = now;
        std::fprintf(stderr, "dak plan: %zu of %zu ratios planned (%.0f s)\n", done, total,
                     std::chrono::duration<double>(now - t0).count());
      };
      const std::vector<RatioSweepRow> rows =
          sweep_offload_ratio(model.config, profile, req, parse_ratio_list(a->sweep), progress);
      // A prefill step is the prefill time (the TTFT), not a TPOT: its columns and keys say so.
      const bool prefill = req.shape.phase == Phase::kPrefill;
      if (a->output == "json") {
        nlohmann::json j = nlohmann::json::array();
        for (const RatioSweepRow& r : rows)
          j.push_back(r.refused.empty()
                          ? nlohmann::json{{"ratio", r.ratio},
                                           {prefill ? "greedy_prefill_s" : "greedy_tpot_s", r.greedy_tpot_s},
                                           {prefill ? "uniform_prefill_s" : "uniform_tpot_s", r.uniform_tpot_s},
                                           {"speedup", r.speedup}}
                          : nlohmann::json{{"ratio", r.ratio}, {"refused", r.refused}});
        std::cout << json_text(j) << std::endl;
      } else {
        const std::string table = format_ratio_sweep(rows, req.shape.phase);
        std::cout << fmt::format("{} {} batch {} prompt {} gen {}, profile {}, --offload {}{}\n\n", model.name,
                                 a->phase, a->batch, a->prompt_len, a->gen_len, profile.name, a->mode,
                                 req.single_path && *req.single_path != DataPath::kDirect
                                     ? " (allocations made for the direct path, priced on this mode's path)"
                                 : a->no_staged ? " --no-staged (staged path off)"
                                                : "")
                  << table;
      }
      // A sweep with no plan at all answered nothing (the session-33 trial's all-refused sweep exited
      // 0): the table stays on stdout, the run fails with the first refusal.
      if (!rows.empty() && std::all_of(rows.begin(), rows.end(), [](const RatioSweepRow& r) { return !r.refused.empty(); })) {
        std::cout << std::flush;
        fail(fmt::format("every ratio of the sweep was refused; the first: {}", rows.front().refused), "--sweep-ratios",
             "sweep ratios the planner can place (each row above says why it refused), or change --gpu-memory / "
             "--profile");
      }
      return;
    }
    if (cpu_gb && ratio_opt->count() > 0) {
      notice_ratio_overrides_cpu_offload(a->cpu_offload_gib);
    } else if (cpu_gb) {  // that many bytes on the host, under the profile's default budget
      apply_cpu_offload_gib(a->cpu_offload_gib, model.config, profile, profile.default_hbm_budget_bytes(),
                            fmt::format("default HBM budget of the profile '{}'", profile.name), req);
    }
    const Plan plan = make_plan_for_gpu_memory(model.config, profile, req, a->gpu_memory);
    if (a->output == "json") {
      // Only what Plan::to_json writes (a prefill plan's predicted_prefill_s included): Plan::load knows
      // exactly those fields.
      std::cout << json_text(plan.to_json()) << std::endl;
    } else {
      std::cout << format_plan_text(plan, profile, a->verbose);
    }
    // What `dak generate --offload auto` does with such a plan: a plan that moves rows to the host
    // for speed alone is not applied there (the new-user trial of session 18 read it as the run's).
    if (a->output != "json" && plan.totals.host_bytes > 0 &&
        auto_keeps_all_in_hbm(a->mode, req.offload_ratio.has_value(), plan)) {
      std::cout << fmt::format(
          "note      dak generate --offload auto keeps this run all in HBM: the budget forces nothing to the host, "
          "and the {} above are placed for the cost model's gain from reading the link beside HBM, which is not "
          "measured on the engine; --offload direct, or --plan with this plan's JSON, applies it\n",
          format_bytes(double(plan.totals.host_bytes)));
    }
  });
}

}  // namespace dak::cli
