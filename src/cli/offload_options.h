// Offload flags shared by `dak generate` and `dak bench` (the end-to-end offload issue), in the
// ecosystem's terms:
//   --offload auto|direct|zero-copy|prefetch|none
//                                auto (default): offload only what the budget forces (or the
//                                ratio / plan given), with the plan's per-operator path; direct:
//                                apply the plan as made (which may move a few rows to the host even
//                                when all fits, where the cost model predicts a faster step), every
//                                host byte read in place by the tiered kernels; zero-copy: the same
//                                placement read by the ordinary kernels (cuBLASLt, flash-decoding)
//                                through host-mapped pointers, the vLLM UVA baseline; prefetch: the
//                                copy engine stages each linear's host rows into a three-slot HBM ring
//                                ahead of its GEMM (FlexGen; weights only, KV read in place); none:
//                                all in HBM
//   --gpu-memory SIZE            HBM budget for weights + KV cache + workspaces (e.g. 40GiB)
//   --cpu-offload-gb GIB         host amount instead (as vLLM's --cpu-offload-gb); not with --gpu-memory
//   --offload-ratio R            global fraction of weight + KV bytes on the host (0..1; dak bench:
//                                a comma list sweeps), spread by
//   --allocator greedy|uniform   the allocator; overrides both budgets
//   --plan FILE                  a plan from `dak plan --output json` (instead of the flags above)
//   --profile FILE               hardware profile for the planner (default: compiled-in h200-default)
// auto lets the planner pick the direct or the staged path per operator (staged linears copy their
// host rows into an HBM ring ahead of use; embeddings and the KV cache are read in place); direct,
// zero-copy and prefetch plan for the direct path and then apply their one path to every operator.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/model_config.h"
#include "core/plan.h"
#include "core/planner.h"

namespace dak::cli {

struct OffloadArgs {
  std::string mode = "auto";
  std::string gpu_memory;
  double cpu_offload_gib = 0;
  std::string offload_ratio;  // one fraction, or (dak bench) a comma list that sweeps
  std::string allocator = "greedy";
  std::string plan_file;
  std::string profile;
  CLI::Option* cpu_offload_opt = nullptr;
  CLI::Option* allocator_opt = nullptr;
  CLI::Option* mode_opt = nullptr;

  /// True when --cpu-offload-gb was given.
  bool cpu_offload_given() const { return cpu_offload_opt && cpu_offload_opt->count() > 0; }
  /// True when a planner-only flag was given (--allocator, --profile): it shapes a GPU placement.
  bool planner_flag_given() const { return (allocator_opt && allocator_opt->count() > 0) || !profile.empty(); }
  /// True when any flag asks for offloading (a budget, a ratio, a plan or a mode other than auto/none).
  bool requested() const;
  /// --offload-ratio as fractions in [0, 1] (empty when not given). Throws dak::UsageError for an
  /// item that is not a number, dak::Error for one outside [0, 1] or for more than one item when
  /// `list` is false.
  std::vector<double> ratios(bool list) const;
  /// The --plan file, read and checked once per command (Plan::load; its unknown fields named in a
  /// notice on stderr) and kept for the later checks and the run. Throws dak::Error for a missing,
  /// unreadable or malformed file; plan_file must be non-empty.
  const Plan& plan() const;

