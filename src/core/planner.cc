#include "core/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <future>
#include <map>
#include <vector>

#include "core/byte_size.h"
#include "core/env.h"
#include "core/error.h"
#include "core/tiered_gemm_schedule.h"

namespace dak {

namespace {

// Everything the cost of an operator depends on (identical layers share one curve).
std::string cost_signature(const Op& op) {
  return fmt::format("{}|{},{},{}|{},{},{}|{},{},{}|{}|{}|{}|{}|{}|{},{},{},{}|{}|{}", int(op.kind), op.m, op.n, op.k,
                     op.batch, op.q_len, op.context, op.heads, op.kv_heads, op.head_dim, op.resident_bytes,
                     op.step_bytes, op.fixed_bytes, op.act_bytes, op.flops, op.split_rows, op.unit_rows, op.row_bytes,
                     op.items_per_unit, op.kernels, op.passes);
}

Allocation run_allocator(AllocatorKind kind, const std::vector<AllocCurve>& curves, int64_t required) {
  switch (kind) {
    case AllocatorKind::kGreedy:
      return allocate_greedy(curves, required);
    case AllocatorKind::kUniform:
      return allocate_uniform(curves, required);
    case AllocatorKind::kBruteForce:
      return allocate_brute_force(curves, required);
  }
  return allocate_greedy(curves, required);
}

}  // namespace

Planner::Planner(const ModelConfig& config, const HardwareProfile& profile, PlanRequest request)
    : request_(std::move(request)),
      profile_(profile.for_step(request_.shape.phase == Phase::kDecode, request_.shape.batch)),
      cost_(profile_, request_.cost) {
  if (request_.offload_ratio && !(*request_.offload_ratio >= 0.0 && *request_.offload_ratio <= 1.0))
    fail(fmt::format("offload ratio must be in [0, 1], got {}", *request_.offload_ratio), "--offload-ratio",
         "pass a fraction such as 0.3");
  if (request_.staging_ring_chunks < 1)
    fail("the staging ring needs at least one chunk", "planner request", "pass staging_ring_chunks >= 1");
  if (request_.shape.max_context() > config.max_position_embeddings) {
    fail(fmt::format("prompt {} + gen {} = {} positions exceed the model's context of {}", request_.shape.prompt_len,
                     request_.shape.gen_len, request_.shape.max_context(), config.max_position_embeddings),
         request_.terms.flags(ShapeTerms::kPrompt | ShapeTerms::kGen),
         request_.terms.lower(ShapeTerms::kPrompt | ShapeTerms::kGen));
  }
  if (request_.gpu_memory_bytes && *request_.gpu_memory_bytes > profile_.hbm_free_after_context_bytes) {
    fail(fmt::format("an HBM budget of {} is more than the {} the profile '{}' has free after context creation",
                     format_bytes(double(*request_.gpu_memory_bytes)),
                     format_bytes(double(profile_.hbm_free_after_context_bytes)), profile_.name),
         "--gpu-memory",
         fmt::format("give at most {}GiB (the GPU's free memory), or use the profile of a larger GPU (--profile)",
                     format_at_most(double(profile_.hbm_free_after_context_bytes) / double(int64_t(1) << 30))));
  }
  graph_ = build_op_graph(config, request_.shape, request_.terms);
  capacity_ = compute_capacity(graph_, request_.gpu_memory_bytes.value_or(profile_.default_hbm_budget_bytes()));
  // Every plan, at any forced ratio, keeps at least required_host_bytes on the host (a ratio that
  // leaves more in HBM exceeds the budget): when the profile cannot pin that much, no plan fits.
  // Refused here, before the cost curves (layers × batch points) are built: the new-user trial's
  // 4096 layers at batch 65536 ran out of memory building them, and only then met this check.
  if (capacity_.required_host_bytes > profile_.pinnable_host_bytes) {
    if (request_.offload_ratio) {  // plan()'s own check of this ratio first: its message names the ratio
      const int64_t movable = capacity_.splittable_weight_bytes + capacity_.kv_bytes;
      check_capacity(capacity_, std::min(movable, int64_t(std::ceil(*request_.offload_ratio * double(movable)))),
                     false, profile_, request_.terms);
    }
    check_capacity(capacity_, capacity_.required_host_bytes, !request_.offload_ratio, profile_, request_.terms);
  }
  int64_t points = 0;
  for (size_t i = 0; i < graph_.ops.size(); ++i) {
    if (graph_.ops[i].splittable && graph_.ops[i].units() > 0) {
      splittable_.push_back(i);
      points += graph_.ops[i].units() + 1;
    }
  }
  if (points > kMaxPlanCurvePoints) {
    fail(fmt::format("planning {} layers at batch {} with {}-row tiles weighs {} placements (weight tiles and KV "
                     "sequences of every operator), more than the planner supports ({})",
                     config.num_layers, request_.shape.batch, request_.shape.tile_rows, points, kMaxPlanCurvePoints),
         request_.terms.flags(ShapeTerms::kBatch) + (request_.terms.has_tile_rows() ? " / --tile-rows" : ""),
         request_.terms.lower(ShapeTerms::kBatch) + " (the KV cache is placed per sequence and layer)" +
             (request_.terms.has_tile_rows()
                  ? ", or raise --tile-rows (weight rows per placement unit, default 128)"
                  : ""));
  }
  if (request_.single_path && *request_.single_path == DataPath::kNone)
    fail("a single-path plan needs the direct, staged or zero_copy path", "planner request",
         "pass single_path = kDirect, kStaged or kZeroCopy, or leave it unset");
  variants_.push_back(build_variant(PathMode::kDirect));
  if (request_.allow_staged && !request_.single_path) {
    variants_.push_back(build_variant(PathMode::kStaged));
    variants_.push_back(build_variant(PathMode::kCheaper));
    direct_only_ = build_variant(PathMode::kDirectOnly);  // once: plan() runs per ratio of a sweep
  }
}

OpCost Planner::op_cost(const Op& op, int64_t host_units, PathMode mode) const {
  // Zero-copy: the ordinary kernels read every host byte in place, whatever the operator.
  if (mode == PathMode::kZeroCopy) return cost_.cost(op, host_units, DataPath::kZeroCopy);
  // The engine stages only linear weights (gpu_engine.cc: the copy engine fills an HBM ring one
  // linear ahead); host KV sequences and embedding rows are always read in place, so they are
  // priced on the direct path whatever the mode.
  if (op.kind != OpKind::kLinear) mode = PathMode::kDirect;
  // Where staging is allowed, linears on the tiered GEMM's compute path (N > 64, 128 x 128 tiles)
  // take it in every variant: next to compute-bound HBM tiles their few host m-tiles are read by a
  // few latency-bound streams (gate_up at N = 512 on the H200: 0.56-0.65 of ideal at 0.5-2 %, 0.91 at
  // 10 %; docs/micro-experiments.md section 3). The all-direct plan (kDirectOnly), priced as the
  // engine launches those linears (CostModel, since session 23), competes with the variants as a
  // whole in plan().
  if (request_.allow_staged && !request_.single_path && mode != PathMode::kDirectOnly &&
      op.kind == OpKind::kLinear && host_units > 0 && op.n > 64) {  // the 128-row tiles of choose_tiered_gemm_tile
    mode = PathMode::kStaged;
  }
  switch (mode) {
    case PathMode::kDirect:
    case PathMode::kDirectOnly:
      return cost_.cost(op, host_units, DataPath::kDirect);
    case PathMode::kStaged:
      return cost_.cost(op, host_units, DataPath::kStaged);
    case PathMode::kCheaper:
      return cost_.best(op, host_units, true);
    case PathMode::kZeroCopy:
      break;  // handled above
  }
  return cost_.cost(op, host_units, DataPath::kDirect);
}

Planner::Variant Planner::build_variant(PathMode mode) const {
  Variant v;
  v.mode = mode;
  std::map<std::string, AllocCurve> cache;
  for (size_t i : splittable_) {
    const Op& op = graph_.ops[i];
    auto [it, fresh] = cache.try_emplace(cost_signature(op));
    AllocCurve& c = it->second;
    if (fresh) {
      for (int64_t h = 0; h <= op.units(); ++h) {
        c.time_s.push_back(op_cost(op, h, mode).time_s);
        c.host_bytes.push_back(op.host_resident_bytes(h));
      }
      c.prefer_late = op.kind == OpKind::kAttention;  // keep KV local at equal cost
    }
    v.curves.push_back(c);
  }
  return v;
}

Plan Planner::plan(AllocatorKind allocator, std::optional<double> offload_ratio) const {
  if (offload_ratio && !(*offload_ratio >= 0.0 && *offload_ratio <= 1.0))
    fail(fmt::format("offload ratio must be in [0, 1], got {}", *offload_ratio), "--offload-ratio",
         "pass a fraction such as 0.3");
  const Capacity& cap = capacity_;
  const int64_t movable = cap.splittable_weight_bytes + cap.kv_bytes;
  const int64_t required =
      offload_ratio ? std::min(movable, int64_t(std::ceil(*offload_ratio * double(movable)))) : cap.required_host_bytes;
  check_capacity(cap, required, !offload_ratio, profile_, request_.terms);
  // DAK_PLAN_TRACE=1: auto's candidates on stderr (below); the other ways out say there are none.
  const bool trace = env_flag("DAK_PLAN_TRACE", false);
  const auto no_candidates = [&](const char* why) {
    if (trace) std::fprintf(stderr, "dak: plan trace: no candidates to weigh (%s)\n", why);
  };
  if (offload_ratio && *offload_ratio == 0.0) {
    no_candidates("--offload-ratio 0: everything in HBM");
    // --offload-ratio 0 means nothing on the host: not even the balance points that the greedy's
    // phase 1 takes for speed (measured on the H200, Llama-2-7B batch 8: those 71 MiB of direct
    // rows gave TPOT 4.95 ms where the all-HBM engine runs 4.5 ms; docs/perf-notes.md, session 6).
    const std::vector<AllocCurve>& curves = variants_[0].curves;
    return assemble(evaluate_allocation(curves, std::vector<int64_t>(curves.size(), 0)), PathMode::kDirect, allocator,
                    offload_ratio);
  }

  // prefetch and zero-copy with nothing that must move: all in HBM. The direct allocation would
  // still take its balance points (a gain only on the direct path: Llama-2-7B batch 8 under
  // zero-copy 8.16 ms predicted with them, 4.42 without).
  const PathMode single_mode = !request_.single_path                          ? PathMode::kDirect
                               : *request_.single_path == DataPath::kStaged   ? PathMode::kStaged
                               : *request_.single_path == DataPath::kZeroCopy ? PathMode::kZeroCopy
                                                                              : PathMode::kDirect;
  if (request_.single_path && single_mode != PathMode::kDirect && !offload_ratio && required == 0) {
    no_candidates("nothing must move: everything in HBM");
    const std::vector<AllocCurve>& curves = variants_[0].curves;
    return assemble(evaluate_allocation(curves, std::vector<int64_t>(curves.size(), 0)), single_mode, allocator,
                    std::nullopt);
  }
  // The staged linears' ring (kStagingRingSlots HBM slots of the largest staged host part) must fit next to what
  // stays in HBM; a plan whose ring cannot is refused, naming the ring. With a forced ratio the way out
  // is a larger host share (less left in HBM; the session-21 trial's message said "lower" it): the
  // least share the budget's own refit finds is named, when there is one.
  using Candidate = std::pair<const std::vector<AllocCurve>*, PathMode>;
  const auto ring_does_not_fit = [&](const std::vector<Candidate>& candidates, const std::string& where,
                                     const std::string& no_ring) {
    const auto& [curves, mode] = candidates.front();
    const Plan over = assemble(run_allocator(allocator, *curves, required), mode, allocator, offload_ratio);
    // The budget that holds what stays in HBM next to this ring (a larger budget only shrinks the host
    // share, so no larger staged part): rounded up in the unit printed, as check_capacity's bounds.
    const int64_t need = over.totals.hbm_bytes;
    const int unit = need >= (int64_t(1) << 30) ? 30 : need >= (int64_t(1) << 20) ? 20 : 10;
    const std::string raise = fmt::format("raise --gpu-memory to at least {}{}",
                                          format_at_least(double(need) / double(int64_t(1) << unit)),
                                          unit == 30 ? "GiB" : unit == 20 ? "MiB" : "KiB");
    std::string fix = raise + ", or " + no_ring;
    if (offload_ratio) {
      std::optional<int64_t> least_host;
      for (const auto& [c_curves, c_mode] : candidates) {
        const std::optional<Plan> fits =
            fit_staging_ring(*c_curves, c_mode, allocator, std::nullopt, cap.required_host_bytes);
        if (fits && (!least_host || fits->totals.host_bytes < *least_host)) least_host = fits->totals.host_bytes;
      }
      if (least_host && movable > 0 && *least_host > required) {
        const double least = std::ceil(double(*least_host) / double(movable) * 1e4) / 1e4;
        fix = fmt::format("force at least --offload-ratio {:.4f} (it moves enough to the host for the ring; or drop "
                          "--offload-ratio and let the budget decide), {}, or {}",
                          least, raise, no_ring);
      }
    }
    fail(fmt::format("the staging ring ({}, {} slots of the largest host part of a staged linear) does not fit next "
                     "to what stays in HBM: {} of the {} budget",
                     format_bytes(double(over.totals.staging_ring_bytes)), kStagingRingSlots, format_bytes(double(over.totals.hbm_bytes)),
                     format_bytes(double(cap.hbm_budget_bytes))),
         where, fix);
  };
  // One path for every operator: the direct allocation, priced on it.
  if (request_.single_path) {
    no_candidates("a single-path --offload mode: one allocation on that path");
    if (single_mode != PathMode::kStaged)
      return assemble(run_allocator(allocator, variants_[0].curves, required), single_mode, allocator, offload_ratio);
    std::optional<Plan> p = fit_staging_ring(variants_[0].curves, single_mode, allocator, offload_ratio, required);
    if (!p) {
      ring_does_not_fit({{&variants_[0].curves, single_mode}}, "--offload prefetch", "use --offload direct (no ring)");
    }
    return std::move(*p);
  }
  // auto: every variant, the direct one included (it stages the compute-path linears, op_cost), with
  // its ring in HBM; the fastest that fits becomes the plan.
  std::optional<Plan> best;
  const Variant* best_variant = nullptr;
  // Each candidate's prediction and placement, and the one taken (why auto took its plan).
  const auto show = [&](const std::string& name, const std::optional<Plan>& c) {
    if (!trace) return;
    if (!c) {
      std::fprintf(stderr, "dak: plan trace:   %-52s does not fit\n", name.c_str());
      return;
    }
    std::fprintf(stderr, "dak: plan trace:   %-52s %9.3f ms  direct %8.1f MiB  staged %8.1f MiB\n", name.c_str(),
                 c->predicted_tpot_s * 1e3, double(c->totals.direct_host_bytes) / double(1 << 20),
                 double(c->totals.staged_host_bytes) / double(1 << 20));
  };
  if (trace) {
    std::fprintf(stderr, "dak: plan trace: auto, %s allocator, %s\n",
                 allocator == AllocatorKind::kGreedy ? "greedy" : allocator == AllocatorKind::kUniform ? "uniform" : "other",
                 offload_ratio ? fmt::format("offload ratio {:g} %", 100 * *offload_ratio).c_str()
                               : fmt::format("{} on the host (the budget)", format_bytes(double(required))).c_str());
  }
  static constexpr const char* kModeName[] = {"direct", "staged", "cheaper", "zero-copy", "direct-only"};
  std::string chosen;  // the trace's name of the candidate taken
  // Every variant's greedy plan with staged linears is refined on the copy pipeline before the
  // comparison (--allocator uniform is a baseline: kept as it is). Until session 38 only the variant
  // fastest before refinement was; with h100-fast-link's numbers that left the staged variant, which
  // refines past the others, behind (docs/perf-notes.md, sessions 37-38). Measured on an H100 with
  // that profile (session 38, call 1, batch 8, same call): Llama-2-7B 10 % 21.200 -> 20.114 ms,
  // OPT-6.7B 10 % 25.528 -> 24.343, OPT-30B 10 % 111.549 -> 109.086, the 30 % points equal within
  // 0.3 %; at those points no plan of h100-default changes (elsewhere some do: docs/planner.md §4).
  // DAK_PLAN_REFINE_ALL=0 refines only the fastest (A/B).
  const bool refine = allocator == AllocatorKind::kGreedy && !env_flag("DAK_PLAN_NO_REFINE", false);
  const bool refine_all = env_flag("DAK_PLAN_REFINE_ALL", true);
  // Auto never takes a plan that holds more HBM than the model without offload (M: a staging ring
  // larger than the host bytes it serves), whatever it predicts: a forced ratio is asked for to
  // free HBM. Found in session 38's trial: OPT-6.7B batch 1, prompt 128 at 2 % (h200-default) took
  // a 642 MiB ring for 220 MiB staged, 12.87 GiB of HBM against the 12.49 GiB the model needs.
  // The all-direct plan (no ring) always qualifies.
  // The fastest plan dropped so, for the note that tells the user (trial of session 49: SmolLM2 at 55 %
  // took 3.41 ms all direct; a staged placement of 2.83 ms was dropped, said only by the trace).
  // fit_staging_ring and refine_pipeline return only plans within the budget, so a plan is dropped
  // here only for holding more than the model's own total.
  struct Dropped {
    double tpot_s = 0;
    int64_t hbm_bytes = 0;
  };
  std::optional<Dropped> dropped;
  const auto drop_if_over_m = [&](std::optional<Plan>& c) {
    if (!c || c->totals.hbm_bytes <= auto_hbm_limit()) return;
    if (!dropped || c->predicted_tpot_s < dropped->tpot_s) {
      dropped = Dropped{c->predicted_tpot_s, c->totals.hbm_bytes};
    }
    if (trace) {
      std::fprintf(stderr, "dak: plan trace:   (not taken: %.1f MiB of HBM, more than the %.1f MiB without offload)\n",
                   double(c->totals.hbm_bytes) / double(1 << 20), double(cap.total_bytes) / double(1 << 20));
    }
    c.reset();
  };
  // The prefetch mode's plan (the all-direct allocation, every host linear staged) is within auto's
  // reach too: the engine stages auto's staged linears through the same ring. The staged variant
  // allocates on per-operator staged costs, each paying its own ring fill, so it can miss the
  // placement whose copies the pipeline hides (session-23 trial: OPT-6.7B batch 1, prompt 128 at
  // 2 %: auto 5.853 ms predicted, all direct; --offload prefetch 5.055). Refined as the staged
  // variant (the refinement reads only the variant's mode and host bytes, the same for both), and
  // compared after both refinements (before them the order can differ: OPT-6.7B batch 512 at 30 %).
  // DAK_PLAN_NO_PREFETCH_CANDIDATE=1 leaves it out (A/B measurements).
  // The all-direct allocation, --offload direct's and prefetch's (without staging the direct
  // variant's curves are those already).
  const Variant& direct_only = variants_.size() > 1 ? direct_only_ : variants_[0];
  const bool prefetch_candidate = variants_.size() > 1 && variants_[1].mode == PathMode::kStaged &&
                                  !env_flag("DAK_PLAN_NO_PREFETCH_CANDIDATE", false);
  // The candidates are independent (the planner is read-only here): each is fitted and refined on
  // its own thread, then they are compared in a fixed order, so the plan is the same as one thread
  // would make. Refining every variant made planning 2-3 x slower (Llama-2-70B batch 512 at 10 %:
  // 1.3 -> 2.6 s on a 2-core machine).
  struct Fitted {
    std::optional<Plan> fitted, refined;  // refined: set where the refinement ran
  };
  const auto fit_and_refine = [this, allocator, offload_ratio, required](const std::vector<AllocCurve>* curves,
                                                                         PathMode mode, const Variant* refine_as,
                                                                         bool do_refine) {
    Fitted f;
    f.fitted = fit_staging_ring(*curves, mode, allocator, offload_ratio, required);
    if (do_refine && f.fitted && f.fitted->totals.staged_host_bytes > 0) {
      f.refined = refine_pipeline(*f.fitted, *refine_as, allocator, offload_ratio, required);
    }
    return f;
  };
  std::vector<std::future<Fitted>> jobs;
  for (const Variant& v : variants_) {
    jobs.push_back(std::async(std::launch::async, fit_and_refine, &v.curves, v.mode, &v, refine && refine_all));
  }
  std::future<Fitted> prefetch_job;
  if (prefetch_candidate) {
    prefetch_job = std::async(std::launch::async, fit_and_refine, &direct_only.curves, PathMode::kStaged, &variants_[1],
                              refine);
  }
  for (size_t i = 0; i < variants_.size(); ++i) {
    const Variant& v = variants_[i];
    const std::string name = std::string("variant ") + kModeName[size_t(v.mode)];
    Fitted f = jobs[i].get();
    show(name, f.fitted);
    const bool refined = f.refined.has_value();
    std::optional<Plan> s = std::move(refined ? f.refined : f.fitted);
    if (refined) show(name + ", refined", s);
    drop_if_over_m(s);
    if (s && (!best || s->predicted_tpot_s < best->predicted_tpot_s)) {
      best = std::move(s), best_variant = &v;
      chosen = name + (refined ? ", refined" : "");
    }
  }
  if (best && best->totals.staged_host_bytes > 0 && refine && !refine_all) {
    best = refine_pipeline(std::move(*best), *best_variant, allocator, offload_ratio, required);
    chosen += ", refined (fastest before refinement)";
    show(chosen, best);
    drop_if_over_m(best);
  }
  if (prefetch_candidate) {
    Fitted f = prefetch_job.get();
    const bool refined = f.refined.has_value();
    std::optional<Plan> s = std::move(refined ? f.refined : f.fitted);
    show(refined ? "prefetch placement, refined" : "prefetch placement", s);
    drop_if_over_m(s);
    // Taken when predicted at least 0.5 % faster: closer than that the replay does not rank two
    // placements of the same bytes (call 4 of session 23, same call: Llama-2-7B batch 8 at 10 %
    // 21.026 ms for this candidate, predicted 20.446, against 20.915 for the staged variant's,
    // predicted 20.511; Llama-2-7B batch 512 at 60 %, 1.0 % predicted, ran 257.667 against 260.750).
    constexpr double kMargin = 0.005;
    if (s && (!best || s->predicted_tpot_s < (1 - kMargin) * best->predicted_tpot_s)) {
      best = std::move(s);
      chosen = refined ? "prefetch placement, refined" : "prefetch placement";
    } else if (trace && s && best && s->predicted_tpot_s < best->predicted_tpot_s) {
      std::fprintf(stderr, "dak: plan trace:   (prefetch placement not taken: less than 0.5 %% faster)\n");
    }
  }
  // Every host byte direct, the compute-path linears too, as --offload direct plans it: taken where
  // it is predicted faster, or where no variant's ring fits (the session-22 trial: Qwen2-7B batch
  // 128, prompt 512 at 4 GiB was refused by auto and planned by direct). Since the cost model prices
  // the compute-path linears as the engine launches them (session 23) it ranks the two as measured:
  // Qwen2-7B batch 512, prompt 128 at 8 GiB 218.044 ms direct against 222.551 staged (predicted
  // 216.014 / 220.778); Llama-2-7B batch 512 at 30 % 133.255 against 129.430 (130.719 / 130.088);
  // OPT-30B batch 512 at 30 % 486.682 against 487.111 (485.310 / 490.812). With the old model it
  // picked direct at both 30 % points (predicted 128.603 and 481.406).
  {
    Plan p = assemble(run_allocator(allocator, direct_only.curves, required), PathMode::kDirectOnly, allocator,
                      offload_ratio);
    show("all direct", p);
    // DAK_PLAN_DIRECT_FALLBACK_ONLY=1: only where no ring fits (A/B measurements, tests of the staged plans).
    const bool fallback_only = env_flag("DAK_PLAN_DIRECT_FALLBACK_ONLY", false);
    if (p.totals.hbm_bytes <= cap.hbm_budget_bytes &&
        (!best || (!fallback_only && p.predicted_tpot_s < best->predicted_tpot_s))) {
      best = std::move(p);
      chosen = "all direct";
    }
  }
  if (trace) std::fprintf(stderr, "dak: plan trace: chosen: %s\n", best ? chosen.c_str() : "none fits");
  if (best && dropped && dropped->tpot_s < 0.995 * best->predicted_tpot_s) {
    best->notes.push_back(fmt::format(
        "a placement with staged linears was predicted faster ({:.3f} ms) but not taken: with its HBM staging ring "
        "it holds {} of HBM, more than the {} the model needs without offload, so it would free no HBM",
        dropped->tpot_s * 1e3, format_bytes(double(dropped->hbm_bytes)),
        format_bytes(double(capacity_.total_bytes))));
  }
  if (!best) {
    // A forced ratio that direct cannot meet either is refused, naming the ring as before.
    std::vector<Candidate> all;
    for (const Variant& v : variants_) all.emplace_back(&v.curves, v.mode);
    ring_does_not_fit(all, "--offload auto", "use --offload direct (no ring)");
  }
  return std::move(*best);
}

Plan Planner::refine_pipeline(Plan plan, const Variant& v, AllocatorKind allocator, std::optional<double> ratio,
                              int64_t required) const {
  // The allocators minimise the sum of per-operator times; a plan with staged linears runs as a
  // copy pipeline whose length that sum does not see: where attention reads host KV at the link
  // rate the copy engine idles, where the GEMMs outlast their copies the link does (Llama-2-7B batch
  // 512 at 10 %: the greedy put 99 % of layers 0-2's KV on the host; the step ran 41.1 ms, 1.054 x
  // the floor; docs/perf-notes.md, session 22). A local search on the replay: take a quarter or a
  // sixteenth of the host bytes of one of the four operators holding the most, give them to another
  // operator, keep the best such move while it shortens the predicted step by 0.1 %, and stop after
  // kRounds rounds; bytes may also go back to HBM where a smaller ring leaves room (a budget-bound
  // plan's ring had pushed them out). The host keeps at least `required` (the budget or the forced
  // ratio stays met), the ring (kStagingRingSlots slots of the largest staged part) inside the budget
  // and the HBM total within the model's own (auto_hbm_limit).
  constexpr int kRounds = 24;
  constexpr int kSources = 4;
  const Capacity& cap = capacity_;
  const int64_t hbm_limit = auto_hbm_limit();
  const size_t n_split = splittable_.size();
  std::vector<int64_t> h(n_split);
  for (size_t k = 0; k < n_split; ++k) h[k] = plan.ops[splittable_[k]].host_units;
  // Per operator, its cost at each host-unit count tried (op_cost is deterministic).
  std::vector<std::map<int64_t, OpCost>> costs(n_split);
  const auto cost_at = [&](size_t k, int64_t units) -> const OpCost& {
    auto [it, fresh] = costs[k].try_emplace(units);
    if (fresh) it->second = op_cost(graph_.ops[splittable_[k]], units, v.mode);
    return it->second;
  };
  std::vector<double> host_step(plan.ops.size(), 0.0);
  for (size_t k = 0; k < n_split; ++k) host_step[splittable_[k]] = cost_at(k, h[k]).host_step_bytes;
  // The moves patch `plan` in place (only the fields the replay reads): where no move pays, the plan
  // as it came is returned, not one half patched (its host_rows and totals would disagree with its
  // host units; a review of session 49).
  const Plan original = plan;
  // Patch operator k of `ops` to `units` host units (the fields the replay and the budget read).
  std::vector<PlanOp>& ops = plan.ops;
  const auto patch = [&](size_t k, int64_t units) {
    PlanOp& o = ops[splittable_[k]];
    const OpCost& c = cost_at(k, units);
    o.host_units = units;
    o.host_bytes = v.curves[k].host_bytes[size_t(units)];
    o.path = c.path;
    o.predicted_time_s = c.time_s, o.compute_s = c.compute_s, o.hbm_s = c.hbm_s, o.host_s = c.host_s;
    o.overhead_s = c.overhead_s;
    host_step[splittable_[k]] = c.host_step_bytes;
  };
  int64_t host_total = plan.totals.host_bytes;
  const int64_t host_least = required;  // the forced ratio's bytes, or what the budget forces
  // Operator k to `units` host units: the allocation, its host total and the patched operator together.
  const auto set_units = [&](size_t k, int64_t units) {
    host_total += v.curves[k].host_bytes[size_t(units)] - v.curves[k].host_bytes[size_t(h[k])];
    h[k] = units;
    patch(k, units);
  };
  const auto fits = [&](int64_t host) {
    int64_t largest = 0;
    for (const PlanOp& o : ops)
      if (o.path == DataPath::kStaged) largest = std::max(largest, o.host_bytes);
    return host >= host_least && host <= profile_.pinnable_host_bytes &&
           cap.total_bytes - host + kStagingRingSlots * largest <= hbm_limit;
  };
  double best_t = plan.predicted_tpot_s;
  bool moved = false;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<size_t> src;
    for (size_t k = 0; k < n_split; ++k)
      if (h[k] > 0) src.push_back(k);
    std::stable_sort(src.begin(), src.end(), [&](size_t a, size_t b) {
      return v.curves[a].host_bytes[size_t(h[a])] > v.curves[b].host_bytes[size_t(h[b])];
    });
    if (src.size() > size_t(kSources)) src.resize(size_t(kSources));
    double round_t = best_t * (1.0 - 1e-3);
    std::optional<std::pair<std::pair<size_t, int64_t>, std::pair<size_t, int64_t>>> round_move;
    for (size_t a : src) {
      const AllocCurve& ca = v.curves[a];
      const int64_t have = ca.host_bytes[size_t(h[a])];
      for (int64_t part : {4, 16}) {
        int64_t ha = h[a];
        while (ha > 0 && have - ca.host_bytes[size_t(ha)] < have / part) --ha;
        const int64_t taken = have - ca.host_bytes[size_t(ha)];
        if (taken <= 0) continue;
        // Back to HBM (where a smaller ring leaves room: the host keeps at least `required`).
        const int64_t a0 = h[a];
        set_units(a, ha);
        if (fits(host_total)) {
          const double t = prefetch_pipeline_s(ops, host_step);
          if (t < round_t) round_t = t, round_move = {{a, ha}, {a, ha}};
        }
        for (size_t b = 0; b < n_split; ++b) {
          if (b == a) continue;
          const AllocCurve& cb = v.curves[b];
          const int64_t base = cb.host_bytes[size_t(h[b])];
          int64_t hb = h[b];
          while (hb + 1 < int64_t(cb.host_bytes.size()) && cb.host_bytes[size_t(hb)] - base < taken) ++hb;
          const int64_t given = cb.host_bytes[size_t(hb)] - base;
          if (given < taken) continue;
          const int64_t b0 = h[b];
          set_units(b, hb);
          if (fits(host_total)) {
            const double t = prefetch_pipeline_s(ops, host_step);
            if (t < round_t) round_t = t, round_move = {{a, ha}, {b, hb}};
          }
          set_units(b, b0);
        }
        set_units(a, a0);
      }
    }
    if (!round_move) break;
    const auto [ma, mb] = *round_move;  // mb == ma: bytes back to HBM
    set_units(ma.first, ma.second);
    set_units(mb.first, mb.second);
    best_t = round_t;
    moved = true;
  }
  if (!moved) return original;
  Plan refined = assemble(evaluate_allocation(v.curves, h), v.mode, allocator, ratio);
  return refined.predicted_tpot_s < original.predicted_tpot_s && refined.totals.hbm_bytes <= hbm_limit ? refined
                                                                                                      : original;
}

