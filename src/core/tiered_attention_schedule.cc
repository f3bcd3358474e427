#include "core/tiered_attention_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/env.h"
#include "core/error.h"
#include "core/hardware_profile.h"

namespace dak {
namespace {

namespace ta = tiered_attention;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t align256(int64_t b) { return (b + 255) / 256 * 256; }

constexpr int64_t kReferenceCtasPerSm = 2;  // workers assumed by the split heuristic
constexpr int64_t kItemOverheadSteps = 2;   // per-item cost (q load, partial write) in 16-key steps
constexpr int64_t kMaxSplits = 4096;
// The split rule's merge and occupancy terms (choose_tiered_attention_split), fitted to Llama-2-7B
// decode at 64 keys on the H100 (docs/perf-notes.md session 34: 1, 2 and 4 splits at batch 1 and 8;
// a 16-key step ~1.7 us, a merge of split sequences ~3.2 us, CTAs filling every SM ~2.7 us of the
// next kernel's early start).
constexpr int64_t kMergeSteps = 2;     // the merge of a split sequence (partials, barrier), in steps
constexpr int64_t kOccupancyNum = 4;   // steps per launch whose CTAs fill every SM once: 4 / 3
constexpr int64_t kOccupancyDen = 3;
// Two splits become four where each of the four, the last too, keeps at least this many 16-key
// steps (128 keys; from 512 keys on). Measured on the H100 (docs/perf-notes.md session 46): never
// slower than two by more than the run-to-run spread, up to 7 points of ideal faster at 512 keys.
constexpr int64_t kFourSplitMinSteps = 8;

}  // namespace

TieredAttentionLinkLimits tiered_attention_link_limits(const HardwareProfile& profile) {
  TieredAttentionLinkLimits l;
  if (profile.host_inflight_cap_bytes > 0) l.inflight_cap_bytes = std::min(l.inflight_cap_bytes, profile.host_inflight_cap_bytes);
  if (profile.max_stages_per_cta > 0 && profile.host_stage_bytes > 0) {
    l.cta_inflight_cap_bytes = profile.max_stages_per_cta * profile.host_stage_bytes;
  }
  return l;
}

int64_t TieredAttentionSchedule::smem_bytes() const {
  int64_t b = 0;
  if (host_ctas > 0) b = std::max(b, ta::host_cta_smem_bytes(shape.head_dim, host_stages, host_warps));
  if (hbm_ctas > 0) b = std::max(b, hbm_cta_smem_bytes(hbm_stages));
  if (smem_merge) b += ta::merge_smem_bytes(shape.group(), shape.head_dim);
  return b;
}

int64_t TieredAttentionSchedule::hbm_cta_smem_bytes(int64_t stages) const {
  return hbm_staged ? ta::host_cta_smem_bytes(shape.head_dim, stages) : ta::hbm_cta_smem_bytes(shape.head_dim, stages);
}

int64_t TieredAttentionSchedule::host_inflight_bytes() const {
  return int64_t(host_ctas) * host_warps * host_stages * ta::staging_step_bytes(shape.head_dim);
}

int64_t TieredAttentionSchedule::workspace_o_offset() const {
  return align256(shape.batch * shape.num_heads * split.num_splits * 2 * 4);
}

int64_t TieredAttentionSchedule::workspace_bytes() const {
  return workspace_o_offset() + align256(shape.batch * shape.num_heads * split.num_splits * shape.head_dim * 4);
}

void check_tiered_attention_shape(const TieredAttentionShape& s) {
  const std::string where = fmt::format("tiered attention shape B={} H={} Hkv={} D={} max_ctx={}", s.batch,
                                        s.num_heads, s.num_kv_heads, s.head_dim, s.max_ctx);
  if (s.batch < 1 || s.max_ctx < 1 || s.max_ctx > std::numeric_limits<int32_t>::max() - ta::kStepKeys) {
    fail("batch and context must be positive (context below 2^31 - 16)", where, "give B >= 1 and max_ctx >= 1");
  }
  if (!ta::head_dim_supported(s.head_dim)) {
    fail(fmt::format("head_dim {} is not compiled", s.head_dim), where,
         "tiered attention supports head_dim 64, 80, 96, 128 and 256");
  }
  if (s.num_kv_heads < 1 || s.num_heads < 1 || s.num_heads % s.num_kv_heads != 0 ||
      s.group() > ta::kMaxGroup) {
    fail(fmt::format("{} query heads over {} kv heads", s.num_heads, s.num_kv_heads), where,
         "H must be a multiple of Hkv with at most 16 query heads per kv head (GQA/MQA group 1..16)");
  }
}

void TieredAttentionSchedule::validate() const {
  check_tiered_attention_shape(shape);
  const std::string where = "tiered attention schedule " + to_string();
  if (b_host < 0 || b_host > shape.batch) {
    fail(fmt::format("{} host sequences outside [0, B = {}]", b_host, shape.batch), where, "give 0 <= b_host <= B");
  }
  if (split.split_keys < ta::kStepKeys || split.split_keys % ta::kStepKeys != 0 || split.num_splits < 1 ||
      int64_t(split.split_keys) * split.num_splits < shape.max_ctx ||
      int64_t(split.split_keys) * (split.num_splits - 1) >= shape.max_ctx) {
    fail(fmt::format("split {} x {} keys does not cover max_ctx {} exactly", split.num_splits, split.split_keys,
                     shape.max_ctx),
         where, "use choose_tiered_attention_split() (split_keys a multiple of 16, no always-empty split)");
  }
  if (host_ctas < 0 || hbm_ctas < 0 || (host_items() > 0 && host_ctas < 1) || (hbm_items() > 0 && hbm_ctas < 1)) {
    fail(fmt::format("{} host items on {} host CTAs and {} HBM items on {} HBM CTAs", host_items(), host_ctas,
                     hbm_items(), hbm_ctas),
         where, "give every side that has sequences at least one CTA");
  }
  if (host_stages < 1 || host_stages > ta::kMaxStages || hbm_stages < 1 || hbm_stages > ta::kMaxStages) {
    fail(fmt::format("stages in flight host {} / HBM {} outside [1, {}]", host_stages, hbm_stages, ta::kMaxStages),
         where, "use 1 to 8 steps in flight per warp");
  }
  if (host_warps != 1 && host_warps != 2 && host_warps != ta::kWarps) {
    fail(fmt::format("{} warps per host CTA", host_warps), where, "run 1, 2 or 4 warps per host CTA");
  }
  if (cta_combine && host_items() > 0 && host_warps % split.num_splits != 0) {
    fail(fmt::format("the splits are merged in the CTA but a host CTA runs {} warp{} for {} splits", host_warps,
                     host_warps == 1 ? "" : "s", split.num_splits),
         where, "run a multiple of num_splits warps per host CTA (4 always is)");
  }
  if (cta_combine && !ta::cta_combine_possible(split.num_splits)) {
    fail(fmt::format("the splits are merged in the CTA but there are {} of them", split.num_splits), where,
         fmt::format("merge in the CTA only with 2 or 4 splits (a divisor of the {} warps of a CTA)", ta::kWarps));
  }
  if (smem_merge && !cta_combine) {
    fail("the partials are merged in SMEM but the splits are not merged in the CTA", where,
         "set smem_merge only together with cta_combine");
  }
  if (smem_bytes() > ta::kSmemLimitBytes) {
    fail(fmt::format("{} bytes of SMEM per CTA exceed the {} byte limit", smem_bytes(), ta::kSmemLimitBytes), where,
         "use fewer host or HBM stages");
  }
}

std::string TieredAttentionSchedule::to_string() const {
  // Host CTAs that run fewer than 4 warps say so: "host_ctas=8x4 stages (2 warps)".
  const std::string warps =
      host_warps == ta::kWarps ? std::string() : fmt::format(" ({} warp{})", host_warps, host_warps == 1 ? "" : "s");
  return fmt::format("B={} H={} Hkv={} D={} max_ctx={} b_host={} split={}x{} host_ctas={}x{} stages{} "
                     "hbm_ctas={}x{} stages{}{}",
                     shape.batch, shape.num_heads, shape.num_kv_heads, shape.head_dim, shape.max_ctx, b_host,
                     split.num_splits, split.split_keys, host_ctas, host_stages, warps, hbm_ctas, hbm_stages,
                     hbm_ctas == 0 ? "" : hbm_staged ? " (staged)" : hbm_bulk_rows ? " (bulk rows)" : "",
                     cta_combine ? (smem_merge ? " (combine in CTA, SMEM)" : " (combine in CTA)") : "");
}

TieredAttentionSplit choose_tiered_attention_split(const TieredAttentionShape& s, int64_t sm_count) {
  check_tiered_attention_shape(s);
  const int64_t sms = std::max<int64_t>(1, sm_count);
  const int64_t steps = ceil_div(s.max_ctx, ta::kStepKeys);  // 16-key steps of the longest sequence
  const int64_t pairs = s.batch * s.num_kv_heads;
  const int64_t workers = ta::kWarps * kReferenceCtasPerSm * sms;
  // DAK_ATTN_SPLIT_RULE (A/B runs): makespan, the rule before session 34 (no merge or occupancy
  // term, two splits kept); two, the rule before session 46 (two splits kept).
  static const int rule = env_choice("DAK_ATTN_SPLIT_RULE", {"makespan", "two"});
  const bool makespan_only = rule == 0;
  int64_t best_cost = std::numeric_limits<int64_t>::max();
  int64_t best_steps = steps;
  for (int64_t n = 1; n <= std::min(steps, kMaxSplits); ++n) {
    const int64_t per_split = ceil_div(steps, n);
    const int64_t used = ceil_div(steps, per_split);  // no always-empty split
    if (used != n) continue;
    const int64_t makespan = ceil_div(pairs * used, workers) * (per_split + kItemOverheadSteps);
    int64_t cost = makespan;
    if (!makespan_only) {
      // In units of 1 / (kOccupancyDen * sms) step: the makespan, the merge of split sequences, and
      // the SMs the launch occupies (CTAs / sms, at most kReferenceCtasPerSm), which the next
      // kernel's early CTAs cannot use.
      const int64_t ctas = std::min(ceil_div(pairs * used, ta::kWarps), kReferenceCtasPerSm * sms);
      cost = (makespan + (used > 1 ? kMergeSteps : 0)) * kOccupancyDen * sms + kOccupancyNum * ctas;
    }
    if (cost < best_cost) {
      best_cost = cost;
      best_steps = per_split;
    }
  }
  // Two splits of whole CTA-merged pairs run as four where each keeps kFourSplitMinSteps steps
  // (session 46, H100: Llama-3-8B 64 x 512 76 -> 80 % of ideal, OPT-30B 8 x 512 77 -> 84 %, 64 x
  // 512 87 -> 89 %; 4096 and 32768 keys within +-0.5). Both merge in the CTA; the model above
  // prices the second round of half-length items higher than what they measured.
  if (rule < 0 && ceil_div(steps, best_steps) == 2 && steps - 3 * ceil_div(steps, 4) >= kFourSplitMinSteps) {
    best_steps = ceil_div(steps, 4);  // 4 splits, the last the shortest
  }
  // DAK_ATTN_SPLITS=1..16 (A/B runs, session 46): steps per split as for that many splits (fewer
  // where the context holds fewer steps); the bits follow the split, the same at every b_host.
  static const int forced_splits = env_choice("DAK_ATTN_SPLITS", {"1", "2", "3", "4", "5", "6", "7", "8", "9", "10",
                                                                  "11", "12", "13", "14", "15", "16"});
  if (forced_splits >= 0) best_steps = ceil_div(steps, std::min<int64_t>(steps, forced_splits + 1));
  TieredAttentionSplit r;
  r.split_keys = int32_t(best_steps * ta::kStepKeys);
  r.num_splits = int32_t(ceil_div(s.max_ctx, r.split_keys));
  if (forced_splits >= 0 && r.num_splits != forced_splits + 1) {
    // Splits are equal runs of whole 16-key steps: N of them exist only where ceil(steps / N)-step
    // runs need all N (9 at 512 keys, 32 steps: 4 steps each fill 8 splits).
    env_notice_once(fmt::format("DAK_ATTN_SPLITS at {} keys", s.max_ctx),
                    fmt::format("DAK_ATTN_SPLITS={} gives {} splits of {} keys at a context of {} (splits are equal "
                                "runs of whole 16-key steps)",
                                forced_splits + 1, r.num_splits, r.split_keys, s.max_ctx));
  }
  return r;
}

TieredAttentionSchedule plan_tiered_attention(const TieredAttentionShape& shape, int64_t b_host, int64_t sm_count,
                                              int64_t hbm_ctas_per_sm, const TieredAttentionLinkLimits& limits) {
  check_tiered_attention_shape(shape);
  if (b_host < 0 || b_host > shape.batch || sm_count < 2 || hbm_ctas_per_sm < 1) {
    fail(fmt::format("b_host {} of B {} on {} SMs with {} HBM CTAs per SM", b_host, shape.batch, sm_count,
                     hbm_ctas_per_sm),
         "plan_tiered_attention", "give 0 <= b_host <= B, at least 2 SMs and at least one CTA per SM");
  }
  const int64_t d = shape.head_dim;
  TieredAttentionSchedule s;
  s.shape = shape;
  s.b_host = b_host;
  s.split = choose_tiered_attention_split(shape, sm_count);
  s.hbm_staged = s.split.split_keys >= ta::kStagedMinKeys;
  // A/B of the HBM load path (docs/perf-notes.md sessions 16 and 32): DAK_ATTN_HBM_COPY forces one.
  static const int forced_copy = env_choice("DAK_ATTN_HBM_COPY", {"cp.async", "bulk", "staged"});
  if (forced_copy >= 0) {
    s.hbm_bulk_rows = forced_copy == 1;
    s.hbm_staged = forced_copy == 2;
  }
  s.cta_combine = ta::cta_combine_possible(s.split.num_splits);
  // A/B of where split sequences are merged (docs/perf-notes.md sessions 17 and 32):
  // DAK_ATTN_COMBINE=kernel (the combine kernel) or cta (the plan: in the CTA where the split allows
  // it, else the kernel).
  static const int forced_combine = env_choice("DAK_ATTN_COMBINE", {"kernel", "cta"});
  if (forced_combine == 0) s.cta_combine = false;

  s.hbm_stages = 2;
  for (int32_t st = ta::kMaxStages; st > 2; --st) {
    if (s.hbm_cta_smem_bytes(st) <= ta::kSmemTargetBytes) {
      s.hbm_stages = st;
      break;
    }
  }
  // A/B of the HBM ring depth (docs/perf-notes.md session 40): DAK_ATTN_HBM_STAGES=2..8 forces it
  // (deeper rings leave fewer CTAs per SM) where its ring fits a CTA's SMEM at this head_dim and
  // load path; a depth that does not is ignored with a notice (once per head_dim and path), as any
  // A/B switch's unusable value is.
  static const int forced_stages = env_choice("DAK_ATTN_HBM_STAGES", {"2", "3", "4", "5", "6", "7", "8"});
  if (forced_stages >= 0) {
    const int32_t st = forced_stages + 2;
    if (s.hbm_cta_smem_bytes(st) <= ta::kSmemLimitBytes) {
      s.hbm_stages = st;
    } else {
      env_notice_once(fmt::format("DAK_ATTN_HBM_STAGES at head_dim {}, {}", d, s.hbm_staged),
                      fmt::format("DAK_ATTN_HBM_STAGES={} ignored at head_dim {} (a ring of {} {} steps needs {} bytes "
                                  "of SMEM per CTA, more than the {} a plan may take); the plan keeps {}",
                                  st, d, st, s.hbm_staged ? "staged" : "padded", s.hbm_cta_smem_bytes(st),
                                  ta::kSmemLimitBytes, s.hbm_stages));
    }
  }
  const int64_t host_budget = std::max(ta::kSmemTargetBytes, s.hbm_cta_smem_bytes(s.hbm_stages));
  // Host bytes a host CTA of `warps` working warps keeps in flight with `stages` steps each.
  const auto ring_bytes = [&](int32_t warps, int32_t stages) {
    return int64_t(warps) * stages * ta::staging_step_bytes(d);
  };
  // Whether such a CTA fits the SMEM budget and the per-CTA in-flight cap (the 4-warp ring below,
  // the 2- and 1-warp candidates further down).
  const auto host_ring_fits = [&](int32_t warps, int32_t stages) {
    return ta::host_cta_smem_bytes(d, stages, warps) <= host_budget &&
           ring_bytes(warps, stages) <= limits.cta_inflight_cap_bytes;
  };
  s.host_stages = 1;
  for (int32_t st = 4; st > 1; --st) {
    if (host_ring_fits(ta::kWarps, st)) {
      s.host_stages = st;
      break;
    }
  }

  if (s.host_items() > 0) {
    // Host CTAs for `warps` busy warps with `stages` steps in flight each: the in-flight cap's worth,
    // at most one per `warps` host items, and one SM left to the HBM side.
    const auto host_ctas_for = [&](int32_t warps, int32_t stages) {
      int64_t ctas = std::max<int64_t>(1, limits.inflight_cap_bytes / ring_bytes(warps, stages));
      ctas = std::min(ctas, ceil_div(s.host_items(), warps));
      if (s.hbm_items() > 0) ctas = std::min(ctas, sm_count - 1);
      return int32_t(std::max<int64_t>(1, ctas));
    };
    s.host_ctas = host_ctas_for(ta::kWarps, s.host_stages);
    // Fewer warps per host CTA with deeper rings (host_warps, above): a candidate replaces the
    // 4-warp plan only with more bytes in flight on its busy warps, no more rounds of host items
    // and no fewer HBM CTAs (its host CTAs take only slots the HBM side leaves empty); the most
    // bytes in flight, then the most busy warps, then the first found (2 warps before 1, deeper
    // rings on fewer CTAs first).
    // Read only where it can matter (a host override plans without it), so a bad value's notice
    // does not come with runs it cannot change.
    const bool spread = limits.host_warps_below_4 && [] {
      static const bool on = env_flag("DAK_ATTN_HOST_SPREAD", true);
      return on;
    }();
    struct Candidate {
      int32_t warps, stages, ctas;
      int64_t busy, inflight, host_rounds, hbm_ctas;
    };
    const auto candidate = [&](int32_t warps, int32_t stages) {
      Candidate c{warps, stages, host_ctas_for(warps, stages), 0, 0, 0, 0};
      const int64_t workers = int64_t(c.ctas) * warps;
      c.busy = std::min(s.host_items(), workers);
      c.inflight = c.busy * stages * ta::staging_step_bytes(d);
      c.host_rounds = ceil_div(s.host_items(), workers);
      TieredAttentionSchedule t = s;
      t.host_ctas = c.ctas;
      c.hbm_ctas = tiered_attention_hbm_ctas(t, sm_count, hbm_ctas_per_sm);
      return c;
    };
    // Whether `warps` x `stages` rings keep the SMEM merge (refit_smem_merge) where the 4-warp plan
    // has it: a deeper ring must not cost every CTA of the launch its SMEM merge.
    const auto merges_in_smem = [&](int32_t warps, int32_t stages) {
      TieredAttentionSchedule t = s;
      t.hbm_ctas = s.hbm_items() > 0 ? 1 : 0;  // its ring counts too (hbm_ctas is set below)
      t.host_warps = warps;
      t.host_stages = stages;
      refit_smem_merge(t);
      return t.smem_merge;
    };
    const bool four_merges_in_smem = merges_in_smem(ta::kWarps, s.host_stages);
    const Candidate four = candidate(ta::kWarps, s.host_stages);
    Candidate best = four;
    for (const int32_t warps : {2, 1}) {
      if (!spread || (s.cta_combine && warps % s.split.num_splits != 0)) continue;
      for (int32_t st = ta::kMaxStages; st >= 1; --st) {
        if (!host_ring_fits(warps, st) || ring_bytes(warps, st) > limits.inflight_cap_bytes) {
          continue;
        }
        const Candidate c = candidate(warps, st);
        if (c.inflight <= four.inflight || c.host_rounds > four.host_rounds || c.hbm_ctas < four.hbm_ctas) continue;
        if (four_merges_in_smem && !merges_in_smem(warps, st)) continue;
        if (c.inflight > best.inflight || (c.inflight == best.inflight && c.busy > best.busy)) best = c;
      }
    }
    s.host_warps = best.warps;
    s.host_stages = best.stages;
    s.host_ctas = best.ctas;
  }
  s.hbm_ctas = tiered_attention_hbm_ctas(s, sm_count, hbm_ctas_per_sm);  // 0 without HBM items
  // DAK_ATTN_HBM_WAVES=1 (A/B runs, session 46): one HBM CTA per 4 items (each warp one item, the
  // CTAs in waves as SM slots free up), so the block scheduler balances the HBM side's work instead
  // of a fixed stride of items per persistent warp. Only the launch's HBM CTAs change: the host
  // side is planned against the slots, as without it.
  static const bool waves = env_flag("DAK_ATTN_HBM_WAVES", false);
  if (waves && s.hbm_items() > 0) {
    s.hbm_ctas = int32_t(std::min<int64_t>(ceil_div(s.hbm_items(), ta::kWarps), std::numeric_limits<int32_t>::max()));
  }
  refit_smem_merge(s);
  s.validate();
  return s;
}

int32_t tiered_attention_hbm_ctas(const TieredAttentionSchedule& schedule, int64_t sm_count, int64_t ctas_per_sm) {
  if (schedule.hbm_items() == 0) return 0;
  // Every CTA of the launch takes the same SMEM, so the SMs hold sm_count * ctas_per_sm CTAs of
  // either side: the HBM side takes every slot the host CTAs leave (docs/perf-notes.md session 44).
  // DAK_ATTN_HBM_FILL=0 (A/B runs) keeps the rule before, which left ctas_per_sm - 1 slots empty
  // for each host CTA, as if a host CTA took a whole SM.
  static const bool fill = env_flag("DAK_ATTN_HBM_FILL", true);
  const int64_t host = schedule.host_ctas;
  const int64_t ctas = fill ? sm_count * ctas_per_sm - host : (sm_count - host) * ctas_per_sm;
  return int32_t(std::clamp<int64_t>(ctas, 1, std::max<int64_t>(1, ceil_div(schedule.hbm_items(), ta::kWarps))));
}

void refit_smem_merge(TieredAttentionSchedule& schedule) {
  // The CTA merge through SMEM (TieredAttentionSchedule::smem_merge; docs/perf-notes.md sessions
  // 40-43), where its area costs no CTA per SM: the total stays within the 2-CTA limit
  // (kSmemTwoCtaBytes) when the rings were within it, else within the per-CTA limit.
  // DAK_ATTN_SMEM_MERGE=0 turns it off (A/B runs).
  static const bool enabled = env_flag("DAK_ATTN_SMEM_MERGE", true);
  schedule.smem_merge = false;
  if (!enabled || !schedule.cta_combine) return;
  const int64_t rings = schedule.smem_bytes();
  const int64_t cap = rings <= ta::kSmemTwoCtaBytes ? ta::kSmemTwoCtaBytes : ta::kSmemLimitBytes;
  schedule.smem_merge = rings + ta::merge_smem_bytes(schedule.shape.group(), schedule.shape.head_dim) <= cap;
}

}  // namespace dak
