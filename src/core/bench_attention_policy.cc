#include "core/bench_attention_policy.h"

#include <cstdio>
#include <cstdlib>

#include "core/env.h"

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

}  // namespace dak
