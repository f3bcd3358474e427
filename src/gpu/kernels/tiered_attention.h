// Tiered decode attention: the DAK paper's "SplitK attention" (DESIGN.md §4). The KV cache is
// split along the batch: sequences [0, b_host) read K/V from pinned host memory over PCIe (TMA
// bulk copies straight into SMEM, no HBM staging), sequences [b_host, B) from HBM; one launch
// serves both. Work decomposition, KV layout and congestion control:
// core/tiered_attention_schedule.h (docs/bench-attention.md has the design notes).
//
// Operands (one layer): q [B, q_stride] bf16 (head h of sequence b at b * q_stride + h * D),
// len [B] int32 keys per sequence (device memory, so one CUDA graph serves every decode step;
// clamped to [0, max_ctx]; 0 gives a zero output row), the two tiers (the layout of
// KvCacheLayer, kv_cache.h, whose writer is kv_append.h)
//   h_k, h_v [b_host][Hkv][max_ctx][D] bf16, pinned mapped host memory (sequence b at slot b)
//   g_k, g_v [B - b_host][Hkv][max_ctx][D] bf16, HBM (sequence b at slot b - b_host)
// and out [B, H * D] bf16: out[b, h*D + d] = sum_j softmax_j(scale * q_h . k_j) v_j[d] over the
// keys j < len[b] of kv head h / G, rounded to bf16 once.
// Worker = warp (4 per CTA, 128 threads), persistent: it walks its items (sequence, kv head,
// split) and streams each item's keys in steps of 16 through a per-warp SMEM ring:
// - host warps, and HBM warps with schedule.hbm_staged (the plan's path for splits of >= 512
//   keys): one TMA bulk copy per operand and step (16 contiguous rows of the [max_ctx, D] block)
//   completing on the step's mbarrier, host_stages / hbm_stages steps in flight, then the warp
//   copies the landed rows into its padded step (zeros past len) and refills the ring slot;
// - the other HBM warps: copies straight into a ring of padded rows ([16][D + 8] bf16 for K and
//   for V), hbm_stages steps in flight, by 16-byte cp.async per lane (rows past len zero-filled by
//   the copy; the plan's path for short splits) or, with schedule.hbm_bulk_rows, one TMA bulk copy
//   per live row completing on the slot's mbarrier (the warp zeroes the rows past len).
// All paths give the same result.
// Both then run the same code on the padded step (one copy of it in the kernel, so the same
// instructions): S = Q K^T with mma.sync m16n8k16 (bf16 in, fp32 accumulate; rows = the G <= 16
// query heads of the kv head, rows >= G zero), fp32 online softmax in base 2 (scores scaled by
// scale * log2 e, running max and sum per row, exact rescaling), O += P V with P split into
// bf16 hi + lo parts (two mmas, so P keeps ~16 mantissa bits: fp32-grade accuracy).
// Splits: an item holding the only live split of its sequence normalizes and writes bf16 out;
// with several live splits each writes (O unnormalized, m, l) fp32 to the workspace and they are
// merged in split order, out = sum_k 2^(m_k - M) O_k / sum_k 2^(m_k - M) l_k, either by a second
// kernel (one CTA per (head, sequence), launched when num_splits > 1 and not cta_combine) or, with
// schedule.cta_combine (2 or 4 splits), by the CTA that ran them, after a CTA barrier that ends
// each round of items (its 4 warps then hold whole (sequence, kv head) pairs).
// Invariants: host memory is only read; every out row of [0, B) is written exactly once; the
// output bits do not depend on b_host or on the congestion fields (same split, same per-item
// arithmetic and the same combine order on either side).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/tiered_attention_schedule.h"

