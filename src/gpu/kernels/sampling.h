// Token sampling on the GPU from fp32 logits, one CTA (1024 threads) per row.
//
// temperature == 0: greedy, argmax with the lowest id on ties (NaN logits never win).
// Otherwise, with w_i = exp((x_i - max x) / temperature):
//   1. top-k (0 < k < V): keep ids whose logit is >= the k-th largest logit (found exactly by
//      a 32-step radix select on the order-preserving integer image of the floats; ties at the
//      threshold are all kept, so more than k ids survive only on exact ties);
//   2. top-p (< 1): among those, keep ids with w_i >= tau, tau the largest weight threshold whose
//      kept mass reaches top_p * (mass after top-k) (31-step bitwise search on the positive
//      float weights): the smallest set of most likely ids reaching top_p, ties kept;
//   3. draw u = sample_uniform(seed, row, counter[row]) and return the first id in id order at
//      which the running kept mass exceeds u * (kept mass) (sums in fp64).
// The counter is the sequence position, so a seeded run is reproducible and a CUDA-graph
// replay draws fresh numbers every step. This is the simple, correct path (about 35 passes
// over the row); a faster single-pass top-k/top-p can replace it behind the same interface.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dak::gpu {

struct SampleParams {
  const float* g_logits = nullptr;       // [B, row_stride] fp32, HBM (first V columns used)
  int64_t row_stride = 0;                // elements between rows
  int32_t* g_out_ids = nullptr;          // [B] int32, HBM
  const int32_t* g_counters = nullptr;   // [B] int32, HBM: RNG counter per row (e.g. position); null = 0
  int64_t B = 0;
  int64_t V = 0;                         // vocabulary size
  float temperature = 0.f;               // 0 = greedy
  int32_t top_k = 0;                     // 0 = no top-k
  float top_p = 1.f;                     // 1 = no top-p
  uint64_t seed = 0;
};

/// Uniform double in [0, 1) from (seed, row, counter): splitmix64 over a mix of the three,
/// top 53 bits. Host and device compute the same value (tests use it as the reference).
__host__ __device__ inline double sample_uniform(uint64_t seed, int64_t row, int64_t counter) {
  uint64_t z = seed ^ (uint64_t(row) * 0x9E3779B97F4A7C15ull) ^ (uint64_t(counter) * 0xD1B54A32D192ED03ull);
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(z >> 11) * (1.0 / 9007199254740992.0);
}

/// Launches on `stream`. Throws dak::Error for invalid parameters (negative temperature,
/// top_p outside (0, 1], negative top_k) or on a launch error.
void sample_tokens(const SampleParams& p, cudaStream_t stream);

}  // namespace dak::gpu
