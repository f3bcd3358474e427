#include "core/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/capacity.h"
#include "core/config_locator.h"
#include "core/error.h"
#include "core/hardware_profile.h"
#include "core/json_file.h"
#include "core/op_graph.h"

namespace dak {

namespace {

using nlohmann::json;

// The fix of a refused field; Plan::load replaces it with the command that remakes the file.
constexpr const char* kRegenerateFix = "regenerate the plan with `dak plan --output json`";

// Typed access to the fields of one JSON object, with errors naming the field.
class Reader {
 public:
  Reader(const json& j, std::string where) : j_(j), where_(std::move(where)) {
    if (!j_.is_object())
      fail("plan data is not a JSON object", where_, kRegenerateFix);
  }
  const json& at(const std::string& key) const {
    if (!j_.contains(key)) bad(key, "is missing");
    return j_.at(key);
  }
  int64_t i64(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_number_integer()) bad(key, "must be an integer");
    return v.get<int64_t>();
  }
  double num(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_number()) bad(key, "must be a number");
    return v.get<double>();
  }
  bool boolean(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_boolean()) bad(key, "must be true or false");
    return v.get<bool>();
  }
  std::string str(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_string()) bad(key, "must be a string");
    return v.get<std::string>();
  }
  const std::string& where() const { return where_; }
  [[noreturn]] void bad(const std::string& key, const std::string& what) const {
    fail(fmt::format("plan field '{}' {}", key, what), where_,
         kRegenerateFix);
  }

 private:
  const json& j_;
  std::string where_;
};

json op_to_json(const PlanOp& o) {
  json tensors = json::array();
  for (const TensorPart& t : o.tensors) tensors.push_back({{"name", t.name}, {"rows", t.rows}});
  return {{"name", o.name},
          {"role", o.role},
          {"layer", o.layer},
          {"kind", op_kind_name(o.kind)},
          {"m", o.m},
          {"n", o.n},
          {"k", o.k},
          {"batch", o.batch},
          {"q_len", o.q_len},
          {"context", o.context},
          {"heads", o.heads},
          {"kv_heads", o.kv_heads},
          {"head_dim", o.head_dim},
          {"bytes", o.bytes},
          {"step_bytes", o.step_bytes},
          {"fixed_bytes", o.fixed_bytes},
          {"flops", o.flops},
          {"split_rows", o.split_rows},
          {"unit_rows", o.unit_rows},
          {"host_units", o.host_units},
          {"host_rows", o.host_rows},
          {"host_fraction", o.host_fraction},
          {"host_bytes", o.host_bytes},
          {"data_path", data_path_name(o.path)},
          {"host_ctas", o.host_ctas},
          {"stages_per_cta", o.stages_per_cta},
          {"cluster", o.cluster},
          {"predicted_time_s", o.predicted_time_s},
          {"compute_s", o.compute_s},
          {"hbm_s", o.hbm_s},
          {"host_s", o.host_s},
          {"overhead_s", o.overhead_s},
          {"bound", bound_name(o.bound)},
          {"tensors", tensors},
          {"tied_to", o.tied_to}};
}

PlanOp op_from_json(const json& j, const std::string& where) {
  PlanOp o;
  o.name = Reader(j, where).str("name");
  // The operator's name in every later refusal: "plan.json: operators[2] (layers.0.qkv_proj)".
  Reader r(j, where + " (" + o.name + ")");
  o.role = r.str("role");
  o.layer = r.i64("layer");
  o.kind = parse_op_kind(r.str("kind"), where);
  o.m = r.i64("m"), o.n = r.i64("n"), o.k = r.i64("k");
  o.batch = r.i64("batch"), o.q_len = r.i64("q_len"), o.context = r.i64("context");
  o.heads = r.i64("heads"), o.kv_heads = r.i64("kv_heads"), o.head_dim = r.i64("head_dim");
  o.bytes = r.i64("bytes");
  o.step_bytes = r.num("step_bytes");
  o.fixed_bytes = r.i64("fixed_bytes");
  o.flops = r.num("flops");
  o.split_rows = r.i64("split_rows"), o.unit_rows = r.i64("unit_rows");
  o.host_units = r.i64("host_units"), o.host_rows = r.i64("host_rows");
  o.host_fraction = r.num("host_fraction");
  o.host_bytes = r.i64("host_bytes");
  o.path = parse_data_path(r.str("data_path"), where);
  o.host_ctas = r.i64("host_ctas"), o.stages_per_cta = r.i64("stages_per_cta"), o.cluster = r.i64("cluster");
  o.predicted_time_s = r.num("predicted_time_s");
  o.compute_s = r.num("compute_s"), o.hbm_s = r.num("hbm_s"), o.host_s = r.num("host_s");
  o.overhead_s = r.num("overhead_s");
  o.bound = parse_bound(r.str("bound"), where);
  const json& tensors = r.at("tensors");
  if (!tensors.is_array()) r.bad("tensors", "must be an array");
  for (size_t i = 0; i < tensors.size(); ++i) {
    Reader t(tensors[i], fmt::format("{}.tensors[{}]", where, i));
    o.tensors.push_back({t.str("name"), t.i64("rows")});
  }
  o.tied_to = r.str("tied_to");
  // Each field named with its value and bound (trial of session 49: a negative host_bytes was
  // reported as "'host_rows' is outside [0, split_rows] or host_bytes outside [0, bytes]").
  if (o.host_rows < 0 || o.host_rows > o.split_rows)
    r.bad("host_rows", fmt::format("{} is outside [0, split_rows] ([0, {}])", o.host_rows, o.split_rows));
  if (o.host_bytes < 0 || o.host_bytes > o.bytes)
    r.bad("host_bytes", fmt::format("{} is outside [0, bytes] ([0, {}])", o.host_bytes, o.bytes));
  // What the planner writes and the engine reads (session-23 trial: unit_rows 0, cluster 3, host_rows
  // 1 with no host bytes were accepted).
  if (o.unit_rows < 1) r.bad("unit_rows", "must be at least 1");
  if ((o.host_rows > 0) != (o.host_bytes > 0))
    r.bad("host_bytes", fmt::format("{} with {} host rows (both zero or both positive)", o.host_bytes, o.host_rows));
  if (o.cluster != 1 && o.cluster != 2 && o.cluster != 4) r.bad("cluster", "must be 1, 2 or 4");
  if (o.host_ctas < 0 || o.host_ctas > 1024 || o.stages_per_cta < 0 || o.stages_per_cta > 1024)
    r.bad("host_ctas", "and stages_per_cta must be in [0, 1024]");
  // An edited plan must stay self-consistent (the session-8 trial passed host_fraction 1.5 and
  // negative unit counts through).
  if (!(o.host_fraction >= 0.0 && o.host_fraction <= 1.0)) r.bad("host_fraction", "is outside [0, 1]");
  if (o.split_rows < 0 || o.unit_rows < 0 || o.host_units < 0 ||
      (o.unit_rows > 0 && o.host_units > o.split_rows / o.unit_rows + (o.split_rows % o.unit_rows != 0)))
    r.bad("host_units", "is negative or more than the operator's units (split_rows / unit_rows)");
  for (const auto& t : o.tensors) {
    if (t.rows < 0 || t.rows > o.split_rows) r.bad("tensors", "has a tensor with rows outside [0, split_rows]");
  }
  return o;
}

}  // namespace

