// Offload allocators: choose how many split units of each operator live on the host so that
// the host holds at least `required_host_bytes` (capacity) and Σ T_i is small (DESIGN.md §2).
//
// They work on precomputed curves, one per operator: T_i(h) and the resident host bytes of h
// units, h = 0..units_i. The curves come from the cost model (planner.cc), which is what makes
// them non-convex: wave quantization, the compute split between host and HBM CTAs, launch
// overheads and the staged path's ring fill.
//
// Greedy (the paper's three-phase greedy, generalized to measured, non-convex curves):
//   start: every operator at the h that minimizes its own time (smallest such h). This is
//          phase 1: a memory-bound operator starts at its balance point x* = B_h / (B_g + B_h),
//          where offloading makes it faster; it is taken even when capacity needs nothing.
//   then:  while the host holds less than required, take the cheapest increment in time per byte
//          among the segments of each operator's lower convex hull (from its start). Zero-cost
//          segments come first: phase 2, compute-bound operators inside their free zone
//          x ≤ B_h / B_i. Then phase 3, where every byte costs about 1 / B_h; ties go to weights
//          before KV (curves marked `prefer_late`), then to the lower operator index.
//   last:  the final increment, which would overshoot, is served by whichever single operator
//          covers the remaining bytes at the least added time, from the current state or from
//          the state before any of the last 1024 committed segments (undoing increments that the
//          overshoot makes unnecessary).
//   Optimal up to the last increment: the committed segments are optimal for the bytes they
//   hold (convex hulls), so the error is bounded by one hull segment of one operator (tests: at
//   most one unit's time step on random instances, exact in most). The predicted total never
//   grows when required_host_bytes shrinks: the committed prefix only grows with the requirement,
//   every final candidate for a larger requirement is also one for a smaller (or costs at least
//   the smaller one's completion by the segment it stopped at), and increments never lower time.
// Uniform: every operator gets the same fraction R of its bytes (rounded up to whole units).
// Brute force: exhaustive search, for small instances and tests.
#pragma once

#include <cstdint>
#include <vector>

namespace dak {

/// One operator's choices. time_s.size() == host_bytes.size() == units + 1; host_bytes[0] == 0
/// and host_bytes is non-decreasing.
struct AllocCurve {
  std::vector<double> time_s;
  std::vector<int64_t> host_bytes;
  bool prefer_late = false;  // tie-break: offload after the others at equal cost (KV cache)
};

struct Allocation {
  std::vector<int64_t> host_units;  // per curve
  double total_time_s = 0;          // Σ time_s[h]
  int64_t host_bytes = 0;           // Σ host_bytes[h]
};

/// Three-phase greedy (see above). Throws dak::Error if Σ max host bytes < required_host_bytes
/// or a curve is malformed.
Allocation allocate_greedy(const std::vector<AllocCurve>& curves, int64_t required_host_bytes);

/// Same fraction for every operator: h_i = the fewest units holding ≥ ratio · (all bytes of i),
/// ratio = required / Σ all bytes; then topped up one unit at a time (least added time) if
/// rounding left the total short. Throws dak::Error if infeasible.
Allocation allocate_uniform(const std::vector<AllocCurve>& curves, int64_t required_host_bytes);

/// Exhaustive minimum of Σ T_i subject to Σ host bytes ≥ required (ties: fewer host bytes).
/// Throws dak::Error if infeasible or if Π (units_i + 1) > max_combinations.
Allocation allocate_brute_force(const std::vector<AllocCurve>& curves, int64_t required_host_bytes,
                                int64_t max_combinations = 4'000'000);

/// Σ time and bytes of a given choice of host units (validated against the curves).
Allocation evaluate_allocation(const std::vector<AllocCurve>& curves, std::vector<int64_t> host_units);

}  // namespace dak
