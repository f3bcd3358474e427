#include "gpu/kernels/attention_decode.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include <cuda_pipeline.h>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/launch.h"
#include "gpu/kernels/reduce.cuh"

namespace dak::gpu {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kMaxHeads = 8;                                          // query heads per CTA
constexpr int kMaxOut = kMaxHeads * kAttentionMaxHeadDim / kThreads;  // (head, dim) outputs per thread
constexpr int kCombineThreads = 128;
constexpr int kSplitKeysQuantum = 128;                                // split_keys granule

// Keys staged in SMEM per chunk: 64 up to D = 128, else 32 (keeps the CTA under 48 KB).
__host__ __device__ constexpr int chunk_keys(int d) { return d <= 128 ? 64 : 32; }
// Row stride of the staged K/V rows in elements: D + 8 keeps rows 16-byte aligned and makes the
// 16-byte reads of 8 consecutive rows (one SMEM phase) hit distinct banks.
__host__ __device__ constexpr int staged_stride(int d) { return d + 8; }
__host__ __device__ constexpr size_t align16(size_t b) { return (b + 15) / 16 * 16; }
// SMEM: s_q [kMaxHeads][D] fp32 (pre-scaled), s_p [kMaxHeads][chunk] fp32 (scores, then
// probabilities), s_m / s_l / s_c [kMaxHeads] fp32 (running max, running sum, this chunk's
// rescale), then s_k and s_v [chunk][D + 8] bf16.
__host__ __device__ constexpr size_t stats_bytes(int d) {
  return align16(sizeof(float) * (size_t(kMaxHeads) * d + size_t(kMaxHeads) * chunk_keys(d) + 3 * kMaxHeads));
}
__host__ __device__ constexpr size_t smem_bytes(int d) {
  return stats_bytes(d) + 2 * sizeof(__nv_bfloat16) * size_t(chunk_keys(d)) * staged_stride(d);
}
static_assert(smem_bytes(kAttentionMaxHeadDim) <= 48 * 1024, "decode attention must fit the default SMEM limit");
static_assert(smem_bytes(128) <= 48 * 1024, "decode attention must fit the default SMEM limit");

__global__ void __launch_bounds__(kThreads) attention_decode_split_kernel(const __grid_constant__ DecodeAttentionParams dp,
                                                                          bool vec) {
  dependency_wait();  // launched by launch_dependent (gpu/launch.h)
  const AttentionParams& p = dp.attn;
  extern __shared__ __align__(16) unsigned char s_raw[];
  const int D = p.head_dim, C = chunk_keys(D), Dp = staged_stride(D);
  float* s_q = reinterpret_cast<float*>(s_raw);  // [kMaxHeads][D]
  float* s_p = s_q + kMaxHeads * D;              // [kMaxHeads][C]
  float* s_m = s_p + kMaxHeads * C;              // [kMaxHeads]
  float* s_l = s_m + kMaxHeads;                  // [kMaxHeads]
  float* s_c = s_l + kMaxHeads;                  // [kMaxHeads]
  __nv_bfloat16* s_k = reinterpret_cast<__nv_bfloat16*>(s_raw + stats_bytes(D));  // [C][Dp]
  __nv_bfloat16* s_v = s_k + C * Dp;                                               // [C][Dp]

  const int split = blockIdx.x, seg = blockIdx.z;
  if (p.segs.g_len[seg] == 0) return;
  const int G = p.num_heads / p.num_kv_heads;
  const int head_chunks = (G + kMaxHeads - 1) / kMaxHeads;
  const int hk = blockIdx.y / head_chunks;
  const int g0 = (blockIdx.y % head_chunks) * kMaxHeads;
  const int ng = min(kMaxHeads, G - g0);
  const int64_t slot = p.segs.g_slot[seg];
  const int pos = p.segs.g_pos0[seg];
  const int64_t row = p.segs.g_row0[seg];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;

  const int lo = p.window > 0 ? max(0, pos - p.window + 1) : 0;
  const int k_begin = max(lo, split * dp.split.split_keys);
  const int k_end = min(pos + 1, (split + 1) * dp.split.split_keys);  // exclusive
  // A split outside [lo, pos] writes nothing: the combine kernel reads live splits only. This
  // early exit is what makes a split count fixed by max_ctx cheap at a short live context.
  if (k_begin >= k_end) return;

  for (int e = threadIdx.x; e < ng * D; e += kThreads) {
    const int h = hk * G + g0 + e / D;
    s_q[e] = bf16_to_float(p.g_q[row * p.q_stride + int64_t(h) * D + e % D]) * p.scale;
  }
  if (threadIdx.x < kMaxHeads) {
    s_m[threadIdx.x] = -INFINITY;
    s_l[threadIdx.x] = 0.f;
  }

  // Outputs owned by this thread: (g, d) = divmod(threadIdx.x + u * kThreads, D), u < kMaxOut.
  float o[kMaxOut];
#pragma unroll
  for (int u = 0; u < kMaxOut; ++u) o[u] = 0.f;
  const int n_out = ng * D;

  const __nv_bfloat16* g_k = p.kv.k_block(slot, hk);  // [max_ctx][D], host or HBM tier
  const __nv_bfloat16* g_v = p.kv.v_block(slot, hk);  // [max_ctx][D]
  const int vpr = D / 8;  // 16-byte vectors per row (vec path)

  for (int c0 = k_begin; c0 < k_end; c0 += C) {
    const int n = min(C, k_end - c0);
    // Stage K then V rows [c0, c0 + n): coalesced 16-byte async copies (a row is D/8 lanes),
    // every copy in flight at once; V keeps landing while the scores are computed.
    if (vec) {
      for (int e = threadIdx.x; e < n * vpr; e += kThreads) {
        const int j = e / vpr, v = e % vpr;
        __pipeline_memcpy_async(s_k + j * Dp + v * 8, g_k + int64_t(c0 + j) * D + v * 8, 16);
      }
      __pipeline_commit();
      for (int e = threadIdx.x; e < n * vpr; e += kThreads) {
        const int j = e / vpr, v = e % vpr;
        __pipeline_memcpy_async(s_v + j * Dp + v * 8, g_v + int64_t(c0 + j) * D + v * 8, 16);
      }
      __pipeline_commit();
      __pipeline_wait_prior(1);
    } else {
      for (int e = threadIdx.x; e < n * D; e += kThreads) {
        const int j = e / D, d = e % D;
        s_k[j * Dp + d] = __ldg(g_k + int64_t(c0 + j) * D + d);
        s_v[j * Dp + d] = __ldg(g_v + int64_t(c0 + j) * D + d);
      }
    }
    __syncthreads();

    // Scores: thread per (head, key); consecutive threads read consecutive staged rows.
    for (int e = threadIdx.x; e < ng * n; e += kThreads) {
      const int g = e / n, j = e % n;
      const float* q = s_q + g * D;
      const __nv_bfloat16* k = s_k + j * Dp;
      float acc = 0.f;
      if (vec) {
        for (int v = 0; v < vpr; ++v) {
          float kf[8];
          bf16x8_to_float(*reinterpret_cast<const uint4*>(k + v * 8), kf);
          const float4 qa = *reinterpret_cast<const float4*>(q + v * 8);
          const float4 qb = *reinterpret_cast<const float4*>(q + v * 8 + 4);
          acc = fmaf(qa.x, kf[0], acc);
          acc = fmaf(qa.y, kf[1], acc);
          acc = fmaf(qa.z, kf[2], acc);
          acc = fmaf(qa.w, kf[3], acc);
          acc = fmaf(qb.x, kf[4], acc);
          acc = fmaf(qb.y, kf[5], acc);
          acc = fmaf(qb.z, kf[6], acc);
          acc = fmaf(qb.w, kf[7], acc);
        }
      } else {
        for (int d = 0; d < D; ++d) acc = fmaf(q[d], bf16_to_float(k[d]), acc);
      }
      s_p[g * C + j] = acc;
    }
    __syncthreads();

    // Online softmax over the chunk, fp32: a warp per head.
    for (int g = warp; g < ng; g += kWarps) {
      float mx = -INFINITY;
      for (int j = lane; j < n; j += 32) mx = fmaxf(mx, s_p[g * C + j]);
      mx = warp_max(mx);
      const float m_old = s_m[g];
      const float m_new = fmaxf(m_old, mx);
      float sum = 0.f;
      for (int j = lane; j < n; j += 32) {
        const float pj = expf(s_p[g * C + j] - m_new);
        s_p[g * C + j] = pj;
        sum += pj;
      }
      sum = warp_sum(sum);
      if (lane == 0) {
        const float corr = expf(m_old - m_new);  // 0 for the first chunk (m_old = -inf)
        s_c[g] = corr;
        s_l[g] = s_l[g] * corr + sum;
        s_m[g] = m_new;
      }
    }
    if (vec) __pipeline_wait_prior(0);
    __syncthreads();

    // o[g][d] = o[g][d] * corr[g] + sum_j p[g][j] v[j][d]
#pragma unroll
    for (int u = 0; u < kMaxOut; ++u) {
      const int e = threadIdx.x + u * kThreads;
      if (e < n_out) {
        const int g = e / D, d = e % D;
        const float* pg = s_p + g * C;
        float acc = o[u] * s_c[g];
        for (int j = 0; j < n; ++j) acc = fmaf(pg[j], bf16_to_float(s_v[j * Dp + d]), acc);
        o[u] = acc;
      }
    }
    __syncthreads();  // the next chunk overwrites s_k, s_v and s_p
  }

  const int S = dp.split.num_splits;
  if (S == 1) {  // the only split: normalize and write the output, no combine pass
    __nv_bfloat16* g_out = p.g_out + row * p.num_heads * D;  // [H][D] of this query
#pragma unroll
    for (int u = 0; u < kMaxOut; ++u) {
      const int e = threadIdx.x + u * kThreads;
      if (e < n_out) {
        const int g = e / D, d = e % D;
        const float l = s_l[g];
        g_out[int64_t(hk * G + g0 + g) * D + d] = float_to_bf16(l > 0.f ? o[u] / l : 0.f);
      }
    }
    return;
  }
#pragma unroll
  for (int u = 0; u < kMaxOut; ++u) {
    const int e = threadIdx.x + u * kThreads;
    if (e < n_out) {
      const int g = e / D, d = e % D;
      const int h = hk * G + g0 + g;
      dp.g_partial[((int64_t(seg) * p.num_heads + h) * S + split) * (D + 2) + d] = o[u];
    }
  }
  if (threadIdx.x < ng) {
    const int g = threadIdx.x, h = hk * G + g0 + g;
    float* g_ml = dp.g_partial + ((int64_t(seg) * p.num_heads + h) * S + split) * (D + 2) + D;
    g_ml[0] = s_m[g];
    g_ml[1] = s_l[g];
  }
}

__global__ void __launch_bounds__(kCombineThreads) attention_decode_combine_kernel(const __grid_constant__ DecodeAttentionParams dp) {
  dependency_wait();  // launched by launch_dependent (gpu/launch.h)
  const AttentionParams& p = dp.attn;
  const int h = blockIdx.x, seg = blockIdx.y, D = p.head_dim, S = dp.split.num_splits;
  if (p.segs.g_len[seg] == 0) return;
  // Live splits: those overlapping [lo, pos] (the split kernel wrote only these).
  const int pos = p.segs.g_pos0[seg];
  const int lo = p.window > 0 ? max(0, pos - p.window + 1) : 0;
  const int k_lo = lo / dp.split.split_keys, k_hi = min(S - 1, pos / dp.split.split_keys);
  const float* g_part = dp.g_partial + (int64_t(seg) * p.num_heads + h) * S * (D + 2);  // [S][D + 2]
  float mx = -INFINITY;
  for (int k = k_lo; k <= k_hi; ++k) mx = fmaxf(mx, g_part[k * (D + 2) + D]);
  float l = 0.f;
  if (mx != -INFINITY) {
    for (int k = k_lo; k <= k_hi; ++k) l += expf(g_part[k * (D + 2) + D] - mx) * g_part[k * (D + 2) + D + 1];
  }
  const float inv_l = l > 0.f ? 1.f / l : 0.f;
  __nv_bfloat16* g_out = p.g_out + int64_t(p.segs.g_row0[seg]) * p.num_heads * D + int64_t(h) * D;  // [D]
  for (int d = threadIdx.x; d < D; d += kCombineThreads) {
    float acc = 0.f;
    if (mx != -INFINITY) {
      for (int k = k_lo; k <= k_hi; ++k) acc += expf(g_part[k * (D + 2) + D] - mx) * g_part[k * (D + 2) + d];
    }
    g_out[d] = float_to_bf16(acc * inv_l);
  }
}

}  // namespace

