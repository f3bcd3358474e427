#include "gpu/kernels/random_fill.h"

#include <algorithm>

#include "core/rope_layout.h"
#include "gpu/cuda_check.h"

namespace dak::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kVec = 8;  // bf16 per 16-byte store

constexpr uint64_t kElementStep = 0x9E3779B97F4A7C15ull;  // SplitMix64's golden-ratio increment
constexpr uint64_t kStreamStep = 0xD1B54A32D192ED03ull;   // a second odd constant for stream keys

__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__device__ __forceinline__ __nv_bfloat16 value_at(uint64_t key, int64_t i, float mean, float half_range) {
  const uint64_t bits = mix64(key + uint64_t(i + 1) * kElementStep);
  const float x = float(int32_t(bits >> 40) - (1 << 23)) * (1.0f / float(1 << 23));  // [-1, 1), exact
  return __float2bfloat16_rn(__fmaf_rn(x, half_range, mean));
}

// The stream element written at position j of the tensor: j itself, or, for rows in the paired
// order (RandomFillParams::paired_head_dim), the element of the natural row it holds; `second`
// tells whether that element belongs to the next stream (second_half_next_stream).
__device__ __forceinline__ int64_t source_element(const RandomFillParams& p, int64_t j, bool& second) {
  second = false;
  if (p.paired_head_dim <= 0) return j;
  const int64_t D = p.paired_head_dim, row = j / p.row_elems, col = j % p.row_elems;
  const int64_t head0 = row / D * D;
  int64_t natural = rope_layout::natural_index(row - head0, D);
  if (p.second_half_next_stream && natural >= D / 2) {
    second = true;
    natural -= D / 2;
    return ((head0 / 2) + natural) * p.row_elems + col;
  }
  return ((p.second_half_next_stream ? head0 / 2 : head0) + natural) * p.row_elems + col;
}

__device__ __forceinline__ __nv_bfloat16 value_of(const RandomFillParams& p, uint64_t key, uint64_t key2, int64_t j) {
  bool second = false;
  const int64_t e = source_element(p, j, second);
  return value_at(second ? key2 : key, e, p.mean, p.half_range);
}

template <bool kVectorized>
__global__ void __launch_bounds__(kThreads) random_fill_kernel(const __grid_constant__ RandomFillParams p) {
  const uint64_t key = mix64(p.seed + (p.stream + 1) * kStreamStep);
  const uint64_t key2 = mix64(p.seed + (p.stream + 2) * kStreamStep);  // the next stream
  const int64_t stride = int64_t(gridDim.x) * kThreads;
  const int64_t first = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (kVectorized) {
    const int64_t groups = p.n / kVec;
    for (int64_t g = first; g < groups; g += stride) {
      alignas(16) __nv_bfloat16 r[kVec];  // registers
#pragma unroll
      for (int v = 0; v < kVec; ++v) r[v] = value_of(p, key, key2, p.first + g * kVec + v);
      *reinterpret_cast<uint4*>(p.g_out + g * kVec) = *reinterpret_cast<const uint4*>(r);
    }
    for (int64_t i = groups * kVec + first; i < p.n; i += stride) p.g_out[i] = value_of(p, key, key2, p.first + i);
  } else {
    for (int64_t i = first; i < p.n; i += stride) p.g_out[i] = value_of(p, key, key2, p.first + i);
  }
}

}  // namespace

void random_fill_bf16(const RandomFillParams& p, cudaStream_t stream) {
  if (p.n <= 0) return;
  const bool aligned = reinterpret_cast<uintptr_t>(p.g_out) % 16 == 0;
  const int64_t work = aligned ? (p.n + kVec - 1) / kVec : p.n;
  const int grid = int(std::clamp<int64_t>((work + kThreads - 1) / kThreads, 1, 132 * 16));
  if (aligned) {
    random_fill_kernel<true><<<grid, kThreads, 0, stream>>>(p);
  } else {
    random_fill_kernel<false><<<grid, kThreads, 0, stream>>>(p);
  }
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
