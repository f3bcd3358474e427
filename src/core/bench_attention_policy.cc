#include "core/bench_attention_policy.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/env.h"
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

void apply_attention_bench_overrides(TieredAttentionSchedule& schedule, int32_t host_ctas, int32_t host_stages,
                                     int32_t hbm_stages, int64_t cta_slots) {
  if (host_ctas > 0 && schedule.host_ctas > 0) {
    schedule.host_ctas = host_ctas;
    // The plan's HBM side fills the CTA slots its host CTAs leave (plan_tiered_attention): host CTAs
    // beyond them take their slots from it, so the launch stays one wave (the HBM side keeps >= 1).
    if (schedule.hbm_ctas > 0) {
      schedule.hbm_ctas = int32_t(std::clamp<int64_t>(cta_slots - host_ctas, 1, schedule.hbm_ctas));
    }
  }
  if (host_stages > 0) schedule.host_stages = host_stages;
  if (hbm_stages > 0) schedule.hbm_stages = hbm_stages;
  refit_smem_merge(schedule);
}

}  // namespace dak
