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

/// A fraction as a percentage with the fewest decimals (up to 9) that give it back: 0.005 -> "0.5",
/// 0.9999 -> "99.99", 0.29 -> "29" (not 28.999999999999996).
std::string format_percent(double fraction);

/// A Markdown table of a greedy-vs-uniform sweep (global ratio, both step times, speedup; the step
/// time is the TPOT in decode and the prefill time in prefill); each ratio is
/// printed by format_percent, so rows of ratios that differ by less than a percent stay apart.
std::string format_ratio_sweep(const std::vector<RatioSweepRow>& rows, Phase phase = Phase::kDecode);

}  // namespace dak
