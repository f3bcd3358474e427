#include "gpu/kernels/rope.h"

#include <algorithm>
#include <cstdint>

#include "core/rope_layout.h"
#include "gpu/cuda_check.h"
#include "gpu/launch.h"
#include "gpu/kernels/reduce.cuh"
#include "gpu/kernels/rope_pair.cuh"

namespace dak::gpu {
namespace {

constexpr int kThreads = 128;

// Offsets within a head of the two values of pair i (x[i], x[i + D/2]): i and i + D/2 in the
// natural order, else the paired rows of core/rope_layout.h (8 apart; P consecutive pairs from a
// multiple of P <= 8 stay contiguous in both orders).
__device__ __forceinline__ int pair_lo(int i, int half, bool paired) {
  return paired ? int(rope_layout::paired_row(i, 2 * half)) : i;
}
__device__ __forceinline__ int pair_gap(int half, bool paired) { return paired ? 8 : half; }

// Rotates pair i of one head in place (values at lo and lo + gap; rope_pair.cuh's arithmetic); y
// receives the two rotated values. m multiplies cos and sin (RopeParams::attention_factor).
__device__ __forceinline__ void rotate_pair(__nv_bfloat16* g_head, int lo, int gap, float pos, float inv_freq,
                                            float m, __nv_bfloat16* y) {
  rope_pair(bf16_to_float(g_head[lo]), bf16_to_float(g_head[lo + gap]), pos, inv_freq, m, y[0], y[1]);
  g_head[lo] = y[0];
  g_head[lo + gap] = y[1];
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
    rotate_pair(g_head, pair_lo(i, half, p.paired_rows), pair_gap(half, p.paired_rows), pos, p.g_inv_freq[i],
                p.attention_factor, y);
  }
}

// P consecutive pairs (i .. i + P - 1, i a multiple of P) of one head: rope_pair per pair, with
// P-element loads and stores (P = 2: 4 bytes, 4: 8 bytes). Returns the rotated values:
// y_lo[p] for column i + p, y_hi[p] for i + p + D/2.
template <int P>
struct BfVec;
template <>
struct BfVec<1> {
  using type = __nv_bfloat16;
};
template <>
struct BfVec<2> {
  using type = __nv_bfloat162;
};
template <>
struct BfVec<4> {
  using type = uint2;
};

template <int P>
__device__ __forceinline__ void rotate_pairs(__nv_bfloat16* g_head, int i, int at, int gap, float pos,
                                             const float* g_inv_freq, float m, __nv_bfloat16* y_lo,
                                             __nv_bfloat16* y_hi) {
  using V = typename BfVec<P>::type;
  V lo = *reinterpret_cast<const V*>(g_head + at), hi = *reinterpret_cast<const V*>(g_head + at + gap);
  const __nv_bfloat16* x1 = reinterpret_cast<const __nv_bfloat16*>(&lo);
  const __nv_bfloat16* x2 = reinterpret_cast<const __nv_bfloat16*>(&hi);
#pragma unroll
  for (int q = 0; q < P; ++q) {
    rope_pair(bf16_to_float(x1[q]), bf16_to_float(x2[q]), pos, g_inv_freq[i + q], m, y_lo[q], y_hi[q]);
  }
  *reinterpret_cast<V*>(g_head + at) = *reinterpret_cast<const V*>(y_lo);
  *reinterpret_cast<V*>(g_head + at + gap) = *reinterpret_cast<const V*>(y_hi);
}

// Work items of token t: [0, pairs / P) groups of P rope pairs of the q then k heads, then the v
// units (16-byte chunks when vec, else elements; unit e belongs to kv head e / v_per_head).
template <int P>
__global__ void __launch_bounds__(kThreads) rope_kv_append_kernel(const __grid_constant__ RopeParams r,
                                                                  const __grid_constant__ KvAppendParams kv, bool vec) {
  dependency_wait();  // launched by launch_dependent (gpu/launch.h)
  const int64_t t = blockIdx.x;
  const int half = r.head_dim / 2;
  const float pos = float(r.g_positions[t]);
  __nv_bfloat16* g_row = r.g_qkv + t * r.row_stride;  // [row_stride]
  const int64_t slot = kv.g_slots[t], cpos = kv.g_positions[t];
  const bool in_cache = slot >= 0 && slot < kv.kv.batch && cpos >= 0 && cpos < kv.kv.max_ctx;
  const bool host_row = in_cache && kv.kv.on_host(slot);
  bool wrote_host = false;
  const int64_t D = r.head_dim;
  const int groups_per_head = half / P;
  const int groups = (r.num_q_heads + r.num_k_heads) * groups_per_head;
  const int64_t v_per_head = vec ? D / 8 : D;
  const int64_t v_units = int64_t(r.num_k_heads) * v_per_head;
  for (int64_t j = blockIdx.y * int64_t(kThreads) + threadIdx.x; j < groups + v_units;
       j += int64_t(gridDim.y) * kThreads) {
    if (j < groups) {
      const int head = int(j) / groups_per_head, i = (int(j) % groups_per_head) * P;
      const int at = pair_lo(i, half, r.paired_rows), gap = pair_gap(half, r.paired_rows);
      alignas(2 * P) __nv_bfloat16 y_lo[P];
      alignas(2 * P) __nv_bfloat16 y_hi[P];
      if (head < r.num_q_heads) {
        rotate_pairs<P>(g_row + r.q_offset + int64_t(head) * r.head_dim, i, at, gap, pos, r.g_inv_freq,
                        r.attention_factor, y_lo, y_hi);
      } else {
        const int hk = head - r.num_q_heads;
        rotate_pairs<P>(g_row + r.k_offset + int64_t(hk) * r.head_dim, i, at, gap, pos, r.g_inv_freq,
                        r.attention_factor, y_lo, y_hi);
        if (in_cache) {
          using V = typename BfVec<P>::type;
          __nv_bfloat16* d_k = kv.kv.k_block(slot, hk) + cpos * D;  // [D] row of the cache
          *reinterpret_cast<V*>(d_k + at) = *reinterpret_cast<const V*>(y_lo);
          *reinterpret_cast<V*>(d_k + at + gap) = *reinterpret_cast<const V*>(y_hi);
          wrote_host = host_row;
        }
      }
    } else if (in_cache) {
      const int64_t e = j - groups, hk = e / v_per_head, u = e % v_per_head;
      const __nv_bfloat16* g_v = kv.g_qkv + t * kv.row_stride + kv.v_offset;  // [Hkv * D]
      __nv_bfloat16* d_v = kv.kv.v_block(slot, hk) + cpos * D;                 // [D] row of the cache
      if (vec) {
        reinterpret_cast<uint4*>(d_v)[u] = reinterpret_cast<const uint4*>(g_v)[e];
      } else {
        d_v[u] = g_v[e];
      }
      wrote_host = host_row;
    }
  }
  // A host-tier row: this thread's writes performed at system scope before the grid completes
  // (see kv_append_kernel); threads that wrote no host row skip the fence.
  if (wrote_host) __threadfence_system();
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
  // Pairs per thread: 4 (8-byte loads and stores) or 2 where every row, head and cache row start
  // allows it, else 1.
  const auto pairs_fit = [&](int64_t P) {
    return (r.head_dim / 2) % P == 0 && r.row_stride % P == 0 && r.q_offset % P == 0 && r.k_offset % P == 0 &&
           (addr(r.g_qkv) | addr(kv.kv.h_k) | addr(kv.kv.g_k)) % uint64_t(2 * P) == 0 &&
           addr(r.g_inv_freq) % uint64_t(4 * P) == 0;
  };
  // Wider groups only where P pairs a thread still leave at least 1024 threads per SM: below that the
  // launch is latency-bound and serial pairs cost more than they save (session 28, H100: at batch 1
  // P = 4 took 3.2 us against 2.6 for P = 1; at batch 512 11.8 against 25.6).
  const int64_t pairs = r.T * int64_t(r.num_q_heads + r.num_k_heads) * (r.head_dim / 2);
  const auto enough = [&](int64_t P) { return !narrow_small_kernels() && pairs / P >= int64_t(device_sm_count()) * 1024; };
  const int P = enough(4) && pairs_fit(4) ? 4 : enough(2) && pairs_fit(2) ? 2 : 1;
  const int64_t work = int64_t(r.num_q_heads + r.num_k_heads) * (r.head_dim / 2) / P + (vec ? kvd / 8 : kvd);
  const int64_t ctas = std::clamp<int64_t>((work + kThreads - 1) / kThreads, 1, 65535);
  const dim3 grid(unsigned(r.T), unsigned(ctas));
  if (P == 4) {
    launch_dependent(rope_kv_append_kernel<4>, grid, dim3(kThreads), 0, stream, r, kv, vec);
  } else if (P == 2) {
    launch_dependent(rope_kv_append_kernel<2>, grid, dim3(kThreads), 0, stream, r, kv, vec);
  } else {
    launch_dependent(rope_kv_append_kernel<1>, grid, dim3(kThreads), 0, stream, r, kv, vec);
  }
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
