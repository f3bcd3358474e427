#include "core/bench_attention_policy.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include "core/env.h"
#include "core/error.h"
#include "core/tiered_attention_schedule.h"

namespace dak {

int64_t attention_bench_kv_pad_rows() {
  static const int64_t pad = [] {
    const char* env = std::getenv("DAK_BENCH_KV_PAD_ROWS");
    if (env == nullptr || *env == '\0') return int64_t(0);
    const int32_t n = env_decimal(env, 4);
    if (n >= 0 && n <= 4096) return int64_t(n);
    std::fprintf(stderr, "dak: notice: DAK_BENCH_KV_PAD_ROWS='%s' ignored (expected a whole number of rows, 0 to 4096)\n",
                 env_printable(env).c_str());
    return int64_t(0);
  }();
  return pad;
}

TieredAttentionLinkLimits attention_bench_limits(TieredAttentionLinkLimits limits, int32_t host_ctas,
                                                 int32_t host_stages) {
  if (host_ctas > 0 || host_stages > 0) limits.host_warps_below_4 = false;
  return limits;
}

void apply_attention_bench_overrides(TieredAttentionSchedule& schedule, int32_t host_ctas, int32_t host_stages,
                                     int32_t hbm_stages, int64_t sm_count, int64_t ctas_per_sm) {
  if (host_ctas > 0 && schedule.host_ctas > 0) {
    // The HBM side is counted again for the new host CTAs, by the plan's rule: it takes the slots
    // they leave (fewer host CTAs leave more), at least 1 CTA (past the slots the launch runs in waves).
    schedule.host_ctas = host_ctas;
    schedule.hbm_ctas = tiered_attention_hbm_ctas(schedule, sm_count, ctas_per_sm);
  }
  if (host_stages > 0) schedule.host_stages = host_stages;
  if (hbm_stages > 0) schedule.hbm_stages = hbm_stages;
  refit_smem_merge(schedule);
}

TieredAttentionSchedule plan_attention_bench_point(const TieredAttentionShape& shape, int64_t b_host, int64_t sm_count,
                                                   const TieredAttentionLinkLimits& limits, int32_t host_ctas,
                                                   int32_t host_stages, int32_t hbm_stages,
                                                   const std::function<int(const TieredAttentionSchedule&)>& ctas_per_sm) {
  const auto planned = [&](int64_t per_sm) {
    TieredAttentionSchedule s = plan_tiered_attention(shape, b_host, sm_count, per_sm, limits);
    apply_attention_bench_overrides(s, host_ctas, host_stages, hbm_stages, sm_count, per_sm);
    return s;
  };
  TieredAttentionSchedule s = planned(2);
  const int per_sm = ctas_per_sm(s);
  if (per_sm < 1) {
    fail(fmt::format("the tiered attention kernel does not fit on an SM with {} bytes of SMEM", s.smem_bytes()),
         "dak bench attention " + s.to_string(),
         "use shallower rings (--host-stages / --hbm-stages, or unset DAK_ATTN_HBM_STAGES)");
  }
  if (per_sm != 2) s = planned(per_sm);
  s.validate();
  return s;
}

}  // namespace dak