namespace dak::gpu {

struct TieredAttentionArgs {
  const __nv_bfloat16* g_q = nullptr;  // [B, q_stride] bf16, HBM; 4-byte aligned
  int64_t q_stride = 0;                // elements between sequences' query rows (even, >= H * D)
  const __nv_bfloat16* h_k = nullptr;  // [b_host, Hkv, max_ctx, D] bf16, pinned mapped host; null iff b_host == 0
  const __nv_bfloat16* h_v = nullptr;  // [b_host, Hkv, max_ctx, D] bf16, pinned mapped host
  const __nv_bfloat16* g_k = nullptr;  // [B - b_host, Hkv, max_ctx, D] bf16, HBM; null iff b_host == B
  const __nv_bfloat16* g_v = nullptr;  // [B - b_host, Hkv, max_ctx, D] bf16, HBM
  const int32_t* g_len = nullptr;      // [B] int32, HBM: keys of each sequence
  __nv_bfloat16* g_out = nullptr;      // [B, H * D] bf16, HBM (written)
  float scale = 0.f;                   // softmax scale, usually 1 / sqrt(D)
  // Optional decode-step fusion of RoPE and the KV append (rope.h apply_rope_kv_append, same
  // arithmetic, same bits): with g_new set, q is read before RoPE and rotated in registers when
  // g_inv_freq is set, and for every sequence with len >= 1 the kernel itself writes key / value
  // row len - 1 of each kv head into the sequence's tier (so the tiers are written there, and
  // only there): k = RoPE(g_new[b, new_k_offset + hk * D + d]) at position len - 1, v =
  // g_new[b, new_v_offset + hk * D + d]. Null g_new: q is final and row len - 1 is in the cache.
  const __nv_bfloat16* g_new = nullptr;  // [B, new_stride] bf16, HBM: the step's fused QKV rows
  int64_t new_stride = 0;                // elements between sequences' rows
  int64_t new_k_offset = 0;              // column of k head 0
  int64_t new_v_offset = 0;              // column of v head 0
  const float* g_inv_freq = nullptr;     // [D / 2] fp32, HBM (cpu::rope_inv_freq); null: no rotation
  float rope_attention_factor = 1.f;     // cos / sin multiplier (RopeParams::attention_factor)
};

/// True when the kernel can rotate q in registers for this head_dim (D / 2 a multiple of 16, so
/// the lane holding column i also holds i + D / 2): 64, 96, 128, 256. The append alone (no
/// g_inv_freq) works for every supported head_dim.
constexpr bool tiered_attention_rope_fusable(int64_t head_dim) {
  return tiered_attention::head_dim_supported(head_dim) && (head_dim / 2) % 16 == 0;
}

/// Resident CTAs per SM of the kernel for this schedule's head_dim and SMEM size (0: does not fit).
int tiered_attention_ctas_per_sm(const TieredAttentionSchedule& schedule);

/// Resident CTAs per SM of the kernel for `head_dim` with `smem_bytes` of dynamic SMEM (bytes; 0:
/// more than hopper::kSmemPerCtaMaxBytes less the kernel's static SMEM, or an unsupported
/// head_dim), from the CUDA occupancy API on the current device. Throws dak::Error on a CUDA error.
int tiered_attention_ctas_per_sm(int64_t head_dim, int64_t smem_bytes);

/// The kernel's static SMEM bytes for `head_dim` (cudaFuncAttributes::sharedSizeBytes; 0 for an
/// unsupported head_dim). Throws dak::Error on a CUDA error.
int64_t tiered_attention_static_smem_bytes(int64_t head_dim);

/// The default schedule on the current device: plan_tiered_attention with its SM count and the
/// kernel's occupancy at the planned SMEM size.
TieredAttentionSchedule tiered_attention_schedule(const TieredAttentionShape& shape, int64_t b_host,
                                                  const TieredAttentionLinkLimits& limits = {});

/// Enqueues the attention (and, with several splits not merged in the CTA, the combine kernel) on
/// `stream`; graph-capturable (no allocation, no synchronization). Ordering: the kernel is
/// launched with programmatic dependent launch (gpu/launch.h) and reads `len` and the K/V rows
/// [0, len - 1) of each sequence before it waits for the previous kernel on the stream, so those
/// must have been written before that kernel began (in a decode step: by earlier passes; only the
/// new row len - 1 may come from the kernel just before, e.g. kv_append). q, row len - 1 and the
/// outputs are accessed after the wait. `g_workspace`: HBM,
/// schedule.workspace_bytes(), 256-byte aligned, needs no initialization, and is not shared with
/// a concurrently running launch.
/// Throws dak::Error for an invalid schedule, a missing or misaligned pointer (tier bases 16-byte
/// aligned), host tiers that are not pinned mapped memory, or a launch error.
void tiered_attention(const TieredAttentionArgs& args, const TieredAttentionSchedule& schedule, void* g_workspace,
                      cudaStream_t stream);

#ifdef DAK_ATT_TRACE
/// Diagnostic builds only (-DDAK_ATT_TRACE for the CUDA and C++ sources): prints to stderr, under
/// `label`, the per-warp %globaltimer stamps of the last launch of the kernel (start, before and
/// after the dependency wait, first q in registers, first step landed, last step done, end) in us
/// after the earliest return from the dependency wait, min / p50 / max over warps; with
/// `host_ctas` > 0 also over the host CTAs' warps and over the HBM CTAs' warps, one line each.
void att_trace_report(const char* label, int host_ctas = 0);
#endif

}  // namespace dak::gpu
