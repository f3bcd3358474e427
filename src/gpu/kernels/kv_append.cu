#include "gpu/kernels/kv_append.h"

#include <algorithm>
#include <cstdint>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/launch.h"

namespace dak::gpu {
namespace {

constexpr int kThreads = 128;

// Unit e of a token (a 16-byte chunk when vec, else an element) covers kv head e / units_per_head.
__global__ void __launch_bounds__(kThreads) kv_append_kernel(const __grid_constant__ KvAppendParams p, bool vec) {
  dependency_wait();  // launched by launch_dependent (gpu/launch.h)
  const int64_t t = blockIdx.x;
  const int64_t slot = p.g_slots[t], pos = p.g_positions[t];
  if (slot < 0 || slot >= p.kv.batch || pos < 0 || pos >= p.kv.max_ctx) return;
  const int64_t D = p.kv.head_dim;
  const __nv_bfloat16* g_k = p.g_qkv + t * p.row_stride + p.k_offset;  // [Hkv * D]
  const __nv_bfloat16* g_v = p.g_qkv + t * p.row_stride + p.v_offset;  // [Hkv * D]
  const int64_t per_head = vec ? D / 8 : D;
  const int64_t units = p.kv.num_kv_heads * per_head;
  for (int64_t e = blockIdx.y * int64_t(kThreads) + threadIdx.x; e < units; e += int64_t(gridDim.y) * kThreads) {
    const int64_t hk = e / per_head, u = e % per_head;
    __nv_bfloat16* d_k = p.kv.k_block(slot, hk) + pos * D;  // [D] row of the cache
    __nv_bfloat16* d_v = p.kv.v_block(slot, hk) + pos * D;
    if (vec) {  // 16-byte chunks; D, offsets and strides are multiples of 8 elements
      const uint4 k = reinterpret_cast<const uint4*>(g_k)[e];
      const uint4 v = reinterpret_cast<const uint4*>(g_v)[e];
      reinterpret_cast<uint4*>(d_k)[u] = k;
      reinterpret_cast<uint4*>(d_v)[u] = v;
    } else {
      const __nv_bfloat16 k = g_k[e], v = g_v[e];
      d_k[u] = k;
      d_v[u] = v;
    }
  }
  // A host-tier row: the stores cross PCIe as posted writes. The next kernel (PDL: right after
  // this grid completes) may read the row over PCIe with TMA bulk copies; membar.sys makes the
  // writes performed at system scope before this thread ends. Without it the H200 once returned the
  // stale row (TieredAttentionKernel.ReadsTheKeyAppendedByThePreviousKernel, 4 test processes
  // sharing the GPU; docs/perf-notes.md session 24).
  if (p.kv.on_host(slot)) __threadfence_system();
}

}  // namespace

void check_kv_append(const KvAppendParams& p, const std::string& where) {
  if (p.T < 0) fail("negative token count " + std::to_string(p.T), where, "pass T >= 0");
  check_kv_cache_layer(p.kv, where);
  if (p.T > 0 && (!p.g_qkv || !p.g_slots || !p.g_positions)) {
    fail("a required pointer is null (qkv, slots or positions)", where, "pass every operand");
  }
}

void kv_append(const KvAppendParams& p, cudaStream_t stream) {
  check_kv_append(p, "kv_append");
  if (p.T == 0) return;
  const auto addr = [](const void* q) { return reinterpret_cast<uintptr_t>(q); };
  const KvCacheLayer& kv = p.kv;
  const bool vec = kv.head_dim % 8 == 0 && p.row_stride % 8 == 0 && p.k_offset % 8 == 0 && p.v_offset % 8 == 0 &&
                   addr(p.g_qkv) % 16 == 0 && kv.tiers_aligned16();
  // Spread a token's row over CTAs so that each thread copies about one element (or chunk).
  const int64_t kvd = int64_t(kv.num_kv_heads) * kv.head_dim;
  const int64_t work = vec ? kvd / 8 : kvd;
  const int64_t ctas = std::clamp<int64_t>((work + kThreads - 1) / kThreads, 1, 65535);
  launch_dependent(kv_append_kernel, dim3(unsigned(p.T), unsigned(ctas)), dim3(kThreads), 0, stream, p, vec);
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
