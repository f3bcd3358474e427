// Deterministic random bf16 fill: the values of `--random-weights` (gpu_weights.h), generated
// in place in HBM so that a config of any size needs neither host memory nor a file.
//
//   out[i] = bf16_rn(fma(x_j, half_range, mean)), j = first + i (or, for paired q / k rows, the
//            natural element that position first + i holds: RandomFillParams::paired_head_dim; for
//            paired gate_up rows, that element of the gate's or the up's stream),  x_j = (int32(bits_j >> 40) - 2^23) * 2^-23
//   bits_j = splitmix64_mix(key + (j + 1) * 0x9E3779B97F4A7C15)      (element j of the stream)
//   key    = splitmix64_mix(seed + (stream + 1) * 0xD1B54A32D192ED03)
// where splitmix64_mix(z) is the SplitMix64 output function (Steele, Lea, Flood, "Fast
// splittable pseudorandom number generators", OOPSLA 2014; Vigna's reference constants):
//   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
//   return z ^ (z >> 31)
// so x_i is uniform on [-1, 1) with 24-bit resolution (exact in fp32) and the values have
// mean `mean` and standard deviation half_range / sqrt(3). Every value depends only on
// (seed, stream, i): the result is independent of the launch configuration, bitwise.
// Tiling: grid-stride over 8-element groups (one 16-byte store per thread and group); the
// scalar path handles a misaligned pointer and the tail. Write-bandwidth bound.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace dak::gpu {

struct RandomFillParams {
  __nv_bfloat16* g_out = nullptr;  // [n] bf16, HBM or pinned mapped host memory (written)
  int64_t n = 0;                   // elements
  uint64_t seed = 0;               // user seed (--weights-seed)
  uint64_t stream = 0;             // independent stream per tensor (its index in the weight table)
  float mean = 0.0f;
  float half_range = 0.0f;         // values lie in [mean - half_range, mean + half_range)
  int64_t first = 0;               // stream index of g_out[0]: out[i] gets element first + i, so a
                                   //   tensor split over two tiers fills as two calls, bitwise the same
  int64_t paired_head_dim = 0;     // > 0: the tensor is q or k heads of this head_dim ([heads * D,
                                   //   row_elems]) stored in the paired row order (core/rope_layout.h):
                                   //   position j of the tensor gets the element of the natural row it holds
  int64_t row_elems = 1;           // elements per row (paired_head_dim > 0 only)
  bool second_half_next_stream = false;  // paired only: the natural rows [D/2, D) of each head come
                                   //   from stream + 1 (its rows [0, D/2)): gate_up as one paired
                                   //   "head" of D = 2I rows whose gate_proj and up_proj are two
                                   //   tensors (core/rope_layout.h engine_pairs_gate_up)
};

/// Launches the fill on `stream`. n == 0 is a no-op. Throws dak::Error on a launch error.
void random_fill_bf16(const RandomFillParams& p, cudaStream_t stream);

}  // namespace dak::gpu