std::string allocator_name(AllocatorKind a) {
  switch (a) {
    case AllocatorKind::kGreedy:
      return "greedy";
    case AllocatorKind::kUniform:
      return "uniform";
    case AllocatorKind::kBruteForce:
      return "brute_force";
  }
  return "?";
}

AllocatorKind parse_allocator(const std::string& s, const std::string& where) {
  for (AllocatorKind a : {AllocatorKind::kGreedy, AllocatorKind::kUniform, AllocatorKind::kBruteForce})
    if (allocator_name(a) == s) return a;
  fail(fmt::format("unknown allocator '{}'", s), where, "use greedy or uniform (brute_force for tiny models)");
}

std::optional<DataPath> single_path_of_mode(const std::string& mode) {
  if (mode == "direct") return DataPath::kDirect;
  if (mode == "prefetch") return DataPath::kStaged;
  if (mode == "zero-copy") return DataPath::kZeroCopy;
  return std::nullopt;
}

std::string offload_mode_name(std::optional<DataPath> single_path) {
  if (!single_path) return "auto";
  switch (*single_path) {
    case DataPath::kDirect:
      return "direct";
    case DataPath::kStaged:
      return "prefetch";
    case DataPath::kZeroCopy:
      return "zero-copy";
    case DataPath::kNone:
      break;
  }
  return "auto";
}

json Plan::to_json() const {
  const PlanInputs& in = inputs;
  json inputs_j = {{"model", in.model},
                   {"arch", in.arch},
                   {"phase", phase_name(in.phase)},
                   {"batch", in.batch},
                   {"prompt_len", in.prompt_len},
                   {"gen_len", in.gen_len},
                   {"context_len", in.context_len},
                   {"max_context", in.max_context},
                   {"gpu_memory_bytes", in.gpu_memory_bytes},
                   {"gpu_memory_default", in.gpu_memory_default},
                   {"offload_ratio", in.offload_ratio ? json(*in.offload_ratio) : json(nullptr)},
                   {"cpu_offload_bytes", in.cpu_offload_bytes ? json(*in.cpu_offload_bytes) : json(nullptr)},
                   {"allocator", allocator_name(in.allocator)},
                   {"allow_staged", in.allow_staged},
                   {"offload_mode", in.offload_mode},
                   {"tile_rows", in.tile_rows},
                   {"tile_n", in.tile_n},
                   {"staging_chunk_bytes", in.staging_chunk_bytes},
                   {"staging_ring_bytes", in.staging_ring_bytes},
                   {"profile_name", in.profile_name},
                   {"profile_file", in.profile_file},
                   {"profile_version", in.profile_version}};
  const Capacity& c = capacity;
  json cap_j = {{"weight_bytes", c.weight_bytes},
                {"splittable_weight_bytes", c.splittable_weight_bytes},
                {"kv_bytes", c.kv_bytes},
                {"workspace_bytes", c.workspace_bytes},
                {"total_bytes", c.total_bytes},
                {"hbm_budget_bytes", c.hbm_budget_bytes},
                {"required_host_bytes", c.required_host_bytes},
                {"global_ratio", c.global_ratio}};
  const PlanTotals& t = totals;
  json tot_j = {{"sum_op_time_s", t.sum_op_time_s},
                {"overhead_s", t.overhead_s},
                {"link_floor_s", t.link_floor_s},
                {"step_bytes", t.step_bytes},
                {"effective_bandwidth_gbps", t.effective_bandwidth_gbps},
                {"host_bytes", t.host_bytes},
                {"direct_host_bytes", t.direct_host_bytes},
                {"staged_host_bytes", t.staged_host_bytes},
                {"host_ratio", t.host_ratio},
                {"hbm_bytes", t.hbm_bytes},
                {"staging_ring_bytes", t.staging_ring_bytes},
                {"pin_time_s", t.pin_time_s}};
  if (t.prefetch_pipeline_s > 0) tot_j["prefetch_pipeline_s"] = t.prefetch_pipeline_s;
  if (t.zero_copy_host_bytes > 0) tot_j["zero_copy_host_bytes"] = t.zero_copy_host_bytes;
  json ops_j = json::array();
  for (const PlanOp& o : ops) ops_j.push_back(op_to_json(o));
  json out = {{"format", kFormat},  {"version", kVersion}, {"predicted_tpot_s", predicted_tpot_s},
              {"inputs", inputs_j}, {"capacity", cap_j},   {"totals", tot_j},
              {"operators", ops_j}};
  // The key is predicted_tpot_s in both phases (from_json reads it); a prefill plan also names its
  // prediction by what it is: the prefill time of batch x prompt tokens (TTFT). Written here, so
  // that Plan::load, which knows the fields to_json writes, knows it too (a trial saw it called unknown).
  if (inputs.phase == Phase::kPrefill) out["predicted_prefill_s"] = predicted_tpot_s;
  out["notes"] = notes;  // [] where the planner has none
  return out;
}