std::optional<Plan> Planner::fit_staging_ring(const std::vector<AllocCurve>& curves, PathMode mode,
                                              AllocatorKind allocator, std::optional<double> ratio,
                                              int64_t required) const {
  // The engine's ring (kStagingRingSlots slots of the largest staged host part, gpu_engine.cc)
  // depends on the allocation: move what it takes over the budget to the host and allocate again
  // until the plan fits. Moving bytes can grow the largest staged part, and the ring with it, so
  // each round moves at least twice the previous one (a trial found budgets where adding just the
  // excess never converged); then a bisection finds the least host share that fits. A forced
  // ratio fixes the host share, so there the plan fits as it is or not at all.
  const Capacity& cap = capacity_;
  const int64_t movable = cap.splittable_weight_bytes + cap.kv_bytes;
  const int64_t most = std::min(movable, profile_.pinnable_host_bytes);
  const auto at = [&](int64_t host) { return assemble(run_allocator(allocator, curves, host), mode, allocator, ratio); };
  Plan p = at(required);
  if (p.totals.hbm_bytes <= cap.hbm_budget_bytes) return p;
  if (ratio) return std::nullopt;
  int64_t lo = required, hi = required, step = 0;  // lo: does not fit; hi: the next candidate
  for (int round = 0; p.totals.hbm_bytes > cap.hbm_budget_bytes; ++round) {
    if (hi >= most || round == 16) return std::nullopt;
    lo = hi;
    step = std::max(p.totals.hbm_bytes - cap.hbm_budget_bytes, 2 * step);
    hi = std::min(most, hi + step);
    p = at(hi);
  }
  for (int round = 0; round < 12 && hi - lo > (int64_t(1) << 20); ++round) {
    const int64_t mid = lo + (hi - lo) / 2;
    Plan q = at(mid);
    if (q.totals.hbm_bytes <= cap.hbm_budget_bytes) {
      hi = mid;
      p = std::move(q);
    } else {
      lo = mid;
    }
  }
  return p;
}

