// Plan: the planner's output, a plain value that can be printed, saved as JSON and read back
// (FlexGen's Policy, FlashInfer's plan/run split). The engine applies it: each operator's first
// `host_rows` split rows (weight rows in the order of `tensors`, or whole sequences of the KV
// cache) live in pinned host memory and are read through `path`.
//
// JSON ("format": "dak.plan", "version": 1), all sizes in bytes, times in seconds:
// {
//   "format": "dak.plan", "version": 1,
//   "predicted_tpot_s": 0.0123,           // predicted time per output token (decode) or per prefill step
//   "notes": ["..."],                     // the planner's remarks for the user ([] for none; optional)
//   "inputs":   {model, arch, phase, batch, prompt_len, gen_len, context_len, max_context,
//                gpu_memory_bytes, gpu_memory_default, offload_ratio (number or null),
//                [cpu_offload_bytes (number or null),] allocator,
//                allow_staged, [offload_mode,] tile_rows, tile_n, staging_chunk_bytes, staging_ring_bytes,
//                profile_name, profile_version},
//   "capacity": {weight_bytes, splittable_weight_bytes, kv_bytes, workspace_bytes, total_bytes,
//                hbm_budget_bytes, required_host_bytes, global_ratio},
//   "totals":   {sum_op_time_s, overhead_s, link_floor_s, [prefetch_pipeline_s,] [zero_copy_host_bytes,] step_bytes, effective_bandwidth_gbps,
//                host_bytes, direct_host_bytes, staged_host_bytes, host_ratio, hbm_bytes,
//                staging_ring_bytes, pin_time_s},
//   "operators": [{name, role, layer, kind, m, n, k, batch, q_len, context, heads, kv_heads,
//                  head_dim, bytes, step_bytes, fixed_bytes, flops, split_rows, unit_rows,
//                  host_units, host_rows, host_fraction, host_bytes, data_path, host_ctas,
//                  stages_per_cta, cluster, predicted_time_s, compute_s, hbm_s, host_s,
//                  overhead_s, bound, tensors: [{name, rows}], tied_to}, ...]
// }
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/capacity.h"
#include "core/cost_model.h"
#include "core/op_graph.h"

