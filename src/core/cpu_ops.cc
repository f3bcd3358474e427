#include "core/cpu_ops.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <mutex>
#include <numbers>
#include <string>
#include <thread>

#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DAK_CPU_X86 1
#include <immintrin.h>
#else
#define DAK_CPU_X86 0
#endif

namespace dak::cpu {

namespace {

inline float dot(const float* a, const float* b, int64_t k) {
  float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < k; ++i) acc += a[i] * b[i];
  return acc;
}

// linear(): every output y[token, row] is summed in one order, whatever the token count and the
// token's place in its block of 4. The README promises that a sequence on the CPU path gets the
// same ids in any batch (--max-batch), and a batched prefill mixes several sequences' tokens.

// T tokens against one weight row (the row is loaded once for all of them), out[j] = the dot
// product of token j in an order the source fixes: 8 partial sums (element i into sum i % 8), added
// ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)), then the K % 8 tail. A vectorizer may keep the
// 8 sums in lanes, but cannot reorder them (no reduction clause; cpu_ops.cc is built with
// -ffp-contract=off), so T = 1 and T = 4 give a token the same bits.
template <int T>
inline void dot_rows(const float* w, const float* const* xs, int64_t k, float* out) {
  float s[T][8] = {};
  const int64_t k8 = k / 8 * 8;
  for (int64_t i = 0; i < k8; i += 8) {
    for (int j = 0; j < T; ++j) {
#pragma omp simd
      for (int l = 0; l < 8; ++l) s[j][l] += w[i + l] * xs[j][i + l];  // lanes apart: no reordering
    }
  }
  for (int j = 0; j < T; ++j) {
    float acc = ((s[j][0] + s[j][1]) + (s[j][2] + s[j][3])) + ((s[j][4] + s[j][5]) + (s[j][6] + s[j][7]));
    for (int64_t i = k8; i < k; ++i) acc += w[i] * xs[j][i];
    out[j] = acc;
  }
}

// y[:, r0:r1] of linear(): every token against weight rows [r0, r1), tokens in blocks of 4.
using RowsKernel = void (*)(const float* x, int64_t t, int64_t k, const float* w, const float* bias,
                            int64_t m, float* y, int64_t r0, int64_t r1);

void rows_portable(const float* x, int64_t t, int64_t k, const float* w, const float* bias, int64_t m,
                   float* y, int64_t r0, int64_t r1) {
  int64_t t0 = 0;
  for (; t0 + 4 <= t; t0 += 4) {
    const float* xs[4] = {x + t0 * k, x + (t0 + 1) * k, x + (t0 + 2) * k, x + (t0 + 3) * k};
    for (int64_t r = r0; r < r1; ++r) {
      float acc[4];
      dot_rows<4>(w + r * k, xs, k, acc);
      const float b = bias ? bias[r] : 0.0f;
      for (int64_t i = 0; i < 4; ++i) y[(t0 + i) * m + r] = acc[i] + b;
    }
  }
  for (; t0 < t; ++t0) {
    const float* xs[1] = {x + t0 * k};
    for (int64_t r = r0; r < r1; ++r) {
      float acc[1];
      dot_rows<1>(w + r * k, xs, k, acc);
      y[t0 * m + r] = acc[0] + (bias ? bias[r] : 0.0f);
    }
  }
}

#if DAK_CPU_X86
// NOTE: AVX2 + FMA path, chosen at run time (__builtin_cpu_supports): the library is built for
// baseline x86-64 (SSE2), where the portable loops reach about a quarter of this throughput.
__attribute__((target("avx2,fma"))) inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// R weight rows x T tokens, y[token, row] = bias + the dot product in one order per K: A 8-lane
// accumulators (8-element chunk i of K into accumulator i % A, by FMA), their sum in order, its
// horizontal sum (hsum), then the K % 8 tail in order. The R x T sets of accumulators are
// independent chains, so every shape of one A gives the same bits for the same (row, token); each
// K uses one A (kLongRow below), whatever the tokens.
template <int R, int T, int A>
__attribute__((target("avx2,fma"))) inline void tile_avx2(const float* const* xs, int64_t k, const float* w,
                                                          const float* bias, int64_t m, float* y, int64_t t0,
                                                          int64_t r) {
  const int64_t k8 = k / 8 * 8, kA = k / (8 * A) * (8 * A);
  __m256 acc[R][T][A];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < T; ++j) {
#pragma GCC unroll 2
      for (int a = 0; a < A; ++a) acc[i][j][a] = _mm256_setzero_ps();
    }
  }
  // The chunks c, c + 8, ..., c + 8 (n - 1) into accumulators 0 .. n - 1.
  const auto step = [&](int64_t c, int n) __attribute__((target("avx2,fma"))) {
#pragma GCC unroll 2
    for (int a = 0; a < A; ++a) {
      if (a == n) break;
      __m256 vx[T];
#pragma GCC unroll 4
      for (int j = 0; j < T; ++j) vx[j] = _mm256_loadu_ps(xs[j] + c + 8 * a);
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        const __m256 vw = _mm256_loadu_ps(w + (r + i) * k + c + 8 * a);
#pragma GCC unroll 4
        for (int j = 0; j < T; ++j) acc[i][j][a] = _mm256_fmadd_ps(vw, vx[j], acc[i][j][a]);
      }
    }
  };
  int64_t c = 0;
  for (; c < kA; c += 8 * A) step(c, A);
  if (c < k8) step(c, int((k8 - c) / 8));
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) {
    const float* wr = w + (r + i) * k;
    const float b = bias ? bias[r + i] : 0.0f;
#pragma GCC unroll 4
    for (int j = 0; j < T; ++j) {
      __m256 v = acc[i][j][0];
#pragma GCC unroll 2
      for (int a = 1; a < A; ++a) v = _mm256_add_ps(v, acc[i][j][a]);
      float sum = hsum(v);
      for (int64_t e = k8; e < k; ++e) sum += wr[e] * xs[j][e];
      y[(t0 + j) * m + r + i] = sum + b;
    }
  }
}

