// Planner: config + step shape + hardware profile + HBM budget -> Plan (DESIGN.md §2).
//
//   1. op graph of the requested phase (op_graph.h)
//   2. capacity against the budget -> bytes the host must hold (capacity.h), or a forced global
//      offload ratio R (fraction of splittable weight + KV bytes on the host)
//   3. per operator, the cost-model curve T_i(h) for h = 0..units host units (cost_model.h); built
//      twice: direct path only, and the cheaper of direct/staged per point
//   4. allocation over the curves (allocator.h): greedy, uniform or brute force
//   5. three variants: every host byte direct; every host byte staged; each operator the cheaper
//      path. Variants with staged operators must also fit the staging ring in HBM (kStagingRingSlots slots of
//      the largest staged host part, as the engine allocates it; the host takes that much more
//      when the budget binds). Auto also weighs the all-direct allocation twice: as it is (every
//      host byte direct, the compute-path linears too) and with every host linear staged (the
//      prefetch placement, taken where predicted >= 0.5 % faster). The fastest becomes the plan.
//   6. predicted step time = max(Σ T_i, link floor), where the link floor is
//      (direct + staged host step bytes) / shared-link rate when a step uses both paths: the
//      link delivers about 53 GB/s to both together, not the sum (DESIGN.md §1). A plan with staged
//      operators (auto or prefetch) takes the length of the engine's copy pipeline instead
//      (prefetch_pipeline_s: copies up to three linears ahead through three slots, overlapped with
//      the kernels, the copies and the direct reads sharing the link: a fluid simulation). A greedy
//      auto plan with staged operators is then refined on that replay (refine_pipeline: host bytes
//      moved between operators while the predicted step shortens).
//   7. single-path modes (PlanRequest::single_path: --offload direct / prefetch / zero-copy): the
//      direct allocation of step 4, every operator priced on that one path; prefetch's step is
//      the length of its copy pipeline (prefetch_pipeline_s), zero-copy's the sum of its
//      operators (cost_model.h), each at least its link floor, so each mode's prediction is that
//      mode's. With nothing that must move, prefetch and zero-copy keep everything in HBM.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/capacity.h"
#include "core/cost_model.h"
#include "core/hardware_profile.h"
#include "core/model_config.h"
#include "core/op_graph.h"
#include "core/plan.h"

namespace dak {

/// Most cost-curve points one Planner builds: Σ over splittable operators of (units + 1), where a
/// linear's units are its tiles of tile_rows weight rows and an attention's its batch's sequences
/// (KV is placed in whole sequences), so layers × batch for the KV alone. Each point is kept once per
/// path variant and again by the allocator: 2^24 points peaked at 0.8 GiB (1.0 GiB in a sweep;
/// 4096 layers at batch 4000), well above Llama-2-70B at batch 65536 (5.3 M points) or at
/// --tile-rows 1 (6.8 M).
constexpr int64_t kMaxPlanCurvePoints = int64_t(1) << 24;

struct PlanRequest {
  std::string model_name;                   // recorded in the plan
  std::string profile_file;                 // recorded in the plan: the --profile file, "" if compiled in
  StepShape shape;                          // batch, lengths, phase, tile sizes
  std::optional<int64_t> gpu_memory_bytes;  // HBM budget; default: profile.default_hbm_budget_bytes()
  /// gpu_memory_bytes was set by the command to the profile's default budget (not given by the
  /// user, not lowered to the GPU's free memory): the plan reports it as "(profile default)".
  bool gpu_memory_is_profile_default = false;
  /// The host amount the user gave with --cpu-offload-gb, in bytes (recorded in the plan; the
  /// command turns it into offload_ratio). nullopt: not given.
  std::optional<int64_t> cpu_offload_bytes;
  std::optional<double> offload_ratio;      // in [0, 1]: forced global ratio, overrides the budget
  AllocatorKind allocator = AllocatorKind::kGreedy;
  bool allow_staged = true;  // let operators take the copy-engine path
  /// The modes that apply one path to every operator (dak's --offload direct / prefetch /
  /// zero-copy): the allocation is made for the direct path (allow_staged is then ignored), and
  /// every operator with host bytes is priced on this path: kDirect; kStaged (prefetch: linears
  /// staged by the copy engine, KV and embedding rows read in place on the direct path); kZeroCopy
  /// (the ordinary kernels read every host byte in place). nullopt: the planner's own choice per
  /// operator (--offload auto).
  std::optional<DataPath> single_path;
  CostParams cost;
  int64_t staging_ring_chunks = 2;  // ring = chunks × cost.staging_chunk_bytes
  ShapeTerms terms;                 // how the asking command names the shape, in refusals' fixes
};

/// Builds the graph, capacity and cost curves once; plan() can then be called for several
/// allocators and ratios (sweeps) without recomputing them.
class Planner {
 public:
  /// Throws dak::Error for an invalid shape, budget or ratio, when no plan can fit (the host must
  /// hold more than the profile can pin at any ratio: checked before the cost curves are built,
  /// whose size grows with layers × batch), or when the curves would exceed kMaxPlanCurvePoints.
  Planner(const ModelConfig& config, const HardwareProfile& profile, PlanRequest request);

