#include "gpu/kernels/kv_append.h"

#include "gpu/cuda_check.h"

namespace dak::gpu {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) kv_append_kernel(const __grid_constant__ KvAppendParams p) {
  const int64_t t = blockIdx.x;
  const int64_t slot = p.g_slots[t], pos = p.g_positions[t];
  if (slot < 0 || slot >= p.num_slots || pos < 0 || pos >= p.max_ctx) return;
  const __nv_bfloat16* g_k = p.g_qkv + t * p.row_stride + p.k_offset;  // [kv_dim]
  const __nv_bfloat16* g_v = p.g_qkv + t * p.row_stride + p.v_offset;  // [kv_dim]
  const int64_t dst = (slot * p.max_ctx + pos) * p.kv_dim;
  for (int64_t e = threadIdx.x; e < p.kv_dim; e += kThreads) {
    p.g_k_cache[dst + e] = g_k[e];
    p.g_v_cache[dst + e] = g_v[e];
  }
}

}  // namespace

void kv_append(const KvAppendParams& p, cudaStream_t stream) {
  if (p.T <= 0) return;
  kv_append_kernel<<<unsigned(p.T), kThreads, 0, stream>>>(p);
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