// Rows of at least this many elements use one accumulator chain per (row, token), shorter ones two.
// Measured on a 2-core AMD EPYC (session 47, one thread, us per call): a token at a time, weights
// streaming from DRAM, long rows stream best 8 at a time (8 chains: 4096 x 4096 at 23.8 GB/s against
// 14.1 for one row with 4 chains), while 8 interleaved rows of 576 read 13.7 GB/s and one row after
// another with 2 chains 19.7. Blocks of 4 tokens: 2 rows x 4 tokens with one chain each (x read once
// per 2 rows) for long rows, where x leaves L1; 1 row x 4 tokens with two chains for short ones.
constexpr int64_t kLongRow = 2048;

template <int A>
__attribute__((target("avx2,fma"))) void rows_avx2_k(const float* x, int64_t t, int64_t k, const float* w,
                                                     const float* bias, int64_t m, float* y, int64_t r0,
                                                     int64_t r1) {
  constexpr int kBlockRows = A == 1 ? 2 : 1, kSingleRows = A == 1 ? 8 : 1;
  int64_t t0 = 0;
  for (; t0 + 4 <= t; t0 += 4) {
    const float* xs[4] = {x + t0 * k, x + (t0 + 1) * k, x + (t0 + 2) * k, x + (t0 + 3) * k};
    int64_t r = r0;
    for (; r + kBlockRows <= r1; r += kBlockRows) tile_avx2<kBlockRows, 4, A>(xs, k, w, bias, m, y, t0, r);
    for (; r < r1; ++r) tile_avx2<1, 4, A>(xs, k, w, bias, m, y, t0, r);
  }
  // The tokens after the whole blocks (all of them at batch 1 decode), one at a time.
  for (; t0 < t; ++t0) {
    const float* xs[1] = {x + t0 * k};
    int64_t r = r0;
    for (; r + kSingleRows <= r1; r += kSingleRows) tile_avx2<kSingleRows, 1, A>(xs, k, w, bias, m, y, t0, r);
    for (; r < r1; ++r) tile_avx2<1, 1, A>(xs, k, w, bias, m, y, t0, r);
  }
}

