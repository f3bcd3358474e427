// Causal prefill attention over the KV cache: ragged segments of new queries, GQA/MQA,
// optional sliding window, fp32 online softmax (a simple, correct kernel; not yet a
// tensor-core flash-attention).
//
// Operands. Segment s (one per sequence with new tokens) has len[s] queries at absolute
// positions pos0[s] .. pos0[s] + len[s] - 1, stored at rows row0[s] .. of q/out, and its keys and
// values (including the new ones, appended before this call) in cache slot slot[s] of the
// two-tier cache kv (kv_cache.h: the [max_ctx][D] block of (slot, kv head) in the host or the HBM
// tier). Query head h reads kv head h / G (G = H / Hkv). For a query at position p, key j is
// visible iff
//   j <= p  and  (window == 0 or j > p - window)      (HF sliding_window mask: q - kv < W)
// out[row, h*D + d] = sum_j softmax_j(scale * q.k_j) v_j[d], rounded to bf16 once.
// Tiling. CTA = 8 warps, (segment, kv head, tile of 16 (query, group head) rows, query-major);
// each warp owns 2 rows (o accumulators in registers: lane owns dims lane + 32i, i < 8, so
// D <= 256). Keys stream through shared memory in tiles of 32 (fp32, K rows padded by one
// word against bank conflicts; a tile is 32 consecutive rows of one (slot, kv head) block, read
// from whichever tier holds the slot); lane j scores key j for a row, the warp max / sum run the
// online softmax, then p_j is broadcast by shuffle for the V accumulation.
// Invariants: rows are independent (bits do not depend on the grid); a row with no visible
// key (impossible for causal rows, kept for safety) writes zeros.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "gpu/kernels/kv_cache.h"

namespace dak::gpu {

/// Ragged batch description shared by the prefill and decode attention kernels. All arrays
/// [num_segs] int32 in HBM.
struct AttentionSegments {
  const int32_t* g_slot = nullptr;  // cache slot (sequence) of segment s
  const int32_t* g_pos0 = nullptr;  // absolute position of its first query
  const int32_t* g_len = nullptr;   // queries (new tokens) in segment s, >= 0
  const int32_t* g_row0 = nullptr;  // row of its first query in q / out
  int32_t num_segs = 0;
};

struct AttentionParams {
  const __nv_bfloat16* g_q = nullptr;        // [T, q_stride] bf16, HBM: head h at columns h*D .. h*D+D-1
  int64_t q_stride = 0;                      // elements between query rows
  KvCacheLayer kv;                           // one layer's cache, both tiers (read only): slots [0, B)
  __nv_bfloat16* g_out = nullptr;            // [T, H*D] bf16, HBM (rows of segments only are written)
  AttentionSegments segs;                    // slot[s] in [0, kv.batch), pos0[s] + len[s] <= kv.max_ctx
  int32_t num_heads = 0;                     // H
  int32_t num_kv_heads = 0;                  // Hkv, divides H; equals kv.num_kv_heads
  int32_t head_dim = 0;                      // D, 1..256; equals kv.head_dim
  int32_t window = 0;                        // sliding window W, 0 = full causal
  float scale = 0.f;                         // softmax scale, 1/sqrt(D)
};

constexpr int32_t kAttentionMaxHeadDim = 256;

/// Throws dak::Error (naming `where`) unless p.kv is a valid cache (check_kv_cache_layer) with
/// num_kv_heads and head_dim equal to the params'. Host only; used by both attention kernels.
void check_attention_kv(const AttentionParams& p, const std::string& where);

/// Launches prefill attention; `max_seg_len` >= every len[s] (host-known). Throws dak::Error
/// for an unsupported head_dim, an invalid cache (check_kv_cache_layer) or one whose Hkv or D
/// differ from num_kv_heads / head_dim, or on a launch error.
void attention_prefill(const AttentionParams& p, int32_t max_seg_len, cudaStream_t stream);

}  // namespace dak::gpu