namespace dak {

/// Slots of the HBM staging ring through which the GPU engine copies staged linears' host rows
/// (gpu_engine.cc; --offload prefetch, and auto's staged operators): each slot holds the largest
/// staged host part, and the copy of staged linear k waits for the GEMM of linear k - slots, so the
/// copy engine runs up to two linears ahead. Three, not two: with two the copy of the next linear
/// waited for the GEMM before the current one and the link idled ~70 us per Llama-2-7B layer at
/// batch 512 (docs/perf-notes.md, session 21). The planner counts kStagingRingSlots x the largest
/// staged host part of HBM and replays the copy pipeline with them (planner.cc).
inline constexpr int kStagingRingSlots = 3;

enum class AllocatorKind : uint8_t { kGreedy, kUniform, kBruteForce };

/// "greedy", "uniform", "brute_force".
std::string allocator_name(AllocatorKind a);
AllocatorKind parse_allocator(const std::string& s, const std::string& where);

/// One operator's row of the plan.
struct PlanOp {
  std::string name, role;
  int64_t layer = -1;
  OpKind kind = OpKind::kNorm;
  int64_t m = 0, n = 0, k = 0, batch = 0, q_len = 0, context = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int64_t bytes = 0;      // resident bytes of the splittable tensor (weights, or KV at max context)
  double step_bytes = 0;  // bytes of it read per step
  int64_t fixed_bytes = 0;
  double flops = 0;
  int64_t split_rows = 0, unit_rows = 0, host_units = 0, host_rows = 0;
  double host_fraction = 0;  // host_rows / split_rows
  int64_t host_bytes = 0;    // resident bytes on the host
  DataPath path = DataPath::kNone;
  int64_t host_ctas = 0, stages_per_cta = 0, cluster = 1;
  double predicted_time_s = 0, compute_s = 0, hbm_s = 0, host_s = 0, overhead_s = 0;
  Bound bound = Bound::kHbm;
  std::vector<TensorPart> tensors;
  std::string tied_to;
  bool operator==(const PlanOp&) const = default;
};

/// The one path an --offload mode applies to every operator (PlanRequest::single_path): "direct" ->
/// kDirect, "prefetch" -> kStaged (linears; KV read in place), "zero-copy" -> kZeroCopy; nullopt for
/// "auto" (the plan's choice per operator), "none" and any other string.
std::optional<DataPath> single_path_of_mode(const std::string& mode);
/// Inverse of single_path_of_mode for the plan's offload_mode: nullopt -> "auto", kDirect ->
/// "direct", kStaged -> "prefetch", kZeroCopy -> "zero-copy" (kNone -> "auto").
std::string offload_mode_name(std::optional<DataPath> single_path);

struct PlanInputs {
  std::string model;  // config name (file stem or shipped name)
  std::string arch;
  Phase phase = Phase::kDecode;
  int64_t batch = 0, prompt_len = 0, gen_len = 0;
  int64_t context_len = 0;  // positions attended per step (decode: mean over the generation)
  int64_t max_context = 0;  // prompt + gen: KV capacity per sequence
  int64_t gpu_memory_bytes = 0;
  bool gpu_memory_default = false;      // true if the budget came from the profile
  std::optional<double> offload_ratio;  // forced global ratio (overrides the budget), if any
  /// The --cpu-offload-gb amount (bytes on the host) that offload_ratio was derived from; nullopt
  /// where the ratio was given as a ratio, or none was forced (optional in the JSON, since session 49).
  std::optional<int64_t> cpu_offload_bytes;
  AllocatorKind allocator = AllocatorKind::kGreedy;
  bool allow_staged = true;
  /// The engine mode the plan is priced for (dak's --offload): "auto" (each operator's own path),
  /// or one path for every operator: "direct", "prefetch", "zero-copy". Empty in plan files written
  /// before session 11 (optional in the JSON).
  std::string offload_mode = "auto";
  int64_t tile_rows = 0, tile_n = 0;
  /// The copy-engine chunk and chunk ring (bytes) the cost model prices one staged operator's copy
  /// with (its first chunk is not overlapped). Not the engine's staging ring: PlanTotals::
  /// staging_ring_bytes is that (the trial of session 27 read the two as one).
  int64_t staging_chunk_bytes = 0, staging_ring_bytes = 0;
  std::string profile_name;
  /// The profile file the plan was made with (absolute path as given to --profile), "" for a
  /// compiled-in profile or a plan file from before session 33 (optional in the JSON): the fixes
  /// that suggest a new plan pass it again.
  std::string profile_file;
  int64_t profile_version = 0;
  bool operator==(const PlanInputs&) const = default;
};

struct PlanTotals {
  double sum_op_time_s = 0;             // Σ T_i (overheads included)
  double overhead_s = 0;                // Σ launch overheads and ring fills
  double link_floor_s = 0;              // host bytes / shared-link rate when both paths are used; zero-copy
                                        //   plans: zero-copy host bytes / B_h; else 0 (the operators' own
                                        //   host terms bound a one-path plan). A floor of sum_op_time_s
                                        //   only: with a copy pipeline (prefetch_pipeline_s > 0) the copies
                                        //   run above the shared rate, so the prediction may be below it
  double prefetch_pipeline_s = 0;       // plans with staged linears (auto, prefetch): the copy pipeline's length, else 0
                                        //   (optional in the JSON: absent = 0)
  double step_bytes = 0;                // weight + KV bytes read per step (EB's numerator)
  double effective_bandwidth_gbps = 0;  // step_bytes / predicted_tpot_s
  int64_t host_bytes = 0, direct_host_bytes = 0, staged_host_bytes = 0;
  int64_t zero_copy_host_bytes = 0;  // read in place by the ordinary kernels (optional in the JSON: absent = 0)
  double host_ratio = 0;           // host_bytes / (splittable weights + KV)
  int64_t hbm_bytes = 0;           // M − host bytes + staging ring
  int64_t staging_ring_bytes = 0;  // HBM ring of the staged path (0 if no operator is staged)
  double pin_time_s = 0;           // host bytes / the profile's pin rate
  bool operator==(const PlanTotals&) const = default;
};

struct Plan {
  static constexpr int kVersion = 1;
  static constexpr const char* kFormat = "dak.plan";

  double predicted_tpot_s = 0;
  PlanInputs inputs;
  Capacity capacity;
  PlanTotals totals;
  std::vector<PlanOp> ops;
  /// The planner's remarks for the user, one sentence each (e.g. a placement predicted faster that it
  /// did not take, and why); "notes" in the JSON where there are any (since session 49).
  std::vector<std::string> notes;
  bool operator==(const Plan&) const = default;