void rows_avx2(const float* x, int64_t t, int64_t k, const float* w, const float* bias, int64_t m, float* y,
               int64_t r0, int64_t r1) {
  if (k >= kLongRow) {
    rows_avx2_k<1>(x, t, k, w, bias, m, y, r0, r1);
  } else {
    rows_avx2_k<2>(x, t, k, w, bias, m, y, r0, r1);
  }
}
#endif

RowsKernel rows_kernel() {
#if DAK_CPU_X86
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2) return rows_avx2;
#endif
  return rows_portable;
}

void linear_with(RowsKernel kernel, const float* x, int64_t t, int64_t k, const float* w,
                 const float* bias, int64_t m, float* y) {
  // NOTE: rows are handed out in blocks of 16 so that one block of weights (16 x K floats)
  // stays in L1/L2 while every token block streams past it.
  constexpr int64_t kRowBlock = 16;
  const int64_t blocks = (m + kRowBlock - 1) / kRowBlock;
  const int threads = parallel_threads(t * k * m);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    kernel(x, t, k, w, bias, m, y, blk * kRowBlock, std::min(m, (blk + 1) * kRowBlock));
  }
}

}  // namespace

#ifdef _OPENMP
namespace {

// System-wide busy and total CPU ticks from the first line of /proc/stat
// ("cpu user nice system idle iowait irq softirq steal ..."); false where unavailable.
bool read_cpu_ticks(int64_t& busy, int64_t& total) {
  std::ifstream f("/proc/stat");
  std::string label;
  if (!(f >> label) || label != "cpu") return false;
  int64_t sum = 0, idle = 0, v = 0;
  for (int i = 0; i < 8 && (f >> v); ++i) {  // guest time is already inside user / nice
    sum += v;
    if (i == 3 || i == 4) idle += v;
  }
  busy = sum - idle;
  total = sum;
  return sum > 0;
}

// Threads worth using now: the cores that other processes left idle since the last look
// (system busy time minus this process's own CPU time), between 1 and omp_get_max_threads().
class CoreGauge {
 public:
  int threads() {
    std::unique_lock lock(mu_, std::try_to_lock);
    if (lock.owns_lock()) update();
    return threads_.load(std::memory_order_relaxed);
  }

 private:
  void update() {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point now = Clock::now();
    if (have_ && now - wall_ < std::chrono::milliseconds(250)) return;
    int64_t busy = 0, total = 0;
    const double self_s = double(std::clock()) / CLOCKS_PER_SEC;  // all threads of this process
    if (!read_cpu_ticks(busy, total)) {
      threads_.store(max_threads(), std::memory_order_relaxed);
      return;
    }
    if (have_ && total > total_) {
      const double cpus = std::max(1u, std::thread::hardware_concurrency());
      const double wall_s = std::chrono::duration<double>(now - wall_).count();
      const double busy_cores = double(busy - busy_) / double(total - total_) * cpus;
      const double others = busy_cores - (self_s - self_s_) / wall_s;
      const double free_cores = double(omp_get_num_procs()) - std::max(0.0, others);
      threads_.store(std::clamp(int(free_cores + 0.5), 1, max_threads()), std::memory_order_relaxed);
    }
    have_ = true;
    busy_ = busy;
    total_ = total;
    self_s_ = self_s;
    wall_ = now;
  }
  static int max_threads() { return std::max(1, omp_get_max_threads()); }

  std::mutex mu_;
  std::atomic<int> threads_{1};  // until a first interval has been measured
  bool have_ = false;
  int64_t busy_ = 0, total_ = 0;
  double self_s_ = 0;
  std::chrono::steady_clock::time_point wall_;
};

}  // namespace
#endif

