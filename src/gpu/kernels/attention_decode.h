// Decode attention, flash-decoding style: one new query per sequence, its keys split over
// CTAs along the sequence, then a combine kernel merges the partial softmaxes exactly.
//
// Operands: as AttentionParams (attention_prefill.h), with every len[s] in {0, 1}: the query
// of segment s sits at position pos0[s] and attends to keys [lo, pos0[s]] of its cache slot
// (lo = 0, or pos0 - window + 1 with a sliding window) in the two-tier cache (kv_cache.h; a
// host-tier slot is read over PCIe by the same code). GQA/MQA: a CTA serves up to 8 query
// heads of one kv head, so each K/V element is read once per 8 heads.
// Split: keys [k * split_keys, (k + 1) * split_keys) go to split k of num_splits; the split
// layout depends only on max_ctx (DecodeSplit), never on the current lengths, so one CUDA
// graph serves every decode step. A split outside the live range [lo, pos] of its segment
// exits at once and writes nothing; the combine kernel reads only the live splits (it derives
// them from pos0 and the window, read from device memory like the split kernel).
// Tiling (split kernel): CTA = 4 warps for (segment, kv head, <= 8 query heads, split). It walks
// its keys in chunks of 64 (D <= 128) or 32 keys: the chunk's K rows and then its V rows
// (consecutive rows of the slot's [max_ctx][D] block) are staged in SMEM by coalesced 16-byte
// async copies (cp.async through cuda_pipeline.h; rows padded to D + 8 elements so 16-byte SMEM
// reads of consecutive rows are conflict-free), all in flight at once; a thread per (head, key)
// scores from SMEM while V still lands; a warp per head updates the fp32 online softmax (running
// max / sum, per-chunk rescale); a thread per (head, dim) accumulates p . V in fp32 registers.
// D % 8 != 0 (or a tier base that is not 16-byte aligned) stages element by element. With
// num_splits == 1 the CTA normalizes and writes the bf16 output itself and no combine kernel is
// launched; otherwise it writes (o unnormalized [D], m, l) per (segment, head, split) to an fp32
// workspace.
// Combine kernel (num_splits > 1): one CTA per (segment, head) over the live splits:
// out = sum_k e^(m_k - M) o_k / sum_k e^(m_k - M) l_k.
// Invariant: the result does not depend on which CTA handled which keys beyond fp32
// reassociation of the softmax sums.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/kernels/attention_prefill.h"

namespace dak::gpu {

/// How keys are split over CTAs; host-side heuristic, fixed for a (batch, max_ctx) pair.
struct DecodeSplit {
  int32_t num_splits = 1;
  int32_t split_keys = 0;  // keys per split, a multiple of 128 (4 warps x 32 keys)
};

/// Picks the split so that segments x kv-head CTAs x splits come to about 4 CTAs per SM of
/// `sm_count` (several CTAs per SM hide each chunk's load latency), with split_keys a multiple
/// of 128 and no always-empty split.
DecodeSplit choose_decode_split(int64_t num_segs, int64_t num_heads, int64_t num_kv_heads, int64_t max_ctx,
                                int64_t sm_count);

/// fp32 workspace bytes the decode kernels need: num_segs * H * num_splits * (D + 2) * 4.
uint64_t decode_workspace_bytes(int64_t num_segs, int64_t num_heads, int64_t head_dim, const DecodeSplit& split);

struct DecodeAttentionParams {
  AttentionParams attn;            // every segment len 0 or 1
  DecodeSplit split;
  float* g_partial = nullptr;      // [num_segs, H, num_splits, D + 2] fp32, HBM workspace
};

/// Launches the split kernel and the combine kernel on `stream` (graph-capturable: no host
/// synchronization, no allocation). Throws dak::Error for an unsupported head_dim or split, an
/// invalid cache or one that does not match the heads (check_attention_kv), or a launch error.
void attention_decode(const DecodeAttentionParams& p, cudaStream_t stream);

}  // namespace dak::gpu