 private:
  mutable std::shared_ptr<const Plan> plan_;  // plan_file's contents once read
  mutable std::string plan_read_from_;        // the plan_file they were read from
};

/// --plan without --offload: the run takes the mode the plan was made for (`dak plan --offload
/// direct` makes a plan for --offload direct; the default mode, auto, would refuse it), with a notice
/// on stderr. Nothing happens with --offload given (check_offload_args then refuses another mode),
/// without --plan, or for a plan that records no mode. `notice` false: no notice (a --device cpu
/// run, which refuses offload flags: it is not run in that mode). Throws dak::Error for an unreadable
/// plan.
void adopt_plan_mode(OffloadArgs& a, bool notice = true);

/// --offload-ratio's one parser, for every command that takes it (dak plan too: the session-25 second trial
/// found "0.3 " accepted by generate and refused by plan, and different words for "abc"): the
/// validator checks the syntax of a comma list of fractions (OffloadArgs::ratios), and
/// parse_offload_ratio reads one. Throws as OffloadArgs::ratios(false).
CLI::Validator offload_ratio_syntax();
double parse_offload_ratio(const std::string& text);

/// Adds the flags above to `c`, writing into `a` (which must outlive the parse).
void add_offload_options(CLI::App* c, OffloadArgs* a);

/// --cpu-offload-gb for `c`, writing GiB into `*gib` (dak generate / bench through
/// add_offload_options, and dak plan): a plain number (a unit is refused at parsing, exit 2); its
/// range is check_cpu_offload_gib's, after the whole line has parsed.
CLI::Option* add_cpu_offload_option(CLI::App* c, double* gib);
/// Throws dak::Error unless 0 <= gib <= 1e6 (not NaN).
void check_cpu_offload_gib(double gib);
/// Throws dak::Error when both --gpu-memory (an HBM budget) and --cpu-offload-gb (a host amount)
/// were given: each fixes the split between HBM and host memory.
void check_budget_or_host_amount(bool gpu_memory, bool cpu_offload_gb);
/// "dak: notice: --offload-ratio overrides --cpu-offload-gb GIB" on stderr, once per process.
void notice_ratio_overrides_cpu_offload(double gib);
/// --cpu-offload-gb's amount (GiB of weights + KV cache in pinned host memory, as vLLM's flag) as the
/// forced offload ratio of `req` (host bytes / movable bytes of `config` at req's shape) under the
/// HBM `budget` (bytes; `budget_source` names it in messages), which it also sets. Throws dak::Error,
/// located at --cpu-offload-gb with the limit in GiB as the fix, for more than can move (the tighter of
/// that and the profile's pinnable bytes as the limit), more than `profile` can pin, or an amount that
/// leaves more in HBM than the budget holds.
void apply_cpu_offload_gib(double gib, const ModelConfig& config, const HardwareProfile& profile, int64_t budget,
                           const std::string& budget_source, PlanRequest& req);

/// The plan a GPU run applies, or nullopt for --offload none (and for auto when everything fits).
/// The caller has checked the flags with check_offload_args (this does not repeat it, nor its file
/// reads). `batch`, `prompt_len` and `gen_len`
/// are the run's shape (prompt_len the longest prompt; the KV cache holds prompt_len + gen_len
/// positions per sequence); `free_hbm_bytes` the HBM free on the device now (caps the default
/// budget; 0 when unknown). Throws dak::Error for conflicting flags (--gpu-memory with
/// --cpu-offload-gb, a budget with --plan), a plan made for another shape or model, or a budget
/// the planner refuses.
/// Checks the flags without a GPU or a model: --offload-ratio items (one unless `ratio_list`), sizes,
/// conflicts (two of --gpu-memory / --cpu-offload-gb / --offload-ratio / --plan; --offload none with
/// any of them; --plan with --profile or --allocator), and that the --plan and --profile files
/// load. Throws dak::Error naming the flag.
void check_offload_args(const OffloadArgs& a, bool ratio_list);

/// Refuses a --plan file made for another --offload mode than the run's, for another model than
/// `config` (check_plan_model: the layer count, operator shapes and tensor names it records), or for
/// another batch or a shorter context than `shape`, on any device and before an engine is built;
/// `model` names the loaded model as `dak plan --model` takes it and `shape` is the run's own batch
/// and lengths (the fix suggests a plan of them). Nothing without --plan. Throws dak::Error naming
/// the plan file.
void check_plan_file_model(const OffloadArgs& a, const ModelConfig& config, const std::string& model,
                           const RequestedShape& shape);

/// Plans, without a GPU, what the flags alone fix, as plan_offload will on the GPU: a --plan file is
/// checked against this shape (a plan fixes one batch and context), and with --gpu-memory (the HBM
/// budget is then the user's, not the GPU's free memory) the plan of forced ratio `ratio` (nullopt:
/// none) at this shape is made. So a budget or ratio that `dak plan` refuses for the same arguments
/// (e.g. --offload-ratio 0.3 leaving more in HBM than --gpu-memory holds) is refused in its words
/// before a GPU is looked for. Without --gpu-memory, a forced ratio or --cpu-offload-gb is planned
/// at the profile's default budget, the most a GPU run gets, so its refusals (e.g. more host bytes
/// than the pinnable memory) hold on any GPU. Nothing for --offload none, nor with none of --plan,
/// --gpu-memory, a ratio or --cpu-offload-gb. Throws dak::Error.
void check_plan_without_gpu(const OffloadArgs& a, std::optional<double> ratio, const ModelConfig& config,
                            const std::string& model_name, const RequestedShape& shape);

/// Whether `dak generate --offload auto` leaves a fresh plan unapplied (all in HBM): nothing was
/// forced to the host (no --offload-ratio, `ratio_forced` false, and the budget holds everything),
/// so any host rows in it were placed only for the cost model's gain from the link beside HBM,
/// which is not measured on the engine. `mode`: the --offload value.
bool auto_keeps_all_in_hbm(const std::string& mode, bool ratio_forced, const Plan& plan);

/// `ratio`: the forced global ratio of this run (one of a.ratios()), nullopt for none. A --plan's
/// staged operators are applied as staged only under --offload auto (the other modes apply one path).
/// --cpu-offload-gb X (vLLM's host amount) plans X GiB on the host as a forced share of the movable
/// weight + KV bytes under the GPU's own HBM budget (not an HBM budget of total - X, which the
/// staging ring would then have to share).
std::optional<Plan> plan_offload(const OffloadArgs& a, std::optional<double> ratio, const ModelConfig& config,
                                 const std::string& model_name, const RequestedShape& shape,
                                 int64_t free_hbm_bytes);

/// make_plan(config, profile, req), with "a size without a unit counts bytes: write e.g. 20GiB" put
/// before the fix of a refusal naming --gpu-memory when `gpu_memory` (that flag's text) has no unit:
/// the budget refused was then likely meant in GiB. With a unit, or for 0 (no budget in any unit),
/// the planner's fix stands alone.
Plan make_plan_for_gpu_memory(const ModelConfig& config, const HardwareProfile& profile, const PlanRequest& req,
                              const std::string& gpu_memory);

/// One line for stderr: where the plan puts the bytes ("offload: 4.1 GiB of weights and 0.3 GiB of
/// KV cache in host memory (30 %), predicted TPOT 74.4 ms"). The first description of a process
/// with host bytes planned with the default profile adds a second line, "dak: notice: ...", where
/// gpu_default_profile() chose that profile by the measured host link (gpu_default_profile_note()).
std::string describe_plan(const Plan& plan);

}  // namespace dak::cli
