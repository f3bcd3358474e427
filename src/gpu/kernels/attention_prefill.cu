#include "gpu/kernels/attention_prefill.h"

#include <cmath>
#include <string>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels/reduce.cuh"

namespace dak::gpu {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = 2;
constexpr int kRows = kWarps * kRowsPerWarp;       // (query, head) rows per CTA
constexpr int kKeys = 32;                           // keys per shared-memory tile (one per lane)
constexpr int kDimsPerLane = kAttentionMaxHeadDim / 32;

// Shared memory (floats): s_q [kRows][D] (pre-scaled), s_k [kKeys][D + 1], s_v [kKeys][D].
constexpr size_t smem_bytes(int d) { return sizeof(float) * (size_t(kRows) * d + size_t(kKeys) * (d + 1) + size_t(kKeys) * d); }

__global__ void __launch_bounds__(kThreads) attention_prefill_kernel(const __grid_constant__ AttentionParams p) {
  extern __shared__ float s_mem[];
  const int D = p.head_dim;
  float* s_q = s_mem;                        // [kRows][D]
  float* s_k = s_q + kRows * D;              // [kKeys][D + 1]
  float* s_v = s_k + kKeys * (D + 1);        // [kKeys][D]

  const int seg = blockIdx.z, hk = blockIdx.y;
  const int G = p.num_heads / p.num_kv_heads;
  const int len = p.segs.g_len[seg];
  const int row_begin = blockIdx.x * kRows;  // rows enumerate (query, group head), query-major
  const int total_rows = len * G;
  if (row_begin >= total_rows) return;
  const int64_t slot = p.segs.g_slot[seg];
  const int pos0 = p.segs.g_pos0[seg];
  const int64_t row0 = p.segs.g_row0[seg];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;

  for (int e = threadIdx.x; e < kRows * D; e += kThreads) {
    const int r = e / D, d = e % D, gr = row_begin + r;
    float v = 0.f;
    if (gr < total_rows) {
      const int qi = gr / G, h = hk * G + gr % G;
      v = bf16_to_float(p.g_q[(row0 + qi) * p.q_stride + int64_t(h) * D + d]) * p.scale;
    }
    s_q[e] = v;
  }

  // Keys needed by any row of this CTA: [lo, hi].
  const int last_row = min(total_rows, row_begin + kRows) - 1;
  const int hi = pos0 + last_row / G;
  const int lo = p.window > 0 ? max(0, pos0 + row_begin / G - p.window + 1) : 0;

  bool row_valid[kRowsPerWarp];
  int row_pos[kRowsPerWarp], row_lo[kRowsPerWarp];
  float m[kRowsPerWarp], l[kRowsPerWarp], o[kRowsPerWarp][kDimsPerLane];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int gr = row_begin + warp * kRowsPerWarp + i;
    row_valid[i] = gr < total_rows;
    row_pos[i] = pos0 + gr / G;
    row_lo[i] = p.window > 0 ? max(0, row_pos[i] - p.window + 1) : 0;
    m[i] = -INFINITY;
    l[i] = 0.f;
#pragma unroll
    for (int u = 0; u < kDimsPerLane; ++u) o[i][u] = 0.f;
  }

  const __nv_bfloat16* g_k = p.kv.k_block(slot, hk);  // [max_ctx][D], host or HBM tier
  const __nv_bfloat16* g_v = p.kv.v_block(slot, hk);  // [max_ctx][D]