Plan Plan::from_json(const json& j, const std::string& where) {
  // The table `dak plan --sweep-ratios --output json` prints (an array of {"ratio", ...}) is not a plan
  // (the trial of session 27 read "plan data is not a JSON object").
  if (j.is_array() && !j.empty() && j.front().is_object() && j.front().contains("ratio")) {
    fail("this is the ratio table of `dak plan --sweep-ratios`, not a plan", where,
         "make the plan of one ratio: dak plan --model MODEL ... --offload-ratio R --output json > plan.json");
  }
  Reader r(j, where);
  check_dak_file_kind(j, kFormat, where);  // a hardware profile given to --plan
  if (r.str("format") != kFormat) r.bad("format", fmt::format("must be \"{}\"", kFormat));
  if (r.i64("version") != kVersion) r.bad("version", fmt::format("must be {} for this dak", kVersion));
  Plan p;
  p.predicted_tpot_s = r.num("predicted_tpot_s");
  if (j.contains("notes")) {
    const json& notes = j.at("notes");
    if (!notes.is_array() || !std::all_of(notes.begin(), notes.end(), [](const json& n) { return n.is_string(); }))
      r.bad("notes", "must be a list of strings");
    for (const json& n : notes) p.notes.push_back(n.get<std::string>());
  }

  Reader in(r.at("inputs"), where + ": inputs");
  PlanInputs& pi = p.inputs;
  pi.model = in.str("model");
  pi.arch = in.str("arch");
  pi.phase = parse_phase(in.str("phase"), in.where());
  pi.batch = in.i64("batch"), pi.prompt_len = in.i64("prompt_len"), pi.gen_len = in.i64("gen_len");
  // The shape a planner accepts (build_op_graph): a file's own fault is named here, not later as a
  // "step shape" the user did not give (session-23 trial: batch 0 in a plan read as --batch's).
  if (pi.batch < 1 || pi.batch > kMaxPlanBatch) in.bad("batch", fmt::format("must be in [1, {}]", kMaxPlanBatch));
  const std::string tokens = fmt::format("must be in [1, {}]", kMaxPlanTokens);
  if (pi.prompt_len < 1 || pi.prompt_len > kMaxPlanTokens) in.bad("prompt_len", tokens);
  if (pi.gen_len < 1 || pi.gen_len > kMaxPlanTokens) in.bad("gen_len", tokens);
  pi.context_len = in.i64("context_len"), pi.max_context = in.i64("max_context");
  // The KV cache the engine sizes from max_context: what the planner writes, prompt + gen positions.
  if (pi.max_context != pi.prompt_len + pi.gen_len)
    in.bad("max_context", fmt::format("must be prompt_len + gen_len ({})", pi.prompt_len + pi.gen_len));
  if (pi.context_len < 1 || pi.context_len > pi.max_context)
    in.bad("context_len", fmt::format("must be in [1, max_context] ([1, {}])", pi.max_context));
  pi.gpu_memory_bytes = in.i64("gpu_memory_bytes");
  if (pi.gpu_memory_bytes < 1) in.bad("gpu_memory_bytes", "must be a positive number of bytes");
  pi.gpu_memory_default = in.boolean("gpu_memory_default");
  if (!in.at("offload_ratio").is_null()) {
    pi.offload_ratio = in.num("offload_ratio");
    // The --offload-ratio the plan was made with (reported, and redone by `dak plan` from a file):
    // a fraction, as the flag takes (session-35 trial: 7 was accepted).
    if (!(*pi.offload_ratio >= 0 && *pi.offload_ratio <= 1)) in.bad("offload_ratio", "must be a fraction in [0, 1] or null");
  }
  // Since session 49: the --cpu-offload-gb amount the ratio came from (absent or null: none).
  if (r.at("inputs").contains("cpu_offload_bytes") && !in.at("cpu_offload_bytes").is_null()) {
    pi.cpu_offload_bytes = in.i64("cpu_offload_bytes");
    if (*pi.cpu_offload_bytes < 1) in.bad("cpu_offload_bytes", "must be a positive number of bytes or null");
    if (!pi.offload_ratio) in.bad("cpu_offload_bytes", "must be null where offload_ratio is null");
  }
  pi.allocator = parse_allocator(in.str("allocator"), in.where());
  pi.allow_staged = in.boolean("allow_staged");
  pi.offload_mode.clear();  // absent: a plan file from before session 11
  if (r.at("inputs").contains("offload_mode")) {
    pi.offload_mode = in.str("offload_mode");
    if (pi.offload_mode != "auto" && !single_path_of_mode(pi.offload_mode))
      in.bad("offload_mode", "must be auto, direct, prefetch or zero-copy");
  }
  pi.tile_rows = in.i64("tile_rows"), pi.tile_n = in.i64("tile_n");
  if (pi.tile_rows < 1 || pi.tile_rows > kMaxTileRows)
    in.bad("tile_rows", fmt::format("must be in [1, {}]", kMaxTileRows));
  if (pi.tile_n < 1) in.bad("tile_n", "must be positive");
  pi.staging_chunk_bytes = in.i64("staging_chunk_bytes"), pi.staging_ring_bytes = in.i64("staging_ring_bytes");
  pi.profile_name = in.str("profile_name");
  if (r.at("inputs").contains("profile_file")) pi.profile_file = in.str("profile_file");  // since session 33
  pi.profile_version = in.i64("profile_version");

  Reader c(r.at("capacity"), where + ": capacity");
  Capacity& pc = p.capacity;
  pc.weight_bytes = c.i64("weight_bytes"), pc.splittable_weight_bytes = c.i64("splittable_weight_bytes");
  pc.kv_bytes = c.i64("kv_bytes"), pc.workspace_bytes = c.i64("workspace_bytes");
  pc.total_bytes = c.i64("total_bytes"), pc.hbm_budget_bytes = c.i64("hbm_budget_bytes");
  pc.required_host_bytes = c.i64("required_host_bytes");
  pc.global_ratio = c.num("global_ratio");
  // Byte counts a planner can produce: none negative, a positive budget (compute_capacity's), the
  // parts within the total and the ratio a fraction.
  for (const auto& [key, v] : {std::pair<const char*, int64_t>{"weight_bytes", pc.weight_bytes},
                               {"splittable_weight_bytes", pc.splittable_weight_bytes},
                               {"kv_bytes", pc.kv_bytes},
                               {"workspace_bytes", pc.workspace_bytes},
                               {"total_bytes", pc.total_bytes},
                               {"required_host_bytes", pc.required_host_bytes}}) {
    if (v < 0) c.bad(key, "must not be negative");
  }
  if (pc.hbm_budget_bytes < 1) c.bad("hbm_budget_bytes", "must be a positive number of bytes");
  if (pc.splittable_weight_bytes > pc.weight_bytes) c.bad("splittable_weight_bytes", "must be at most weight_bytes");
  if (pc.required_host_bytes > pc.total_bytes) c.bad("required_host_bytes", "must be at most total_bytes");
  if (!(pc.global_ratio >= 0 && pc.global_ratio <= 1)) c.bad("global_ratio", "must be a fraction in [0, 1]");

  Reader t(r.at("totals"), where + ": totals");
  PlanTotals& pt = p.totals;
  pt.sum_op_time_s = t.num("sum_op_time_s"), pt.overhead_s = t.num("overhead_s");
  pt.link_floor_s = t.num("link_floor_s"), pt.step_bytes = t.num("step_bytes");
  if (r.at("totals").contains("prefetch_pipeline_s")) pt.prefetch_pipeline_s = t.num("prefetch_pipeline_s");
  pt.effective_bandwidth_gbps = t.num("effective_bandwidth_gbps");
  pt.host_bytes = t.i64("host_bytes"), pt.direct_host_bytes = t.i64("direct_host_bytes");
  pt.staged_host_bytes = t.i64("staged_host_bytes"), pt.host_ratio = t.num("host_ratio");
  pt.hbm_bytes = t.i64("hbm_bytes"), pt.staging_ring_bytes = t.i64("staging_ring_bytes");
  pt.pin_time_s = t.num("pin_time_s");
  if (r.at("totals").contains("zero_copy_host_bytes")) pt.zero_copy_host_bytes = t.i64("zero_copy_host_bytes");
  // Times a planner can produce: finite, the prediction positive (an edited or truncated file
  // would otherwise print absurd predictions next to measurements).
  constexpr double kMaxStepSeconds = 86400;  // a day per step: beyond it a number is a typo or a unit mistake
  if (!std::isfinite(p.predicted_tpot_s) || !(p.predicted_tpot_s > 0) || p.predicted_tpot_s > kMaxStepSeconds)
    r.bad("predicted_tpot_s", "must be a positive time in seconds (at most a day)");
  for (const auto& [key, v] : {std::pair<const char*, double>{"sum_op_time_s", pt.sum_op_time_s},
                               {"overhead_s", pt.overhead_s},
                               {"link_floor_s", pt.link_floor_s},
                               {"prefetch_pipeline_s", pt.prefetch_pipeline_s}}) {
    if (!std::isfinite(v) || v < 0 || v > kMaxStepSeconds) t.bad(key, "must be a time in seconds in [0, 86400]");
  }
  if (pt.host_bytes < 0) t.bad("host_bytes", "must not be negative");
  if (pt.zero_copy_host_bytes < 0 || pt.zero_copy_host_bytes > pt.host_bytes)
    t.bad("zero_copy_host_bytes", "must be in [0, host_bytes]");
  if (pt.zero_copy_host_bytes > 0 && pi.offload_mode != "zero-copy")
    t.bad("zero_copy_host_bytes", "must be 0 in a plan that is not for --offload zero-copy");
  for (const auto& [key, v] : {std::pair<const char*, double>{"pin_time_s", pt.pin_time_s},
                               {"step_bytes", pt.step_bytes},
                               {"effective_bandwidth_gbps", pt.effective_bandwidth_gbps}}) {
    if (!std::isfinite(v) || v < 0) t.bad(key, "must be a finite non-negative number");
  }

  const json& ops = r.at("operators");
  if (!ops.is_array()) r.bad("operators", "must be an array");
  for (size_t i = 0; i < ops.size(); ++i)
    p.ops.push_back(op_from_json(ops[i], fmt::format("{}: operators[{}]", where, i)));
  // Paths a planner gives: host bytes always have one; only linear weights are staged; a zero-copy
  // plan reads every host byte that way and no other plan does.
  const bool zero_copy_plan = pi.offload_mode == "zero-copy";
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const PlanOp& o = p.ops[i];
    const std::string at = fmt::format("{}: operators[{}] ({})", where, i, o.name);
    const std::string fix = kRegenerateFix;
    if (o.host_bytes > 0 && o.path == DataPath::kNone)
      fail(fmt::format("data_path 'none' with {} host bytes", o.host_bytes), at, fix);
    if (o.path == DataPath::kStaged && o.kind != OpKind::kLinear)
      fail(fmt::format("data_path 'staged' for an operator of kind {} (only linear weights are staged)", op_kind_name(o.kind)), at,
           fix);
    if (!std::isfinite(o.predicted_time_s) || o.predicted_time_s < 0 || o.predicted_time_s > kMaxStepSeconds)
      fail(fmt::format("predicted_time_s {} is not a time in [0, 86400] s", o.predicted_time_s), at, fix);
    if (o.host_bytes == 0) continue;
    // The one path of a single-path plan: zero_copy for zero-copy (plan files without a mode come
    // from before it existed), staged linears for prefetch, never staged for direct.
    const bool zero_copy_path = o.path == DataPath::kZeroCopy;
    if (zero_copy_plan != zero_copy_path && (!pi.offload_mode.empty() || zero_copy_path))
      fail(fmt::format("data_path '{}' in a plan for --offload {}", data_path_name(o.path),
                       pi.offload_mode.empty() ? std::string("(not recorded)") : pi.offload_mode),
           at, zero_copy_plan ? "a zero-copy plan reads every host byte as zero_copy; " + fix : fix);
    if (pi.offload_mode == "direct" && o.path == DataPath::kStaged)
      fail("data_path 'staged' in a plan for --offload direct", at, fix);
    if (!pi.allow_staged && o.path == DataPath::kStaged && (pi.offload_mode.empty() || pi.offload_mode == "auto"))
      fail("data_path 'staged' in a plan made with --no-staged (inputs.allow_staged false)", at, fix);
    if (pi.offload_mode == "prefetch" && o.kind == OpKind::kLinear && o.path != DataPath::kStaged)
      fail(fmt::format("data_path '{}' on a linear in a plan for --offload prefetch (every host linear is staged)",
                       data_path_name(o.path)),
           at, fix);
  }
  // What the planner writes and the engine reads without a check of its own (the session-25 second trial's
  // hand edits; docs/planner.md §6): the budget the capacity was computed for, what stays in HBM
  // within it, layers that the plan's attention operators count, and a direct-path host read's CTAs
  // and stages (at most the profile's SMEM ring depth where the profile is the compiled-in one).
  if (pi.gpu_memory_bytes != pc.hbm_budget_bytes)
    in.bad("gpu_memory_bytes", fmt::format("must equal capacity.hbm_budget_bytes ({}), the budget the plan was made for",
                                           pc.hbm_budget_bytes));
  if (pt.hbm_bytes < 0 || pt.hbm_bytes > pc.hbm_budget_bytes)
    t.bad("hbm_bytes", fmt::format("must be in [0, capacity.hbm_budget_bytes] ([0, {}])", pc.hbm_budget_bytes));
  const int64_t layers =
      std::count_if(p.ops.begin(), p.ops.end(), [](const PlanOp& o) { return o.kind == OpKind::kAttention; });
  const std::optional<HardwareProfile> compiled_in = HardwareProfile::builtin(pi.profile_name);
  const int64_t max_stages = compiled_in ? compiled_in->max_stages_per_cta : 1024;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const PlanOp& o = p.ops[i];
    Reader op(ops[i], fmt::format("{}: operators[{}] ({})", where, i, o.name));
    if (o.layer < -1 || o.layer >= layers)
      op.bad("layer", fmt::format("must be -1 (no layer) or in [0, {}] (the plan's {} attention operators)", layers - 1,
                                  layers));
    if (o.path == DataPath::kDirect && o.host_bytes > 0) {
      if (o.host_ctas < 1) op.bad("host_ctas", fmt::format("must be at least 1 on a direct-path operator with {} host "
                                                           "bytes (its reads need a CTA)", o.host_bytes));
      if (o.stages_per_cta < 1 || o.stages_per_cta > max_stages)
        op.bad("stages_per_cta", fmt::format("must be in [1, {}] on a direct-path operator with host bytes{}", max_stages,
                                             max_stages == 1024 ? std::string()
                                                                : " (the profile's " + pi.profile_name +
                                                                      " max_stages_per_cta)"));
    }
  }
  return p;
}

