// Human-readable views of a Plan for `dak plan --output text` and of ratio sweeps.
#pragma once

#include <string>
#include <vector>

#include "core/hardware_profile.h"
#include "core/plan.h"
#include "core/planner.h"

namespace dak {

/// The plan as text: inputs and capacity, a per-operator table (operators outside the layer stack
/// and layer 0's; every row when `verbose`), per-role totals over all layers, then the predicted
/// TPOT (or prefill step time), EB and host bytes per path.
std::string format_plan_text(const Plan& plan, const HardwareProfile& profile, bool verbose);

/// A Markdown table of a greedy-vs-uniform sweep (global ratio, both TPOTs, speedup).
std::string format_ratio_sweep(const std::vector<RatioSweepRow>& rows);

}  // namespace dak