DecodeSplit choose_decode_split(int64_t num_segs, int64_t num_heads, int64_t num_kv_heads, int64_t max_ctx,
                                int64_t sm_count) {
  const int64_t group = num_heads / std::max<int64_t>(1, num_kv_heads);
  const int64_t base_ctas = std::max<int64_t>(1, num_segs * num_kv_heads * ((group + kMaxHeads - 1) / kMaxHeads));
  const int64_t max_splits = std::max<int64_t>(1, (max_ctx + kSplitKeysQuantum - 1) / kSplitKeysQuantum);
  const int64_t want = std::clamp<int64_t>((4 * sm_count + base_ctas - 1) / base_ctas, 1, max_splits);
  int64_t split_keys = (max_ctx + want - 1) / want;
  split_keys = (split_keys + kSplitKeysQuantum - 1) / kSplitKeysQuantum * kSplitKeysQuantum;
  DecodeSplit s;
  s.split_keys = int32_t(split_keys);
  s.num_splits = int32_t(std::max<int64_t>(1, (max_ctx + split_keys - 1) / split_keys));
  return s;
}

uint64_t decode_workspace_bytes(int64_t num_segs, int64_t num_heads, int64_t head_dim, const DecodeSplit& split) {
  return uint64_t(num_segs) * uint64_t(num_heads) * uint64_t(split.num_splits) * uint64_t(head_dim + 2) * sizeof(float);
}