namespace {

/// The fix of a plan file that Plan::load refuses: the `dak plan` command that remakes it, for the
/// model, shape, mode and budget the file records, written next to it (fresh_plan_file_name, never
/// over it). What the file does not give usably (a model name dak cannot find from here, a batch or
/// length out of range) is left as a placeholder the fix names (the session-25 second trial was told
/// `dak plan --output json`, which cannot run: dak plan needs --model).
std::string regenerate_fix(const json* j, const std::string& path) {
  const json* in = j && j->is_object() && j->contains("inputs") && j->at("inputs").is_object() ? &j->at("inputs")
                                                                                              : nullptr;
  const auto integer = [&](const char* key, int64_t lo, int64_t hi) -> std::optional<int64_t> {
    if (!in || !in->contains(key) || !in->at(key).is_number_integer()) return std::nullopt;
    const int64_t v = in->at(key).get<int64_t>();
    return v >= lo && v <= hi ? std::optional<int64_t>(v) : std::nullopt;
  };
  std::string model;
  if (in && in->contains("model") && in->at("model").is_string()) {
    model = in->at("model").get<std::string>();
    try {
      if (!model.empty()) locate_model_config(model);
    } catch (const Error&) {
      model.clear();  // e.g. a model folder's name, written by a plan of `--model some/dir/name`
    }
  }
  const std::optional<int64_t> batch = integer("batch", 1, kMaxPlanBatch);
  const std::optional<int64_t> prompt = integer("prompt_len", 1, kMaxPlanTokens);
  const std::optional<int64_t> gen = integer("gen_len", 1, kMaxPlanTokens);
  std::string mode;
  if (in && in->contains("offload_mode") && in->at("offload_mode").is_string()) {
    mode = in->at("offload_mode").get<std::string>();
    if (mode != "auto" && !single_path_of_mode(mode)) mode.clear();
  }
  PlanInputs budget;
  budget.gpu_memory_default = !(in && in->contains("gpu_memory_default") && in->at("gpu_memory_default").is_boolean() &&
                                !in->at("gpu_memory_default").get<bool>());
  budget.gpu_memory_bytes = integer("gpu_memory_bytes", 1, INT64_MAX).value_or(0);
  if (in && in->contains("offload_ratio") && in->at("offload_ratio").is_number()) {
    const double r = in->at("offload_ratio").get<double>();
    if (r >= 0 && r <= 1) budget.offload_ratio = r;
  }
  if (budget.offload_ratio) budget.cpu_offload_bytes = integer("cpu_offload_bytes", 1, INT64_MAX);
  // The profile too, as the run's fixes give it (planned_budget_flags).
  for (auto [key, value] :
       {std::pair{"profile_name", &budget.profile_name}, std::pair{"profile_file", &budget.profile_file}})
    if (in && in->contains(key) && in->at(key).is_string()) *value = in->at(key).get<std::string>();
  std::string flags = planned_budget_flags(budget);
  if (in && in->contains("phase") && in->at("phase") == "prefill") flags = " --phase prefill" + flags;
  const std::string command =
      fmt::format("dak plan --model {} --batch {} --prompt-len {} --gen-len {}{}{} --output json > {}",
                  model.empty() ? std::string("MODEL") : shell_word(model),
                  batch ? std::to_string(*batch) : std::string("B"),
                  prompt ? std::to_string(*prompt) : std::string("P"),
                  gen ? std::to_string(std::max<int64_t>(2, *gen)) : std::string("G"),
                  mode.empty() || mode == "auto" ? std::string() : " --offload " + mode, flags,
                  shell_word(fresh_plan_file_name(path, model.empty() ? "new" : model)));
  if (!model.empty() && batch && prompt && gen) return "regenerate the plan: " + command;
  std::string blanks;
  if (model.empty()) blanks += "MODEL the run's --model";
  if (!batch) blanks += std::string(blanks.empty() ? "" : ", ") + "B its batch";
  if (!prompt) blanks += std::string(blanks.empty() ? "" : ", ") + "P its longest prompt";
  if (!gen) blanks += std::string(blanks.empty() ? "" : ", ") + "G its new tokens";
  return fmt::format("regenerate the plan for your run: {} ({}; the file does not give them)", command, blanks);
}

}  // namespace