  for (int k0 = lo; k0 <= hi; k0 += kKeys) {
    __syncthreads();  // previous tile fully consumed (and s_q written, first time)
    for (int e = threadIdx.x; e < kKeys * D; e += kThreads) {
      const int key = e / D, d = e % D, j = k0 + key;
      float kv = 0.f, vv = 0.f;
      if (j <= hi) {
        kv = bf16_to_float(g_k[int64_t(j) * D + d]);
        vv = bf16_to_float(g_v[int64_t(j) * D + d]);
      }
      s_k[key * (D + 1) + d] = kv;
      s_v[key * D + d] = vv;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) {
      if (!row_valid[i]) continue;  // warp-uniform
      const int j = k0 + lane;
      const bool visible = j <= row_pos[i] && j >= row_lo[i];
      float score = -INFINITY;
      if (visible) {
        const float* r_q = s_q + (warp * kRowsPerWarp + i) * D;
        const float* r_k = s_k + lane * (D + 1);
        float acc = 0.f;
        for (int d = 0; d < D; ++d) acc = fmaf(r_q[d], r_k[d], acc);
        score = acc;
      }
      const float tile_max = warp_max(score);
      if (tile_max == -INFINITY) continue;  // no visible key in this tile for this row
      const float m_new = fmaxf(m[i], tile_max);
      const float corr = expf(m[i] - m_new);
      const float pj = visible ? expf(score - m_new) : 0.f;
      l[i] = l[i] * corr + warp_sum(pj);
      m[i] = m_new;
#pragma unroll
      for (int u = 0; u < kDimsPerLane; ++u) o[i][u] *= corr;
      for (int key = 0; key < kKeys; ++key) {
        const float pk = __shfl_sync(0xffffffffu, pj, key);
#pragma unroll
        for (int u = 0; u < kDimsPerLane; ++u) {
          const int d = lane + 32 * u;
          if (d < D) o[i][u] = fmaf(pk, s_v[key * D + d], o[i][u]);
        }
      }
    }
  }

  const int64_t out_stride = int64_t(p.num_heads) * D;
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    if (!row_valid[i]) continue;
    const int gr = row_begin + warp * kRowsPerWarp + i;
    const int qi = gr / G, h = hk * G + gr % G;
    const float inv_l = l[i] > 0.f ? 1.f / l[i] : 0.f;
    __nv_bfloat16* g_out = p.g_out + (row0 + qi) * out_stride + int64_t(h) * D;  // [D]
#pragma unroll
    for (int u = 0; u < kDimsPerLane; ++u) {
      const int d = lane + 32 * u;
      if (d < D) g_out[d] = float_to_bf16(o[i][u] * inv_l);
    }
  }
}

}  // namespace

void check_attention_kv(const AttentionParams& p, const std::string& where) {
  check_kv_cache_layer(p.kv, where);
  if (p.kv.num_kv_heads != p.num_kv_heads || p.kv.head_dim != p.head_dim) {
    fail("the KV cache holds " + std::to_string(p.kv.num_kv_heads) + " kv heads of " + std::to_string(p.kv.head_dim) +
             " elements, the attention expects " + std::to_string(p.num_kv_heads) + " of " +
             std::to_string(p.head_dim),
         where, "describe the cache with the model's num_kv_heads and head_dim");
  }
}

void attention_prefill(const AttentionParams& p, int32_t max_seg_len, cudaStream_t stream) {
  if (p.head_dim < 1 || p.head_dim > kAttentionMaxHeadDim || p.num_kv_heads < 1 ||
      p.num_heads % p.num_kv_heads != 0) {
    fail("attention_prefill: unsupported head_dim " + std::to_string(p.head_dim) + " or heads " +
             std::to_string(p.num_heads) + "/" + std::to_string(p.num_kv_heads),
         "gpu attention", "dak's GPU attention supports head_dim 1..256 and H divisible by Hkv");
  }
  check_attention_kv(p, "attention_prefill");
  if (p.segs.num_segs <= 0 || max_seg_len <= 0) return;
  // NOTE: set per launch (cheap, host-only) rather than once, so it holds on every device.
  DAK_CUDA_CHECK(cudaFuncSetAttribute(attention_prefill_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      int(smem_bytes(p.head_dim))));
  const int G = p.num_heads / p.num_kv_heads;
  const int64_t row_tiles = (int64_t(max_seg_len) * G + kRows - 1) / kRows;
  const dim3 grid(unsigned(row_tiles), unsigned(p.num_kv_heads), unsigned(p.segs.num_segs));
  attention_prefill_kernel<<<grid, kThreads, smem_bytes(p.head_dim), stream>>>(p);
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