  /// The plan for `allocator` with the request's ratio, or `offload_ratio` if given.
  /// Throws dak::Error if the host would have to hold more than the profile can pin, or the
  /// budget cannot hold what never moves.
  Plan plan(AllocatorKind allocator, std::optional<double> offload_ratio = std::nullopt) const;
  Plan plan() const { return plan(request_.allocator, request_.offload_ratio); }

  const OpGraph& graph() const { return graph_; }
  const Capacity& capacity() const { return capacity_; }
  const CostModel& cost_model() const { return cost_; }

 private:
  // kDirectOnly: every host byte direct, the compute-path linears too (the all-direct allocation
  // auto weighs as a plan of its own, and with every host linear staged as the prefetch placement).
  enum class PathMode : uint8_t { kDirect, kStaged, kCheaper, kZeroCopy, kDirectOnly };
  struct Variant {
    PathMode mode = PathMode::kDirect;
    std::vector<AllocCurve> curves;  // one per splittable op, in op order
  };
  OpCost op_cost(const Op& op, int64_t host_units, PathMode mode) const;
  Variant build_variant(PathMode mode) const;
  Plan assemble(const Allocation& a, PathMode mode, AllocatorKind allocator, std::optional<double> ratio) const;
  /// The plan of `curves` under `mode` with at least `required` host bytes, grown until the
  /// staging ring (kStagingRingSlots slots of the largest staged host part) fits the HBM budget next to what
  /// stays in HBM (the host share grown geometrically, then bisected down to the least that fits,
  /// within 1 MiB); nullopt when it cannot (a forced ratio, nothing left to move, the pinnable
  /// limit, or 16 rounds of growth).
  std::optional<Plan> fit_staging_ring(const std::vector<AllocCurve>& curves, PathMode mode, AllocatorKind allocator,
                                       std::optional<double> ratio, int64_t required) const;
  /// `plan` (an auto plan of variant `v` with staged linears) with host bytes moved between
  /// operators, or back to HBM, while the copy-pipeline replay predicts a shorter step (a local
  /// search; the host keeps at least `required` bytes, the HBM total within auto_hbm_limit()); `plan`
  /// itself when no move helps.
  Plan refine_pipeline(Plan plan, const Variant& v, AllocatorKind allocator, std::optional<double> ratio,
                       int64_t required) const;
  /// Bytes of HBM an auto plan may hold: the budget, and never more than the model without offload
  /// (capacity M): a forced ratio is asked for to free HBM, and a staging ring larger than the host
  /// bytes it serves does the opposite (session 38's trial).
  int64_t auto_hbm_limit() const { return std::min(capacity_.hbm_budget_bytes, capacity_.total_bytes); }
  /// Step time (seconds) of `ops` (a plan with staged linears, in graph order) as the engine's
  /// staging ring runs it: copies ahead on their own stream through kStagingRingSlots slots, the
  /// other operators on the compute stream, the copies and the direct reads sharing the host link
  /// (a fluid simulation). `host_step_bytes[i]`: bytes operator i moves over the link per step.
  double prefetch_pipeline_s(const std::vector<PlanOp>& ops, const std::vector<double>& host_step_bytes) const;

  PlanRequest request_;
  HardwareProfile profile_;
  OpGraph graph_;
  Capacity capacity_;
  CostModel cost_;
  std::vector<size_t> splittable_;  // op indices with a curve
  std::vector<Variant> variants_;   // kDirect first
  Variant direct_only_;             // kDirectOnly, with the staged variants (auto with staging)
};

/// Planner(config, profile, request).plan().
Plan make_plan(const ModelConfig& config, const HardwareProfile& profile, const PlanRequest& request);

/// One row of a greedy-vs-uniform sweep over forced global offload ratios.
struct RatioSweepRow {
  double ratio = 0;
  double greedy_tpot_s = 0;
  double uniform_tpot_s = 0;
  double speedup = 0;   // uniform / greedy
  std::string refused;  // non-empty: the planner refused this ratio (the dak::Error's first line)
};

/// Plans `request` at each ratio with both allocators; a ratio the planner refuses (e.g. more host
/// bytes than the profile can pin) becomes a row with `refused` set instead of ending the sweep.
/// `progress` (optional) is called after each ratio with (ratios done, ratios in all).
std::vector<RatioSweepRow> sweep_offload_ratio(const ModelConfig& config, const HardwareProfile& profile,
                                               const PlanRequest& request, const std::vector<double>& ratios,
                                               const std::function<void(size_t, size_t)>& progress = {});

}  // namespace dak