  nlohmann::json to_json() const;
  /// Parses a plan document; throws dak::Error naming `where` and the field for anything missing,
  /// mistyped, of another format or version.
  static Plan from_json(const nlohmann::json& j, const std::string& where);
  /// Reads a plan file (`dak plan --output json > plan.json`). Throws dak::Error. `unknown_fields`
  /// (optional) receives the dotted paths of the file's members that no planner writes (a
  /// misspelt or extra field of a hand-edited plan: ignored, for the CLI's notice).
  static Plan load(const std::string& path, std::vector<std::string>* unknown_fields = nullptr);
};

/// The shape a run asks a plan for (what `dak generate` / `dak bench` were given): the fix of a plan
/// it cannot use suggests a plan of this shape, not the refused plan's own.
struct RequestedShape {
  int64_t batch = 1;       // sequences (dak generate: its prompts; dak bench: the first --batch)
  int64_t prompt_len = 1;  // the longest prompt, tokens
  int64_t gen_len = 2;     // new tokens per sequence
  ShapeTerms terms;        // how the asking command names these, in the planner's refusals
};

/// The command that makes a plan file for `model` (as `dak plan --model` takes it) at `shape`, in
/// `offload_mode` ("" or auto: none added), written to `output_file`: "dak plan --model M --batch B
/// --prompt-len P --gen-len G [--offload MODE] --output json > FILE". A gen_len below 2 is suggested
/// as 2 (dak plan's decode phase needs a decode step; the plan's context then still holds the run).
/// `flags` (e.g. planned_budget_flags of a plan) go before --output.
std::string plan_command_for(const std::string& model, const RequestedShape& shape, const std::string& offload_mode,
                             const std::string& output_file, const std::string& flags = "");

/// The --gpu-memory (unless the profile's default), --offload-ratio (or --cpu-offload-gb, where the
/// plan records that amount under the profile's default budget) and --profile a plan was made
/// with, as dak plan flags with a leading space (" --gpu-memory 40GiB --offload-ratio 0.3 --profile
/// h100-default"; "" for none): the budget is written exactly, in the largest binary unit that
/// divides it; the profile as its file (profile_file, shell-quoted) or compiled-in name, or as
/// '<file of profile NAME>' where an older plan records only a file's profile name.
std::string planned_budget_flags(const PlanInputs& inputs);

/// planned_budget_flags for a new plan of `config` at `shape`: where the plan recorded a
/// --cpu-offload-gb amount that is more than `config` can move to the host at that shape (its
/// splittable weights and KV cache), the plan's ratio instead (rounded up to 4 significant digits,
/// at most 1), so that the suggested command runs (trial of session 49: a batch-8 plan's 0.26 GiB
/// was suggested for a batch-1 run, which can move 0.25).
std::string planned_budget_flags_for(const PlanInputs& inputs, const ModelConfig& config,
                                     const RequestedShape& shape);

/// A file name for a new plan that a fix suggests in place of the refused `plan_file` (the user's,
/// which following the fix must not overwrite): in its folder, its stem, '-' and the name of `model`
/// (a file's stem, or the folder of a config.json; characters other than letters, digits, '.', '-'
/// and '_' as '_'), then ".json" ("plans/plan.json" and "models/smol.gguf": "plans/plan-smol.json");
/// "-2", "-3", ... added while that names an existing path. A `plan_file` that is a folder gives
/// "<folder>/plan-<model>.json", one that is a device, FIFO or socket "plan-<model>.json" in the
/// working directory.
std::string fresh_plan_file_name(const std::string& plan_file, const std::string& model);

/// Refuses `plan` for a model it was not made for. A plan names its model only by a config's file
/// stem or shipped name (a checkpoint of the same model has another), so this compares what the
/// plan records of the model's shapes: it rebuilds the operators of `config` at the plan's step
/// shape and checks the architecture, the layer count, and per operator its name and kind, a
/// weight's rows, width and tensor names, an attention's heads, kv heads and head_dim. Throws
/// dak::Error (where = `where`, the plan file) saying which model the plan was made for and which
/// is loaded (`model`, as the user gave it), the first difference, and how to make a plan for this
/// model at the run's own `shape` (plan_command_for), written to fresh_plan_file_name(`where`, `model`).
void check_plan_model(const Plan& plan, const ModelConfig& config, const std::string& model, const std::string& where,
                      const RequestedShape& shape);

/// Refuses a `plan` (already matched to `config` by check_plan_model) whose derived fields the planner
/// could not have written for the plan's own inputs: per operator its layer, role, m / n / k, batch,
/// q_len, context, bytes, step_bytes, flops, fixed_bytes, unit_rows, and host_rows / host_bytes /
/// host_fraction against its host_units; the capacity (compute_capacity at the plan's budget); the
/// totals that follow from the operators (host bytes in all and per data path, host_ratio,
/// staging_ring_bytes, hbm_bytes, step_bytes). Predictions are not checked. Throws dak::Error (where =
/// `where`) naming operators[i] (name), `capacity` or `totals` and the field with the planner's value,
/// and the command that makes a new plan for the run's `shape`.
void check_plan_fields(const Plan& plan, const ModelConfig& config, const std::string& model, const std::string& where,
                       const RequestedShape& shape);

}  // namespace dak