Plan Planner::assemble(const Allocation& a, PathMode mode, AllocatorKind allocator, std::optional<double> ratio) const {
  Plan p;
  PlanInputs& in = p.inputs;
  const StepShape& s = graph_.shape;
  in.model = request_.model_name;
  in.arch = arch_name(graph_.config.arch);
  in.phase = s.phase;
  in.batch = s.batch, in.prompt_len = s.prompt_len, in.gen_len = s.gen_len;
  in.context_len = s.phase == Phase::kDecode ? s.mean_decode_context() : s.prompt_len;
  in.max_context = s.max_context();
  in.gpu_memory_bytes = capacity_.hbm_budget_bytes;
  in.gpu_memory_default = !request_.gpu_memory_bytes.has_value() || request_.gpu_memory_is_profile_default;
  in.cpu_offload_bytes = request_.cpu_offload_bytes;
  in.offload_ratio = ratio;
  in.allocator = allocator;
  in.allow_staged = request_.allow_staged && !request_.single_path;
  in.offload_mode = offload_mode_name(request_.single_path);
  in.tile_rows = s.tile_rows, in.tile_n = s.tile_n;
  in.staging_chunk_bytes = request_.cost.staging_chunk_bytes;
  in.staging_ring_bytes = request_.staging_ring_chunks * request_.cost.staging_chunk_bytes;
  in.profile_name = profile_.name;
  in.profile_file = request_.profile_file;
  in.profile_version = HardwareProfile::kVersion;
  p.capacity = capacity_;

  PlanTotals& t = p.totals;
  double direct_step = 0, staged_step = 0, zero_copy_step = 0;
  std::vector<double> host_step_bytes;  // per operator: bytes crossing the host link this step
  size_t k = 0;  // index into the allocation (splittable ops only)
  for (size_t i = 0; i < graph_.ops.size(); ++i) {
    const Op& op = graph_.ops[i];
    int64_t h = 0;
    if (k < splittable_.size() && splittable_[k] == i) h = a.host_units[k++];
    const OpCost c = op_cost(op, h, mode);
    PlanOp o;
    o.name = op.name, o.role = op.role, o.layer = op.layer, o.kind = op.kind;
    o.m = op.m, o.n = op.n, o.k = op.k, o.batch = op.batch, o.q_len = op.q_len, o.context = op.context;
    o.heads = op.heads, o.kv_heads = op.kv_heads, o.head_dim = op.head_dim;
    // What the step reads: a prefill of several passes reads the weights once per pass.
    o.bytes = op.resident_bytes, o.step_bytes = op.step_bytes * double(op.passes), o.fixed_bytes = op.fixed_bytes,
    o.flops = op.flops;
    o.split_rows = op.split_rows, o.unit_rows = op.unit_rows, o.host_units = h, o.host_rows = op.host_rows(h);
    o.host_fraction = op.split_rows > 0 ? double(o.host_rows) / double(op.split_rows) : 0.0;
    o.host_bytes = op.host_resident_bytes(h);
    o.path = c.path, o.host_ctas = c.host_ctas, o.stages_per_cta = c.stages_per_cta, o.cluster = c.cluster;
    o.predicted_time_s = c.time_s, o.compute_s = c.compute_s, o.hbm_s = c.hbm_s, o.host_s = c.host_s;
    o.overhead_s = c.overhead_s, o.bound = c.bound;
    o.tensors = op.tensors, o.tied_to = op.tied_to;

    host_step_bytes.push_back(c.host_step_bytes);
    t.sum_op_time_s += c.time_s;
    t.overhead_s += c.overhead_s;
    t.host_bytes += o.host_bytes;
    if (c.path == DataPath::kDirect) t.direct_host_bytes += o.host_bytes, direct_step += c.host_step_bytes;
    if (c.path == DataPath::kZeroCopy) t.zero_copy_host_bytes += o.host_bytes, zero_copy_step += c.host_step_bytes;
    if (c.path == DataPath::kStaged) t.staged_host_bytes += o.host_bytes, staged_step += c.host_step_bytes;
    p.ops.push_back(std::move(o));
  }
  if (direct_step > 0 && staged_step > 0)
    t.link_floor_s = (direct_step + staged_step) / (profile_.host_shared_total_gbps * 1e9);
  // Zero-copy reads cross the link as SM loads: never faster than the SM path's B_h in all.
  if (zero_copy_step > 0) t.link_floor_s = zero_copy_step / (profile_.host_sm_read_gbps * 1e9);
  p.predicted_tpot_s = std::max(t.sum_op_time_s, t.link_floor_s);
  // Staged linears (--offload prefetch: every linear with host rows; auto: those the plan stages) go
  // through the engine's staging ring (kStagingRingSlots slots): the copies pipeline ahead of the kernels, so
  // the step is the pipeline's length, not the sum of per-operator staged costs (each of which pays
  // its own ring fill).
  const bool staged_plan = t.staged_host_bytes > 0;
  if (staged_plan) {
    t.prefetch_pipeline_s = prefetch_pipeline_s(p.ops, host_step_bytes);
    p.predicted_tpot_s = t.prefetch_pipeline_s;
  }
  if (!std::isfinite(p.predicted_tpot_s) || !(p.predicted_tpot_s > 0)) {
    fail(fmt::format("the predicted TPOT is not a positive finite time ({})", p.predicted_tpot_s), "planner",
         "check the hardware profile for bandwidths, rates or overheads that are zero, tiny or huge");
  }
  t.step_bytes = graph_.step_model_bytes();
  t.effective_bandwidth_gbps = t.step_bytes / p.predicted_tpot_s / 1e9;
  const int64_t movable = capacity_.splittable_weight_bytes + capacity_.kv_bytes;
  t.host_ratio = movable > 0 ? double(t.host_bytes) / double(movable) : 0.0;
  if (staged_plan) {
    // The engine's ring: kStagingRingSlots slots of the largest staged host part (gpu_engine.cc,
    // staging_slot_bytes), in every mode that stages. plan() moves what it takes over the budget to
    // the host (fit_staging_ring).
    int64_t largest = 0;
    for (const PlanOp& o : p.ops)
      if (o.path == DataPath::kStaged) largest = std::max(largest, o.host_bytes);
    t.staging_ring_bytes = kStagingRingSlots * largest;
  }
  t.hbm_bytes = capacity_.total_bytes - t.host_bytes + t.staging_ring_bytes;
  t.pin_time_s = double(t.host_bytes) / (profile_.pin_gib_per_s * 1073741824.0);
  return p;
}

