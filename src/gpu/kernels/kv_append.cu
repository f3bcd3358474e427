#include "gpu/kernels/kv_append.h"

#include <algorithm>
#include <cstdint>

#include "gpu/cuda_check.h"

namespace dak::gpu {
namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads) kv_append_kernel(const __grid_constant__ KvAppendParams p, bool vec) {
  const int64_t t = blockIdx.x;
  const int64_t slot = p.g_slots[t], pos = p.g_positions[t];
  if (slot < 0 || slot >= p.num_slots || pos < 0 || pos >= p.max_ctx) return;
  const __nv_bfloat16* g_k = p.g_qkv + t * p.row_stride + p.k_offset;  // [kv_dim]
  const __nv_bfloat16* g_v = p.g_qkv + t * p.row_stride + p.v_offset;  // [kv_dim]
  const int64_t dst = (slot * p.max_ctx + pos) * p.kv_dim;
  if (vec) {  // 16-byte chunks; offsets and kv_dim are multiples of 8 elements
    const int64_t n = p.kv_dim / 8;
    for (int64_t e = blockIdx.y * int64_t(kThreads) + threadIdx.x; e < n; e += int64_t(gridDim.y) * kThreads) {
      const uint4 k = reinterpret_cast<const uint4*>(g_k)[e];
      const uint4 v = reinterpret_cast<const uint4*>(g_v)[e];
      reinterpret_cast<uint4*>(p.g_k_cache + dst)[e] = k;
      reinterpret_cast<uint4*>(p.g_v_cache + dst)[e] = v;
    }
    return;
  }
  for (int64_t e = blockIdx.y * int64_t(kThreads) + threadIdx.x; e < p.kv_dim; e += int64_t(gridDim.y) * kThreads) {
    const __nv_bfloat16 k = g_k[e], v = g_v[e];
    p.g_k_cache[dst + e] = k;
    p.g_v_cache[dst + e] = v;
  }
}

}  // namespace

void kv_append(const KvAppendParams& p, cudaStream_t stream) {
  if (p.T <= 0) return;
  const auto addr = [](const void* q) { return reinterpret_cast<uintptr_t>(q); };
  const bool vec = p.kv_dim % 8 == 0 && p.row_stride % 8 == 0 && p.k_offset % 8 == 0 && p.v_offset % 8 == 0 &&
                   (addr(p.g_qkv) | addr(p.g_k_cache) | addr(p.g_v_cache)) % 16 == 0;
  // Spread a token's row over CTAs so that each thread copies about one element (or chunk).
  const int64_t work = vec ? p.kv_dim / 8 : p.kv_dim;
  const int64_t ctas = std::clamp<int64_t>((work + kThreads - 1) / kThreads, 1, 65535);
  kv_append_kernel<<<dim3(unsigned(p.T), unsigned(ctas)), kThreads, 0, stream>>>(p, vec);
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