int parallel_threads(int64_t macs) {
#ifdef _OPENMP
  static CoreGauge gauge;
  const int threads = gauge.threads();  // sampled on every call so that the interval stays short
  return macs < kMinParallelMacs ? 1 : threads;
#else
  (void)macs;
  return 1;
#endif
}

void linear(const float* x, int64_t t, int64_t k, const float* w, const float* bias, int64_t m,
            float* y) {
  linear_with(rows_kernel(), x, t, k, w, bias, m, y);
}

void linear_portable(const float* x, int64_t t, int64_t k, const float* w, const float* bias, int64_t m,
                     float* y) {
  linear_with(rows_portable, x, t, k, w, bias, m, y);
}

void rms_norm(const float* x, int64_t t, int64_t d, const float* w, float eps, float* y) {
  for (int64_t i = 0; i < t; ++i) {
    const float* xr = x + i * d;
    float* yr = y + i * d;
    float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
    for (int64_t j = 0; j < d; ++j) ss += xr[j] * xr[j];
    // LlamaRMSNorm: hidden * torch.rsqrt(variance + eps), then weight * hidden (fp32).
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + eps);
    for (int64_t j = 0; j < d; ++j) yr[j] = w[j] * (xr[j] * inv);
  }
}

void layer_norm(const float* x, int64_t t, int64_t d, const float* w, const float* b, float eps,
                float* y) {
  for (int64_t i = 0; i < t; ++i) {
    const float* xr = x + i * d;
    float* yr = y + i * d;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < d; ++j) sum += xr[j];
    const float mean = sum / static_cast<float>(d);
    float var = 0.0f;
#pragma omp simd reduction(+ : var)
    for (int64_t j = 0; j < d; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    const float inv = 1.0f / std::sqrt(var / static_cast<float>(d) + eps);
    for (int64_t j = 0; j < d; ++j) {
      float v = (xr[j] - mean) * inv;
      if (w) v *= w[j];
      if (b) v += b[j];
      yr[j] = v;
    }
  }
}

void activate(float* x, int64_t n, Activation a) {
  switch (a) {
    case Activation::kSilu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-x[i]));
      return;
    case Activation::kRelu:
      for (int64_t i = 0; i < n; ++i) x[i] = std::max(x[i], 0.0f);
      return;
    case Activation::kGelu:
      for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * static_cast<float>(std::numbers::sqrt2 / 2)));
      return;
    case Activation::kGeluTanh: {
      const float k0 = static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        x[i] = 0.5f * v * (1.0f + std::tanh(k0 * (v + 0.044715f * v * v * v)));
      }
      return;
    }
  }
}