double Planner::prefetch_pipeline_s(const std::vector<PlanOp>& ops, const std::vector<double>& host_step_bytes) const {
  // The engine (gpu_engine.cc): staged linears S_0..S_{n-1} in forward order through a ring of
  // kStagingRingSlots slots; the copy of S_k runs on the copy stream (one copy at a time) once the
  // copy of S_{k-1} is done and S_{k-slots} has released its slot; S_k waits for its copy (a CUDA
  // graph: only these dependencies order the nodes). A copy moves its host bytes, then pays one
  // copy node; a staged linear runs its HBM part (its compute, and HBM reads that include the
  // staged bytes) and its kernels; every other operator runs on the compute stream, reading its
  // direct host bytes over the same link.
  //
  // The link is shared: while a copy and a direct read are both in flight they get about
  // host_shared_total_gbps together, not B_ce + B_h (DESIGN.md §1, the probe's [hybrid] line). A
  // replay that let both run at full rate ignored that and tied placements that split the host
  // bytes differently between the paths (Llama-2-7B batch 8 at 10 %: 679 MiB direct + 623 staged
  // ran 20.865 ms, 410 + 892 ran 21.961, both predicted 20.500 at the floor; docs/perf-notes.md,
  // sessions 21 and 22). So this is a fluid simulation: between events every stream's rate is
  // constant; a direct read gets min(its own rate, its share of the shared total), a copy the rest
  // up to B_ce.
  const HardwareProfile& pr = profile_;
  const double t_step = pr.step_overhead_us() * 1e-6, t_copy_node = pr.kernel_overhead_us * 1e-6;
  const double ce_bps = pr.host_copy_engine_gbps * 1e9, shared_bps = pr.host_shared_total_gbps * 1e9;
  const double direct_share = pr.host_sm_read_gbps / (pr.host_sm_read_gbps + pr.host_copy_engine_gbps);
  const size_t slots = size_t(kStagingRingSlots);

  std::vector<double> copies;                          // bytes of each copy, in order
  std::vector<size_t> copy_of(ops.size(), SIZE_MAX);  // per operator: the copy feeding it
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].path == DataPath::kStaged && ops[i].host_bytes > 0) {
      copy_of[i] = copies.size();
      copies.push_back(host_step_bytes[i]);
    }
  }
  std::vector<double> copy_end(copies.size(), -1), gemm_end(copies.size(), -1);

  // Compute stream: operator ci, in one of three phases.
  enum class Phase { kStart, kWaitCopy, kRunning };
  size_t ci = 0;
  Phase phase = Phase::kStart;
  double link_left = 0, link_rate = 0;  // the running operator's direct host bytes still to read
  double body_end = 0;                  // when its non-link work is done (compute / HBM)
  double overhead = 0;                  // paid after both
  // Copy stream: copy pk, idle / moving bytes / paying its node.
  enum class CopyPhase { kIdle, kMoving, kNode };
  size_t pk = 0;
  CopyPhase cphase = CopyPhase::kIdle;
  double copy_left = 0, node_end = 0;
  double t = 0;
  constexpr double kEps = 1e-12;
  const size_t max_events = 8 * (ops.size() + copies.size()) + 64;  // each iteration ends at least one phase
  for (size_t events = 0; ci < ops.size() && events < max_events; ++events) {
    const PlanOp& o = ops[ci];
    if (phase == Phase::kStart) {
      if (copy_of[ci] != SIZE_MAX) {
        phase = Phase::kWaitCopy;
      } else {
        const bool direct = o.path == DataPath::kDirect && host_step_bytes[ci] > 0 && o.host_s > 0;
        link_left = direct ? host_step_bytes[ci] : 0;
        link_rate = direct ? host_step_bytes[ci] / o.host_s : 0;
        body_end = t + (direct ? std::max(o.compute_s, o.hbm_s) : o.predicted_time_s - o.overhead_s);
        overhead = o.overhead_s;
        phase = Phase::kRunning;
      }
    }
    if (phase == Phase::kWaitCopy && copy_end[copy_of[ci]] >= 0) {
      link_left = 0;
      body_end = std::max(t, copy_end[copy_of[ci]]) + std::max(o.compute_s, o.hbm_s);
      overhead = double(graph_.ops[ci].kernels) * t_step;
      phase = Phase::kRunning;
    }
    if (cphase == CopyPhase::kIdle && pk < copies.size() && (pk == 0 || copy_end[pk - 1] >= 0) &&
        (pk < slots || gemm_end[pk - slots] >= 0)) {
      cphase = CopyPhase::kMoving;
      copy_left = copies[pk];
    }
    // Rates until the next event.
    const bool reading = phase == Phase::kRunning && link_left > 0;
    const bool moving = cphase == CopyPhase::kMoving && copy_left > 0;
    double rc = link_rate, rp = ce_bps;
    if (reading && moving) {
      rc = std::min(link_rate, shared_bps * direct_share);
      rp = std::min(ce_bps, shared_bps - rc);
    }
    const double read_done = reading ? link_left / rc : INFINITY, move_done = moving ? copy_left / rp : INFINITY;
    double dt = INFINITY;
    if (phase == Phase::kRunning) dt = reading ? read_done : std::max(0.0, body_end + overhead - t);
    if (moving) dt = std::min(dt, move_done);
    if (cphase == CopyPhase::kMoving && copy_left <= 0) dt = 0;
    if (cphase == CopyPhase::kNode) dt = std::min(dt, std::max(0.0, node_end - t));
    if (!std::isfinite(dt)) break;  // nothing can finish: cannot happen (refused below)
    t += dt;
    // A stream whose end set dt is done: left to the subtraction, (x / r) * r can leave an ulp of x
    // that then takes an event per step without moving t (the session-23 trial's measured profile,
    // B_h = 51.441445750623956 GB/s, ran out of events on half its plans).
    if (reading) link_left = read_done <= dt ? 0.0 : std::max(0.0, link_left - rc * dt);
    if (moving) copy_left = move_done <= dt ? 0.0 : std::max(0.0, copy_left - rp * dt);
    // Events. An operator ends once its direct read and its body are done, then its overhead.
    if (phase == Phase::kRunning && link_left <= 0 && t + kEps >= body_end + overhead) {
      if (copy_of[ci] != SIZE_MAX) gemm_end[copy_of[ci]] = t;
      ++ci;
      phase = Phase::kStart;
    }
    if (cphase == CopyPhase::kMoving && copy_left <= 0) {
      cphase = CopyPhase::kNode;
      node_end = t + t_copy_node;
    } else if (cphase == CopyPhase::kNode && t + kEps >= node_end) {
      copy_end[pk++] = t;
      cphase = CopyPhase::kIdle;
    }
  }
  if (ci < ops.size())
    fail(fmt::format("the copy-pipeline replay stopped at operator {} of {} ({} of {} copies done)", ci, ops.size(),
                     pk, copies.size()),
         "planner", "report this plan request as a bug (dak plan --output json with the same flags)");
  return t;
}

Plan make_plan(const ModelConfig& config, const HardwareProfile& profile, const PlanRequest& request) {
  return Planner(config, profile, request).plan();
}

std::vector<RatioSweepRow> sweep_offload_ratio(const ModelConfig& config, const HardwareProfile& profile,
                                               const PlanRequest& request, const std::vector<double>& ratios,
                                               const std::function<void(size_t, size_t)>& progress) {
  Planner planner(config, profile, request);
  std::vector<RatioSweepRow> rows;
  for (double r : ratios) {
    RatioSweepRow row;
    row.ratio = r;
    try {
      row.greedy_tpot_s = planner.plan(AllocatorKind::kGreedy, r).predicted_tpot_s;
      row.uniform_tpot_s = planner.plan(AllocatorKind::kUniform, r).predicted_tpot_s;
      row.speedup = row.uniform_tpot_s / row.greedy_tpot_s;
    } catch (const Error& e) {
      row.refused = e.what_part();
    }
    rows.push_back(row);
    if (progress) progress(rows.size(), ratios.size());
  }
  return rows;
}

}  // namespace dak
