#include "gpu/kernels/rope.h"

#include <algorithm>
#include <cstdint>

#include "gpu/cuda_check.h"
#include "gpu/launch.h"
#include "gpu/kernels/reduce.cuh"

namespace dak::gpu {
namespace {

constexpr int kThreads = 128;

// Rotates the pair (i, i + D/2) of one head in place; y receives the two rotated values.
// m multiplies cos and sin (RopeParams::attention_factor; x * 1 is exact, so m = 1 changes no bit).
__device__ __forceinline__ void rotate_pair(__nv_bfloat16* g_head, int i, int half, float pos, float inv_freq,
                                            float m, __nv_bfloat16* y) {
  const float a = pos * inv_freq;
  float s, c;
  sincosf(a, &s, &c);
  c = __fmul_rn(c, m);
  s = __fmul_rn(s, m);
  const float x1 = bf16_to_float(g_head[i]), x2 = bf16_to_float(g_head[i + half]);
  // Explicit roundings (no FMA contraction), so every kernel that calls this rounds alike.
  y[0] = float_to_bf16(__fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, s)));
  y[1] = float_to_bf16(__fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, s)));
  g_head[i] = y[0];
  g_head[i + half] = y[1];
}

__global__ void __launch_bounds__(kThreads) rope_kernel(const __grid_constant__ RopeParams p) {
  dependency_wait();  // launched by launch_dependent (gpu/launch.h)
  const int64_t t = blockIdx.x;
  const int half = p.head_dim / 2;
  const float pos = float(p.g_positions[t]);
  __nv_bfloat16* g_row = p.g_qkv + t * p.row_stride;  // [row_stride]
  const int pairs = (p.num_q_heads + p.num_k_heads) * half;
  for (int j = blockIdx.y * kThreads + threadIdx.x; j < pairs; j += gridDim.y * kThreads) {
    const int head = j / half, i = j % half;
    __nv_bfloat16* g_head = head < p.num_q_heads ? g_row + p.q_offset + int64_t(head) * p.head_dim
                                                 : g_row + p.k_offset + int64_t(head - p.num_q_heads) * p.head_dim;
    __nv_bfloat16 y[2];
    rotate_pair(g_head, i, half, pos, p.g_inv_freq[i], p.attention_factor, y);
  }
}

// Work items of token t: [0, pairs) rope pairs of the q then k heads, then the v units (16-byte
// chunks when vec, else elements; unit e belongs to kv head e / v_per_head).
__global__ void __launch_bounds__(kThreads) rope_kv_append_kernel(const __grid_constant__ RopeParams r,
                                                                  const __grid_constant__ KvAppendParams kv, bool vec) {
  dependency_wait();  // launched by launch_dependent (gpu/launch.h)
  const int64_t t = blockIdx.x;
  const int half = r.head_dim / 2;
  const float pos = float(r.g_positions[t]);
  __nv_bfloat16* g_row = r.g_qkv + t * r.row_stride;  // [row_stride]
  const int64_t slot = kv.g_slots[t], cpos = kv.g_positions[t];
  const bool in_cache = slot >= 0 && slot < kv.kv.batch && cpos >= 0 && cpos < kv.kv.max_ctx;
  const int64_t D = r.head_dim;
  const int pairs = (r.num_q_heads + r.num_k_heads) * half;
  const int64_t v_per_head = vec ? D / 8 : D;
  const int64_t v_units = int64_t(r.num_k_heads) * v_per_head;
  for (int64_t j = blockIdx.y * int64_t(kThreads) + threadIdx.x; j < pairs + v_units;
       j += int64_t(gridDim.y) * kThreads) {
    if (j < pairs) {
      const int head = int(j) / half, i = int(j) % half;
      __nv_bfloat16 y[2];
      if (head < r.num_q_heads) {
        rotate_pair(g_row + r.q_offset + int64_t(head) * r.head_dim, i, half, pos, r.g_inv_freq[i],
                    r.attention_factor, y);
      } else {
        const int hk = head - r.num_q_heads;
        rotate_pair(g_row + r.k_offset + int64_t(hk) * r.head_dim, i, half, pos, r.g_inv_freq[i],
                    r.attention_factor, y);
        if (in_cache) {
          __nv_bfloat16* d_k = kv.kv.k_block(slot, hk) + cpos * D;  // [D] row of the cache
          d_k[i] = y[0];
          d_k[i + half] = y[1];
        }
      }
    } else if (in_cache) {
      const int64_t e = j - pairs, hk = e / v_per_head, u = e % v_per_head;
      const __nv_bfloat16* g_v = kv.g_qkv + t * kv.row_stride + kv.v_offset;  // [Hkv * D]
      __nv_bfloat16* d_v = kv.kv.v_block(slot, hk) + cpos * D;                 // [D] row of the cache
      if (vec) {
        reinterpret_cast<uint4*>(d_v)[u] = reinterpret_cast<const uint4*>(g_v)[e];
      } else {
        d_v[u] = g_v[e];
      }
    }
  }
  // A host-tier row: its writes performed at system scope before this grid completes (see kv_append_kernel).
  if (in_cache && kv.kv.on_host(slot)) __threadfence_system();
}

}  // namespace

