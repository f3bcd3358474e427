// libFuzzer target: a hardware profile (`--profile FILE`, written by `dak profile`, docs/profile.md) as
// a user may have edited or damaged it. HardwareProfile::from_json on arbitrary JSON, then for what
// it accepts what `dak plan` does with it: the planner for the tiny Llama of tests/data at a decode
// step, without offload, at a forced ratio under auto and on the direct path alone, each plan's text,
// and the plan's own JSON read back and checked against the model (a plan the planner writes must pass
// what a run checks: a refusal aborts). Only
// dak::Error may escape; the seeds (fuzz/corpus/fuzz_hardware_profile) are two shipped profiles.
// Mutations edit the JSON values (json_mutator.h).
// dak-fuzz-sources: core/planner.cc core/cost_model.cc core/allocator.cc core/plan.cc core/plan_report.cc
// dak-fuzz-sources: core/capacity.cc core/op_graph.cc core/model_config.cc core/hardware_profile.cc
// dak-fuzz-sources: core/tiered_gemm_schedule.cc core/json_file.cc core/byte_size.cc core/rope_layout.cc
// dak-fuzz-sources: core/config_locator.cc core/env.cc core/offload_floor.cc core/shape_terms.cc
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "json_mutator.h"
#include "tiny_llama.h"
#include "core/hardware_profile.h"
#include "core/model_config.h"
#include "core/plan.h"
#include "core/plan_report.h"
#include "core/planner.h"

namespace {

using dak_fuzz::tiny_llama;

// The plan's text, and its JSON read back and checked against the model as `dak generate --plan` does.
void use_plan(const dak::Plan& plan, const dak::HardwareProfile& profile) {
  (void)dak::format_plan_text(plan, profile, true);
  try {
    const dak::Plan read = dak::Plan::from_json(plan.to_json(), "fuzz/planned.json");
    dak::RequestedShape shape;
    shape.batch = read.inputs.batch, shape.prompt_len = read.inputs.prompt_len, shape.gen_len = read.inputs.gen_len;
    dak::check_plan_model(read, tiny_llama(), "tiny", "fuzz/planned.json", shape);
    dak::check_plan_fields(read, tiny_llama(), "tiny", "fuzz/planned.json", shape);
  } catch (const dak::Error& e) {
    std::fprintf(stderr, "a plan the planner wrote was refused on reading:\n%s\n", e.what());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  std::optional<dak::HardwareProfile> profile;
  try {
    profile = dak::HardwareProfile::from_json(j, "fuzz/profile.json");
    (void)profile->to_json().dump();
    (void)profile->hbm_factor(int64_t(4) << 20);
    (void)profile->for_step(true, 8).step_overhead_us();
  } catch (const dak::Error&) {
    return 0;
  }
  dak::PlanRequest req;
  req.model_name = "tiny";
  req.shape.batch = 2, req.shape.prompt_len = 4, req.shape.gen_len = 4;
  for (const std::optional<dak::DataPath> path :
       {std::optional<dak::DataPath>(), std::optional(dak::DataPath::kDirect)}) {
    try {
      req.single_path = path;
      const dak::Planner planner(tiny_llama(), *profile, req);
      if (!path) use_plan(planner.plan(), *profile);
      use_plan(planner.plan(dak::AllocatorKind::kGreedy, 0.5), *profile);
    } catch (const dak::Error&) {
    }
  }
  return 0;
}