std::vector<float> rope_inv_freq(const ModelConfig& c) {
  const int64_t d = c.head_dim;
  // base ** (arange(0, dim, 2).float() / dim), all in fp32.
  const auto pos_freq = [&](int64_t i) {
    const float e = static_cast<float>(2 * i) / static_cast<float>(d);
    return static_cast<float>(std::pow(c.rope_theta, static_cast<double>(e)));
  };
  std::vector<float> f(static_cast<size_t>(d / 2));
  for (int64_t i = 0; i < d / 2; ++i) f[i] = 1.0f / pos_freq(i);
  if (c.rope_scaling == RopeScaling::kLinear) {
    const float factor = static_cast<float>(c.rope_factor);
    for (float& v : f) v /= factor;
  } else if (c.rope_scaling == RopeScaling::kLlama3) {
    // _compute_llama3_parameters (modeling_rope_utils.py): wavelengths above
    // old_context_len / low_freq_factor are divided by factor, those below
    // old_context_len / high_freq_factor are kept, and the band between is interpolated.
    const float factor = static_cast<float>(c.rope_factor);
    const float low = static_cast<float>(c.rope_low_freq_factor);
    const float high = static_cast<float>(c.rope_high_freq_factor);
    const float old_len = static_cast<float>(c.rope_original_max_position);
    const float low_wavelen = static_cast<float>(static_cast<double>(c.rope_original_max_position) / c.rope_low_freq_factor);
    const float high_wavelen = static_cast<float>(static_cast<double>(c.rope_original_max_position) / c.rope_high_freq_factor);
    const float two_pi = static_cast<float>(2.0 * std::numbers::pi);
    for (float& v : f) {
      const float wavelen = two_pi / v;
      const float scaled = wavelen > low_wavelen ? v / factor : v;
      if (wavelen < high_wavelen || wavelen > low_wavelen) {
        v = scaled;
      } else {
        const float smooth = (old_len / wavelen - low) / (high - low);
        v = (1.0f - smooth) * scaled / factor + smooth * scaled;
      }
    }
  } else if (c.rope_scaling == RopeScaling::kYarn) {
    // Dimension (of D) at which a frequency turns `rotations` times over the original context.
    const double dim = static_cast<double>(d);
    const auto correction_dim = [&](double rotations) {
      return dim * std::log(static_cast<double>(c.rope_original_max_position) / (rotations * 2.0 * std::numbers::pi)) /
             (2.0 * std::log(c.rope_theta));
    };
    double low = correction_dim(c.rope_beta_fast), high = correction_dim(c.rope_beta_slow);
    if (c.rope_truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, dim - 1.0);
    if (low == high) high += 0.001;  // the ramp's guard against a zero width
    const float factor = static_cast<float>(c.rope_factor);
    const float lo = static_cast<float>(low), width = static_cast<float>(high - low);
    for (int64_t i = 0; i < d / 2; ++i) {
      const float extrapolation = f[i];
      const float interpolation = 1.0f / (factor * pos_freq(i));
      const float ramp = std::clamp((static_cast<float>(i) - lo) / width, 0.0f, 1.0f);
      const float keep = 1.0f - ramp;  // weight of the extrapolated (unscaled) frequency
      f[i] = interpolation * (1.0f - keep) + extrapolation * keep;
    }
  }
  if (!c.rope_freq_factors.empty()) {  // GGUF rope_freqs.weight: ggml divides theta by the factor
    for (int64_t i = 0; i < d / 2 && i < static_cast<int64_t>(c.rope_freq_factors.size()); ++i)
      f[i] /= c.rope_freq_factors[size_t(i)];
  }
  return f;
}

float rope_attention_factor(const ModelConfig& c) {
  return c.rope_scaling == RopeScaling::kYarn ? static_cast<float>(c.rope_attention_factor) : 1.0f;
}

void apply_rope(float* x, int64_t h, int64_t d, const float* inv_freq, int64_t pos, float attention_factor) {
  const int64_t half = d / 2;
  const float p = static_cast<float>(pos);
  for (int64_t i = 0; i < half; ++i) {
    const float angle = inv_freq[i] * p;
    const float c = static_cast<float>(std::cos(static_cast<double>(angle))) * attention_factor;
    const float s = static_cast<float>(std::sin(static_cast<double>(angle))) * attention_factor;
    for (int64_t hh = 0; hh < h; ++hh) {
      float* r = x + hh * d;
      const float x1 = r[i];
      const float x2 = r[i + half];
      r[i] = x1 * c - x2 * s;
      r[i + half] = x2 * c + x1 * s;
    }
  }
}

void attend_head(const float* q, const float* k, const float* v, int64_t kv_stride, int64_t n_keys,
                 int64_t d, float scale, float* out, float* scratch) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n_keys; ++j) {
    const float s = dot(q, k + j * kv_stride, d) * scale;
    scratch[j] = s;
    mx = std::max(mx, s);
  }
  float sum = 0.0f;
  for (int64_t j = 0; j < n_keys; ++j) {
    scratch[j] = std::exp(scratch[j] - mx);
    sum += scratch[j];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < d; ++i) out[i] = 0.0f;
  for (int64_t j = 0; j < n_keys; ++j) {
    const float p = scratch[j] * inv;
    const float* vr = v + j * kv_stride;
#pragma omp simd
    for (int64_t i = 0; i < d; ++i) out[i] += p * vr[i];
  }
}

}  // namespace dak::cpu
