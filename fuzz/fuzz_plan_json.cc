// libFuzzer target: a plan file (`dak generate / bench --plan FILE`, docs/planner.md §6) as a user may
// have edited or damaged it. Plan::from_json on arbitrary JSON, then for what it accepts what a run
// does with it: the JSON round trip and the checks against the loaded model (check_plan_model,
// check_plan_fields) for the tiny Llama of tests/data, with the run's shape taken from the plan; for
// what passes them, `dak plan`'s text. Mutations edit the JSON values (json_mutator.h). Only
// dak::Error may escape; the seeds (fuzz/corpus/fuzz_plan_json) are `dak plan` outputs for that model.
// dak-fuzz-sources: core/plan.cc core/plan_report.cc core/capacity.cc core/op_graph.cc core/model_config.cc
// dak-fuzz-sources: core/hardware_profile.cc core/tiered_gemm_schedule.cc core/json_file.cc core/byte_size.cc
// dak-fuzz-sources: core/rope_layout.cc core/config_locator.cc core/env.cc core/shape_terms.cc
#include <cstddef>
#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "json_mutator.h"
#include "tiny_llama.h"
#include "core/hardware_profile.h"
#include "core/model_config.h"
#include "core/plan.h"
#include "core/plan_report.h"

using dak_fuzz::tiny_llama;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  const std::string where = "fuzz/plan.json";
  try {
    const dak::Plan plan = dak::Plan::from_json(j, where);
    (void)plan.to_json().dump();
    dak::RequestedShape shape;
    shape.batch = plan.inputs.batch, shape.prompt_len = plan.inputs.prompt_len, shape.gen_len = plan.inputs.gen_len;
    dak::check_plan_model(plan, tiny_llama(), "tiny", where, shape);
    dak::check_plan_fields(plan, tiny_llama(), "tiny", where, shape);
    // `dak plan` prints only the planner's own plans: a file that passed the checks above is one,
    // up to its placement and predictions.
    const std::optional<dak::HardwareProfile> profile = dak::HardwareProfile::builtin(plan.inputs.profile_name);
    (void)dak::format_plan_text(plan, profile ? *profile : dak::HardwareProfile::h200_default(), true);
  } catch (const dak::Error&) {
  }
  return 0;
}