void apply_rope(const RopeParams& p, cudaStream_t stream) {
  if (p.T <= 0) return;
  // Spread a token's (head, i) pairs over CTAs so that each thread rotates about one pair: a
  // strided loop of one CTA per token costs one memory latency per iteration.
  const int64_t pairs = int64_t(p.num_q_heads + p.num_k_heads) * (p.head_dim / 2);
  const int64_t ctas = std::clamp<int64_t>((pairs + kThreads - 1) / kThreads, 1, 65535);
  launch_dependent(rope_kernel, dim3(unsigned(p.T), unsigned(ctas)), dim3(kThreads), 0, stream, p);
  DAK_CUDA_CHECK(cudaGetLastError());
}

void apply_rope_kv_append(const RopeParams& r, const KvAppendParams& kv, cudaStream_t stream) {
  check_kv_append(kv, "apply_rope_kv_append");
  const int64_t qd = int64_t(r.num_q_heads) * r.head_dim, kvd = int64_t(kv.kv.num_kv_heads) * kv.kv.head_dim;
  const auto disjoint = [](int64_t a, int64_t b, int64_t n, int64_t m) { return a + n <= b || b + m <= a; };
  const bool same_rows = r.g_qkv == kv.g_qkv && r.row_stride == kv.row_stride && r.k_offset == kv.k_offset &&
                         r.T == kv.T && kv.kv.num_kv_heads == r.num_k_heads && kv.kv.head_dim == r.head_dim &&
                         disjoint(kv.v_offset, kv.k_offset, kvd, kvd) && disjoint(kv.v_offset, r.q_offset, kvd, qd);
  if (!same_rows) {
    apply_rope(r, stream);
    kv_append(kv, stream);
    return;
  }
  if (r.T <= 0) return;
  const auto addr = [](const void* q) { return reinterpret_cast<uintptr_t>(q); };
  const bool vec = r.head_dim % 8 == 0 && kv.row_stride % 8 == 0 && kv.v_offset % 8 == 0 &&
                   (addr(kv.g_qkv) | addr(kv.kv.h_v) | addr(kv.kv.g_v)) % 16 == 0;
  const int64_t work = int64_t(r.num_q_heads + r.num_k_heads) * (r.head_dim / 2) + (vec ? kvd / 8 : kvd);
  const int64_t ctas = std::clamp<int64_t>((work + kThreads - 1) / kThreads, 1, 65535);
  launch_dependent(rope_kv_append_kernel, dim3(unsigned(r.T), unsigned(ctas)), dim3(kThreads), 0, stream, r, kv, vec);
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