Plan Plan::load(const std::string& path, std::vector<std::string>* unknown_fields) {
  const json j = read_json_file(path, "plan file", "check the path; or " + regenerate_fix(nullptr, path));
  try {
    Plan p = from_json(j, path);
    if (unknown_fields) *unknown_fields = unknown_json_fields(j, p.to_json());
    return p;
  } catch (const Error& e) {
    if (e.fix_part() != kRegenerateFix) throw;
    throw Error(e.what_part(), e.where_part(), regenerate_fix(&j, path));
  }
}

namespace {

// The step shape a plan was made for (its graph is the planner's at that shape).
StepShape plan_step_shape(const PlanInputs& in) {
  StepShape s;
  s.batch = in.batch, s.prompt_len = in.prompt_len, s.gen_len = in.gen_len;
  s.phase = in.phase, s.tile_rows = in.tile_rows, s.tile_n = in.tile_n;
  return s;
}

/// The first difference between the operators `plan` records and those of `config` at the plan's
/// shape, as a phrase ("22 layers in the plan, 2 in the loaded model"); "" when they agree.
std::string first_model_difference(const Plan& plan, const ModelConfig& config) {
  const std::string arch = arch_name(config.arch);
  if (plan.inputs.arch != arch) {
    return fmt::format("architecture {} in the plan, {} in the loaded model", plan.inputs.arch, arch);
  }
  const auto layers = [](const auto& ops) {
    return std::count_if(ops.begin(), ops.end(), [](const auto& op) { return op.kind == OpKind::kAttention; });
  };
  const OpGraph g = build_op_graph(config, plan_step_shape(plan.inputs));
  if (layers(plan.ops) != layers(g.ops)) {
    return fmt::format("{} layers in the plan, {} in the loaded model", layers(plan.ops), layers(g.ops));
  }
  for (size_t i = 0; i < std::max(plan.ops.size(), g.ops.size()); ++i) {
    if (i >= plan.ops.size() || i >= g.ops.size()) {
      return fmt::format("{} operators in the plan, {} in the loaded model", plan.ops.size(), g.ops.size());
    }
    const PlanOp& p = plan.ops[i];
    const Op& o = g.ops[i];
    if (p.name != o.name || p.kind != o.kind) {
      return fmt::format("operator {} is '{}' ({}) in the plan, '{}' ({}) in the loaded model", i, p.name,
                         op_kind_name(p.kind), o.name, op_kind_name(o.kind));
    }
    if (o.kind == OpKind::kAttention) {
      if (p.heads != o.heads || p.kv_heads != o.kv_heads || p.head_dim != o.head_dim) {
        return fmt::format("'{}' has {} heads ({} kv heads) of dimension {} in the plan, {} ({}) of {} in the loaded "
                           "model",
                           p.name, p.heads, p.kv_heads, p.head_dim, o.heads, o.kv_heads, o.head_dim);
      }
      continue;
    }
    if (p.tied_to != o.tied_to) {
      const auto table = [](const std::string& to) {
        return to.empty() ? std::string("holds its own table") : "shares " + to + "'s table (tied embeddings)";
      };
      return fmt::format("'{}' {} in the plan, {} in the loaded model", p.name, table(p.tied_to), table(o.tied_to));
    }
    if (p.split_rows != o.split_rows || (o.splittable && p.k != o.k)) {
      return fmt::format("'{}' is {} x {} in the plan, {} x {} in the loaded model", p.name, p.split_rows, p.k,
                         o.split_rows, o.k);
    }
    if (p.tensors != o.tensors) {
      const auto names = [](const std::vector<TensorPart>& ts) {
        std::string s;
        for (const TensorPart& t : ts) s += fmt::format("{}{} ({} rows)", s.empty() ? "" : ", ", t.name, t.rows);
        return s.empty() ? std::string("no tensor") : s;
      };
      return fmt::format("'{}' reads {} in the plan, {} in the loaded model", p.name, names(p.tensors),
                         names(o.tensors));
    }
  }
  return "";
}

// The first field of `plan` that the planner, given the plan's own model and step shape (`g`, whose
// operators first_model_difference found to match), could not have written: an operator's layer, role,
// shape, bytes, step bytes, FLOPs or unit rows, its host rows, bytes and fraction against its host units,
// the capacity at the plan's budget, and the totals that follow from the operators' placement and paths
// (host bytes per path, host ratio, staging ring, HBM bytes, step bytes). "" if none: the plan is the
// planner's, or an edit of only its placement (with what follows from it) and predictions.
std::string first_edited_field(const Plan& plan, const OpGraph& g) {
  // "<at>: <name> is <value>, where the planner writes <value>" where they differ, else "". Doubles
  // the planner computes the same way each time, and the JSON keeps them exactly (shortest round
  // trip): a difference beyond rounding is an edit.
  const auto mismatch = []<class T>(const std::string& at, const std::string& name, T in_plan, T planned) {
    bool same = in_plan == planned;
    if constexpr (std::is_floating_point_v<T>)
      same = std::abs(in_plan - planned) <= 1e-12 * std::max(std::abs(in_plan), std::abs(planned));
    return same ? std::string()
                : fmt::format("{}: {} is {}, where the planner writes {}", at, name, in_plan, planned);
  };
  PlanTotals sums;  // what the operators' placement and paths give
  int64_t largest_staged = 0;
  for (size_t i = 0; i < plan.ops.size() && i < g.ops.size(); ++i) {
    const PlanOp& p = plan.ops[i];
    const Op& o = g.ops[i];
    const std::string at = fmt::format("operators[{}] ({})", i, p.name);
    const auto field = [&](const std::string& name, int64_t in_plan, int64_t planned) {
      return mismatch(at, name, in_plan, planned);
    };
    const auto real_field = [&](const std::string& name, double in_plan, double planned) {
      return mismatch(at, name, in_plan, planned);
    };
    if (p.role != o.role)
      return fmt::format("operators[{}] ({}): role is '{}', where the planner writes '{}'", i, p.name, p.role, o.role);
    // host_units is within the operator's units (op_from_json), so host_rows() does not overflow.
    const int64_t host_rows = o.splittable ? o.host_rows(p.host_units) : 0;
    for (const std::string& s :
         {field("layer", p.layer, o.layer), field("m", p.m, o.m), field("n", p.n, o.n), field("k", p.k, o.k),
          field("batch", p.batch, o.batch), field("q_len", p.q_len, o.q_len), field("context", p.context, o.context),
          field("bytes", p.bytes, o.resident_bytes), field("fixed_bytes", p.fixed_bytes, o.fixed_bytes),
          real_field("step_bytes", p.step_bytes, o.step_bytes * double(o.passes)),
          real_field("flops", p.flops, o.flops), field("unit_rows", p.unit_rows, o.unit_rows),
          // Against the host units (an edit of host_units shows here too: named with it).
          field(fmt::format("host_rows (for host_units {})", p.host_units), p.host_rows, host_rows),
          field(fmt::format("host_bytes (for host_units {})", p.host_units), p.host_bytes,
                o.splittable ? o.host_resident_bytes(p.host_units) : 0),
          real_field(fmt::format("host_fraction (for host_units {})", p.host_units), p.host_fraction,
                     o.split_rows > 0 ? double(host_rows) / double(o.split_rows) : 0.0)}) {
      if (!s.empty()) return s;
    }
    sums.host_bytes += p.host_bytes;
    if (p.path == DataPath::kDirect) sums.direct_host_bytes += p.host_bytes;
    if (p.path == DataPath::kStaged) sums.staged_host_bytes += p.host_bytes;
    if (p.path == DataPath::kZeroCopy) sums.zero_copy_host_bytes += p.host_bytes;
    if (p.path == DataPath::kStaged) largest_staged = std::max(largest_staged, p.host_bytes);
  }
  // The capacity the planner computes for the model at the plan's budget (Plan::load has checked that
  // inputs.gpu_memory_bytes is that budget).
  const Capacity cap = compute_capacity(g, std::max<int64_t>(1, plan.capacity.hbm_budget_bytes));
  const Capacity& pc = plan.capacity;
  const auto whole = [&](const char* part, const std::string& name, int64_t in_plan, int64_t planned) {
    return mismatch(part, name, in_plan, planned);
  };
  const auto real = [&](const char* part, const std::string& name, double in_plan, double planned) {
    return mismatch(part, name, in_plan, planned);
  };
  const PlanTotals& t = plan.totals;
  const int64_t movable = cap.splittable_weight_bytes + cap.kv_bytes;
  sums.staging_ring_bytes = kStagingRingSlots * largest_staged;
  for (const std::string& s : {
           whole("capacity", "weight_bytes", pc.weight_bytes, cap.weight_bytes),
           whole("capacity", "splittable_weight_bytes", pc.splittable_weight_bytes, cap.splittable_weight_bytes),
           whole("capacity", "kv_bytes", pc.kv_bytes, cap.kv_bytes),
           whole("capacity", "workspace_bytes", pc.workspace_bytes, cap.workspace_bytes),
           whole("capacity", "total_bytes", pc.total_bytes, cap.total_bytes),
           whole("capacity", "required_host_bytes", pc.required_host_bytes, cap.required_host_bytes),
           real("capacity", "global_ratio", pc.global_ratio, cap.global_ratio),
           whole("totals", "host_bytes (the sum of its operators' host_bytes)", t.host_bytes, sums.host_bytes),
           whole("totals", "direct_host_bytes (the sum over its direct-path operators)", t.direct_host_bytes,
                 sums.direct_host_bytes),
           whole("totals", "staged_host_bytes (the sum over its staged operators)", t.staged_host_bytes,
                 sums.staged_host_bytes),
           whole("totals", "zero_copy_host_bytes (the sum over its zero_copy operators)", t.zero_copy_host_bytes,
                 sums.zero_copy_host_bytes),
           real("totals", "host_ratio", t.host_ratio, movable > 0 ? double(sums.host_bytes) / double(movable) : 0.0),
           whole("totals",
                 fmt::format("staging_ring_bytes ({} slots of the largest staged host part)", kStagingRingSlots),
                 t.staging_ring_bytes,
                 sums.staging_ring_bytes),
           whole("totals", "hbm_bytes", t.hbm_bytes, cap.total_bytes - sums.host_bytes + sums.staging_ring_bytes),
           real("totals", "step_bytes", t.step_bytes, g.step_model_bytes())}) {
    if (!s.empty()) return s;
  }
  return "";
}

}  // namespace

