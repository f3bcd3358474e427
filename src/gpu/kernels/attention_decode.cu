#include "gpu/kernels/attention_decode.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels/reduce.cuh"

namespace dak::gpu {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kKeys = 32;                                  // keys per warp tile (one per lane)
constexpr int kMaxHeads = 8;                               // query heads per CTA
constexpr int kDimsPerLane = kAttentionMaxHeadDim / 32;
constexpr int kCombineThreads = 128;

// Shared memory (floats): s_q [kMaxHeads][D] (pre-scaled), s_m [kWarps][kMaxHeads],
// s_l [kWarps][kMaxHeads], s_o [kWarps][kMaxHeads][D]. 40 KB at D = 256: no opt-in needed.
constexpr size_t smem_bytes(int d) {
  return sizeof(float) * (size_t(kMaxHeads) * d + 2 * kWarps * kMaxHeads + size_t(kWarps) * kMaxHeads * d);
}
static_assert(smem_bytes(kAttentionMaxHeadDim) <= 48 * 1024, "decode attention must fit the default SMEM limit");

__global__ void __launch_bounds__(kThreads) attention_decode_split_kernel(const __grid_constant__ DecodeAttentionParams dp) {
  const AttentionParams& p = dp.attn;
  extern __shared__ float s_mem[];
  const int D = p.head_dim;
  float* s_q = s_mem;                            // [kMaxHeads][D]
  float* s_m = s_q + kMaxHeads * D;              // [kWarps][kMaxHeads]
  float* s_l = s_m + kWarps * kMaxHeads;         // [kWarps][kMaxHeads]
  float* s_o = s_l + kWarps * kMaxHeads;         // [kWarps][kMaxHeads][D]

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

  for (int e = threadIdx.x; e < ng * D; e += kThreads) {
    const int h = hk * G + g0 + e / D;
    s_q[e] = bf16_to_float(p.g_q[row * p.q_stride + int64_t(h) * D + e % D]) * p.scale;
  }
  __syncthreads();

  float m[kMaxHeads], l[kMaxHeads], o[kMaxHeads][kDimsPerLane];
#pragma unroll
  for (int g = 0; g < kMaxHeads; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.f;
#pragma unroll
    for (int u = 0; u < kDimsPerLane; ++u) o[g][u] = 0.f;
  }

  const int64_t kv_row_stride = int64_t(p.num_kv_heads) * D;
  const __nv_bfloat16* g_k = p.g_k_cache + slot * p.max_ctx * kv_row_stride + int64_t(hk) * D;  // [max_ctx][.. D]
  const __nv_bfloat16* g_v = p.g_v_cache + slot * p.max_ctx * kv_row_stride + int64_t(hk) * D;
  const bool vec_k = D % 8 == 0;

  for (int t0 = k_begin + warp * kKeys; t0 < k_end; t0 += kWarps * kKeys) {
    const int j = t0 + lane;
    const bool visible = j < k_end;
    float score[kMaxHeads];
#pragma unroll
    for (int g = 0; g < kMaxHeads; ++g) score[g] = 0.f;
    if (visible) {
      const __nv_bfloat16* r_k = g_k + int64_t(j) * kv_row_stride;  // [D]
      if (vec_k) {
        for (int d0 = 0; d0 < D; d0 += 8) {
          const uint4 raw = *reinterpret_cast<const uint4*>(r_k + d0);
          const __nv_bfloat16* kb = reinterpret_cast<const __nv_bfloat16*>(&raw);
          float kf[8];
#pragma unroll
          for (int e = 0; e < 8; ++e) kf[e] = bf16_to_float(kb[e]);
#pragma unroll
          for (int g = 0; g < kMaxHeads; ++g) {
            if (g < ng) {
#pragma unroll
              for (int e = 0; e < 8; ++e) score[g] = fmaf(s_q[g * D + d0 + e], kf[e], score[g]);
            }
          }
        }
      } else {
        for (int d = 0; d < D; ++d) {
          const float kf = bf16_to_float(r_k[d]);
#pragma unroll
          for (int g = 0; g < kMaxHeads; ++g) {
            if (g < ng) score[g] = fmaf(s_q[g * D + d], kf, score[g]);
          }
        }
      }
    }
    float pj[kMaxHeads];
#pragma unroll
    for (int g = 0; g < kMaxHeads; ++g) {
      pj[g] = 0.f;
      if (g < ng) {
        // Lane 0's key (t0) is always visible, so the tile max is finite.
        const float s = visible ? score[g] : -INFINITY;
        const float m_new = fmaxf(m[g], warp_max(s));
        const float corr = expf(m[g] - m_new);
        pj[g] = visible ? expf(s - m_new) : 0.f;
        l[g] = l[g] * corr + warp_sum(pj[g]);
        m[g] = m_new;
#pragma unroll
        for (int u = 0; u < kDimsPerLane; ++u) o[g][u] *= corr;
      }
    }
    const int tile_keys = min(kKeys, k_end - t0);
    for (int key = 0; key < tile_keys; ++key) {
      const __nv_bfloat16* r_v = g_v + int64_t(t0 + key) * kv_row_stride;  // [D]
      float vv[kDimsPerLane];
#pragma unroll
      for (int u = 0; u < kDimsPerLane; ++u) {
        const int d = lane + 32 * u;
        vv[u] = d < D ? bf16_to_float(r_v[d]) : 0.f;
      }
#pragma unroll
      for (int g = 0; g < kMaxHeads; ++g) {
        const float pk = __shfl_sync(0xffffffffu, pj[g], key);
        if (g < ng) {
#pragma unroll
          for (int u = 0; u < kDimsPerLane; ++u) o[g][u] = fmaf(pk, vv[u], o[g][u]);
        }
      }
    }
  }

  // Merge the warps' partial softmaxes.
#pragma unroll
  for (int g = 0; g < kMaxHeads; ++g) {
    if (g < ng) {
      if (lane == 0) {
        s_m[warp * kMaxHeads + g] = m[g];
        s_l[warp * kMaxHeads + g] = l[g];
      }
#pragma unroll
      for (int u = 0; u < kDimsPerLane; ++u) {
        const int d = lane + 32 * u;
        if (d < D) s_o[(warp * kMaxHeads + g) * D + d] = o[g][u];
      }
    }
  }
  __syncthreads();
  const int S = dp.split.num_splits;
  for (int e = threadIdx.x; e < ng * (D + 2); e += kThreads) {
    const int g = e / (D + 2), d = e % (D + 2);
    float mx = -INFINITY;
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, s_m[w * kMaxHeads + g]);
    float v;
    if (d == D) {
      v = mx;
    } else {
      v = 0.f;
      if (mx != -INFINITY) {
        for (int w = 0; w < kWarps; ++w) {
          const float wgt = expf(s_m[w * kMaxHeads + g] - mx);
          v += wgt * (d < D ? s_o[(w * kMaxHeads + g) * D + d] : s_l[w * kMaxHeads + g]);
        }
      }
    }
    const int h = hk * G + g0 + g;
    dp.g_partial[((int64_t(seg) * p.num_heads + h) * S + split) * (D + 2) + d] = v;
  }
}