void attention_decode(const DecodeAttentionParams& dp, cudaStream_t stream) {
  const AttentionParams& p = dp.attn;
  if (p.head_dim < 1 || p.head_dim > kAttentionMaxHeadDim || p.num_kv_heads < 1 ||
      p.num_heads % p.num_kv_heads != 0 || dp.split.num_splits < 1 || dp.split.split_keys < 1) {
    fail("attention_decode: unsupported head_dim " + std::to_string(p.head_dim) + ", heads " +
             std::to_string(p.num_heads) + "/" + std::to_string(p.num_kv_heads) + " or split " +
             std::to_string(dp.split.num_splits) + "x" + std::to_string(dp.split.split_keys),
         "gpu attention", "dak's GPU attention supports head_dim 1..256 and H divisible by Hkv");
  }
  check_attention_kv(p, "attention_decode");
  if (p.segs.num_segs <= 0) return;
  const int G = p.num_heads / p.num_kv_heads;
  const int head_chunks = (G + kMaxHeads - 1) / kMaxHeads;
  const dim3 grid(unsigned(dp.split.num_splits), unsigned(p.num_kv_heads * head_chunks), unsigned(p.segs.num_segs));
  // 16-byte path: rows of D % 8 == 0 elements at 16-byte aligned tier bases (null tiers are unused).
  const bool vec = p.head_dim % 8 == 0 && p.kv.tiers_aligned16();
  launch_dependent(attention_decode_split_kernel, grid, dim3(kThreads), size_t(smem_bytes(p.head_dim)), stream, dp,
                   vec);
  DAK_CUDA_CHECK(cudaGetLastError());
  if (dp.split.num_splits == 1) return;  // the split kernel wrote the output
  const dim3 grid_c(unsigned(p.num_heads), unsigned(p.segs.num_segs));
  launch_dependent(attention_decode_combine_kernel, grid_c, dim3(kCombineThreads), 0, stream, dp);
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