std::string plan_command_for(const std::string& model, const RequestedShape& shape, const std::string& offload_mode,
                             const std::string& output_file, const std::string& flags) {
  return fmt::format("dak plan --model {} --batch {} --prompt-len {} --gen-len {}{}{} --output json > {}",
                     shell_word(model), shape.batch, shape.prompt_len, std::max<int64_t>(2, shape.gen_len),
                     offload_mode.empty() || offload_mode == "auto" ? std::string() : " --offload " + offload_mode,
                     flags, shell_word(output_file));
}

std::string planned_budget_flags(const PlanInputs& inputs) {
  std::string flags;
  if (!inputs.gpu_memory_default && inputs.gpu_memory_bytes > 0) {
    static const char* kUnits[] = {"", "KiB", "MiB", "GiB", "TiB"};
    int64_t v = inputs.gpu_memory_bytes;
    int unit = 0;
    while (unit < 4 && v % 1024 == 0) v /= 1024, ++unit;
    flags += fmt::format(" --gpu-memory {}{}", v, kUnits[unit]);
  }
  if (inputs.cpu_offload_bytes && inputs.offload_ratio && inputs.gpu_memory_default) {
    // The user's own flag: the amount, under the profile's budget (it takes no --gpu-memory beside it).
    // The fewest digits that give the same bytes back (the flag rounds GiB x 2^30 to bytes): 0.05, not
    // 0.049999999813735485 (trial of session 49).
    const double gib = double(*inputs.cpu_offload_bytes) / double(int64_t{1} << 30);
    std::string amount;
    for (int decimals = 0; decimals <= 10; ++decimals) {  // 10 decimals resolve 2^-30 GiB, a byte
      amount = fmt::format("{:.{}f}", gib, decimals);
      const double back = std::strtod(amount.c_str(), nullptr) * double(int64_t{1} << 30);
      if (std::llround(back) == *inputs.cpu_offload_bytes) break;
    }
    flags += " --cpu-offload-gb " + amount;
  } else if (inputs.offload_ratio) {
    flags += fmt::format(" --offload-ratio {}", *inputs.offload_ratio);
  }
  // The profile too: dak plan's default depends on the machine's GPU (the session-33 trial's fix
  // re-planned an h100-default plan for h200-default).
  if (!inputs.profile_file.empty()) {
    flags += " --profile " + shell_word(inputs.profile_file);
  } else if (HardwareProfile::is_builtin(inputs.profile_name)) {
    flags += " --profile " + inputs.profile_name;
  } else if (!inputs.profile_name.empty()) {  // a file's profile, in a plan that does not record the file
    flags += " --profile " + shell_word("<file of profile " + inputs.profile_name + ">");
  }
  // The planner's own options, where the plan was made with other than their defaults (trial of session
  // 50: a fix that dropped them made another plan).
  if (inputs.allocator != AllocatorKind::kGreedy) flags += " --allocator " + allocator_name(inputs.allocator);
  if (inputs.tile_rows != StepShape{}.tile_rows && inputs.tile_rows > 0)
    flags += fmt::format(" --tile-rows {}", inputs.tile_rows);
  if (!inputs.allow_staged && (inputs.offload_mode.empty() || inputs.offload_mode == "auto")) flags += " --no-staged";
  return flags;
}