__global__ void __launch_bounds__(kCombineThreads) attention_decode_combine_kernel(const __grid_constant__ DecodeAttentionParams dp) {
  const AttentionParams& p = dp.attn;
  const int h = blockIdx.x, seg = blockIdx.y, D = p.head_dim, S = dp.split.num_splits;
  if (p.segs.g_len[seg] == 0) return;
  const float* g_part = dp.g_partial + (int64_t(seg) * p.num_heads + h) * S * (D + 2);  // [S][D + 2]
  float mx = -INFINITY;
  for (int k = 0; k < S; ++k) mx = fmaxf(mx, g_part[k * (D + 2) + D]);
  float l = 0.f;
  if (mx != -INFINITY) {
    for (int k = 0; k < S; ++k) l += expf(g_part[k * (D + 2) + D] - mx) * g_part[k * (D + 2) + D + 1];
  }
  const float inv_l = l > 0.f ? 1.f / l : 0.f;
  __nv_bfloat16* g_out = p.g_out + int64_t(p.segs.g_row0[seg]) * p.num_heads * D + int64_t(h) * D;  // [D]
  for (int d = threadIdx.x; d < D; d += kCombineThreads) {
    float acc = 0.f;
    if (mx != -INFINITY) {
      for (int k = 0; k < S; ++k) acc += expf(g_part[k * (D + 2) + D] - mx) * g_part[k * (D + 2) + d];
    }
    g_out[d] = float_to_bf16(acc * inv_l);
  }
}

}  // namespace

DecodeSplit choose_decode_split(int64_t num_segs, int64_t num_heads, int64_t num_kv_heads, int64_t max_ctx,
                                int64_t sm_count) {
  constexpr int64_t kMinSplitKeys = kWarps * kKeys;
  const int64_t group = num_heads / std::max<int64_t>(1, num_kv_heads);
  const int64_t base_ctas = std::max<int64_t>(1, num_segs * num_kv_heads * ((group + kMaxHeads - 1) / kMaxHeads));
  const int64_t max_splits = std::max<int64_t>(1, (max_ctx + kMinSplitKeys - 1) / kMinSplitKeys);
  const int64_t want = std::clamp<int64_t>((2 * sm_count + base_ctas - 1) / base_ctas, 1, max_splits);
  int64_t split_keys = (max_ctx + want - 1) / want;
  split_keys = (split_keys + kMinSplitKeys - 1) / kMinSplitKeys * kMinSplitKeys;
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
  if (p.segs.num_segs <= 0) return;
  const int G = p.num_heads / p.num_kv_heads;
  const int head_chunks = (G + kMaxHeads - 1) / kMaxHeads;
  const dim3 grid(unsigned(dp.split.num_splits), unsigned(p.num_kv_heads * head_chunks), unsigned(p.segs.num_segs));
  attention_decode_split_kernel<<<grid, kThreads, smem_bytes(p.head_dim), stream>>>(dp);
  DAK_CUDA_CHECK(cudaGetLastError());
  const dim3 grid_c(unsigned(p.num_heads), unsigned(p.segs.num_segs));
  attention_decode_combine_kernel<<<grid_c, kCombineThreads, 0, stream>>>(dp);
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