std::string planned_budget_flags_for(const PlanInputs& inputs, const ModelConfig& config,
                                     const RequestedShape& shape) {
  if (!inputs.cpu_offload_bytes || !inputs.offload_ratio) return planned_budget_flags(inputs);
  StepShape step;
  step.batch = shape.batch, step.prompt_len = shape.prompt_len, step.gen_len = std::max<int64_t>(2, shape.gen_len);
  step.phase = Phase::kDecode, step.tile_rows = inputs.tile_rows, step.tile_n = inputs.tile_n;
  int64_t movable = 0;
  try {
    const Capacity cap = compute_capacity(build_op_graph(config, step), std::max<int64_t>(1, inputs.gpu_memory_bytes));
    movable = cap.splittable_weight_bytes + cap.kv_bytes;
  } catch (const Error&) {
    return planned_budget_flags(inputs);  // a shape the planner refuses: dak plan will say why
  }
  if (*inputs.cpu_offload_bytes <= movable) return planned_budget_flags(inputs);
  PlanInputs as_ratio = inputs;
  as_ratio.cpu_offload_bytes.reset();
  const double r = *inputs.offload_ratio;
  const double scale = std::pow(10.0, 3 - std::floor(std::log10(r)));  // 4 significant digits
  as_ratio.offload_ratio = std::min(1.0, std::ceil(r * scale) / scale);
  return planned_budget_flags(as_ratio);
}

std::string fresh_plan_file_name(const std::string& plan_file, const std::string& model) {
  namespace fs = std::filesystem;
  // The model's name: a file's stem, or the folder of a config.json (or of a folder given with a '/').
  fs::path named = fs::path(model);
  if (named.filename().empty() || named.filename() == "config.json") named = named.parent_path();
  std::string label = named.filename() == "." || named.filename() == ".." ? std::string() : named.stem().string();
  for (char& c : label) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  }
  if (label.empty()) label = "model";
  const fs::path plan(plan_file);
  // A --plan that is no file (the trial of session 27: "/dev/null" gave "> /dev/null-new.json",
  // "/tmp" "> /tmp-new.json"): a plan inside that folder, or in the working directory for a device,
  // FIFO or socket.
  std::error_code sec;
  const fs::file_type type = fs::status(plan, sec).type();
  const bool folder = !sec && type == fs::file_type::directory;
  const bool other = !sec && type != fs::file_type::directory && type != fs::file_type::regular &&
                     type != fs::file_type::not_found;
  const fs::path parent = folder ? plan : other ? fs::path() : plan.parent_path();
  std::string stem = folder || other || plan.stem().empty() ? std::string("plan") : plan.stem().string();
  // A name this function made ("pd-llama-2-7b.json", "pd-llama-2-7b-2.json") is not suffixed again:
  // its stem without the suffix (the session-25 second trial's names grew by one "-<model>" per refusal).
  if (const size_t at = stem.rfind("-" + label); at != std::string::npos && at > 0) {
    const std::string rest = stem.substr(at + 1 + label.size());
    const bool numbered = rest.size() > 1 && rest[0] == '-' && std::all_of(rest.begin() + 1, rest.end(), [](char c) {
                            return std::isdigit(static_cast<unsigned char>(c)) != 0;
                          });
    if (rest.empty() || numbered) stem.resize(at);
  }
  for (int n = 1;; ++n) {
    const fs::path candidate =
        parent / (stem + "-" + label + (n == 1 ? std::string() : fmt::format("-{}", n)) + ".json");
    std::error_code ec;
    if (candidate != plan && !fs::exists(fs::symlink_status(candidate, ec))) return candidate.string();
  }
}

void check_plan_model(const Plan& plan, const ModelConfig& config, const std::string& model, const std::string& where,
                      const RequestedShape& shape) {
  const std::string difference = first_model_difference(plan, config);
  if (difference.empty()) return;
  // The fix makes the plan this run asks for: its model and shape (the new-user trial was told the
  // refused plan's batch and lengths), in the plan's mode (the run's: check_plan_mode came first).
  fail(fmt::format("the plan was made for the model '{}', but the loaded model is '{}' ({} layers, hidden size {}): {}",
                   plan.inputs.model, model, config.num_layers, config.hidden_size, difference),
       where,
       "make a plan for this model: " + plan_command_for(model, shape, plan.inputs.offload_mode,
                                                         fresh_plan_file_name(where, model),
                                                         planned_budget_flags_for(plan.inputs, config, shape)));
}

void check_plan_fields(const Plan& plan, const ModelConfig& config, const std::string& model, const std::string& where,
                       const RequestedShape& shape) {
  // The model and the run's shape match (checked before): every field the planner derives from the
  // model and the plan's inputs must then be the planner's (trial of session 49: an operator's bytes
  // 1e12, layer -1 or batch -1 were accepted).
  const std::string edited = first_edited_field(plan, build_op_graph(config, plan_step_shape(plan.inputs)));
  if (edited.empty()) return;
  fail("the plan's " + edited + " (a plan file edited by hand, here or in the inputs it derives from, damaged, or "
       "made for another checkpoint of the model)",
       where,
       "make a new plan for this run: " + plan_command_for(model, shape, plan.inputs.offload_mode,
                                                          fresh_plan_file_name(where, model),
                                                          planned_budget_flags_for(plan.inputs, config, shape)));
}

}  // namespace dak
