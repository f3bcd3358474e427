// Rotary position embedding (HF rotate-half convention, modeling_llama.py apply_rotary_pos_emb),
// applied in place to the q and k heads of the fused QKV activation.
//
// For token t at position p = positions[t], each q or k head x[0..D) and i < D/2:
//   a = float(p) * inv_freq[i]          (fp32 product, as HF's fp32 `freqs`)
//   c = m * cos(a), s = m * sin(a)      (m: attention_factor; 1 leaves cos and sin unchanged)
//   x[i]       <- x[i] * c - x[i + D/2] * s
//   x[i + D/2] <- x[i + D/2] * c + x[i] * s
// computed in fp32 from the bf16 inputs and rounded to bf16 once. The rope scaling variants
// (default, linear, llama3, yarn) differ in inv_freq, built on the host by cpu::rope_inv_freq
// (core/cpu_ops.h), the same table the CPU reference uses, and yarn also in m
// (cpu::rope_attention_factor, HF's attention_scaling).
// With paired_rows the two values of pair i sit at the paired rows of core/rope_layout.h instead of
// i and i + D/2 (same arithmetic, same bits, values moved).
// Tiling: grid (token, pair block); a thread rotates about one (head, i) pair of the q and k
// heads together (grid-stride beyond 65535 blocks).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/kernels/kv_append.h"

namespace dak::gpu {

struct RopeParams {
  __nv_bfloat16* g_qkv = nullptr;        // [T, row_stride] bf16, HBM: rows hold q heads then k heads
  int64_t row_stride = 0;                // elements between consecutive tokens' rows
  int64_t q_offset = 0;                  // column of q head 0 (H heads of D contiguous elements)
  int64_t k_offset = 0;                  // column of k head 0 (Hkv heads of D contiguous elements)
  const int32_t* g_positions = nullptr;  // [T] int32, HBM: absolute position of each token
  const float* g_inv_freq = nullptr;     // [D/2] fp32, HBM: from cpu::rope_inv_freq
  int64_t T = 0;
  int32_t num_q_heads = 0;               // H
  int32_t num_k_heads = 0;               // Hkv
  int32_t head_dim = 0;                  // D, even
  float attention_factor = 1.f;          // m: cos / sin multiplier (cpu::rope_attention_factor)
  bool paired_rows = false;              // heads in the paired row order (core/rope_layout.h): the
                                         //   pair (x[i], x[i + D/2]) at rows 16 (i/8) + i%8 and + 8 of
                                         //   the head (D % 16 == 0); false: the natural order
};

/// Launches on `stream`; T == 0 is a no-op. Throws dak::Error on a launch error.
void apply_rope(const RopeParams& p, cudaStream_t stream);

/// apply_rope(r) followed by kv_append(kv) (kv_append.h) in one launch, with bitwise the same
/// results: q and k heads rotated in place in the QKV rows, the rotated k heads and the v heads
/// written to the two-tier cache kv.kv (kv_cache.h; host-tier slots over PCIe). Grid (token,
/// block): a thread rotates P consecutive (head, i) pairs with P-element loads and stores, with the
/// same arithmetic per pair as apply_rope: P = 4 (8-byte accesses) or 2 where D / 2, the row
/// stride, the q / k offsets and the base pointers allow it and the T x (Hq + Hkv) x D / 2 pairs
/// still give at least 1024 threads per SM at P a thread (below, the launch is latency-bound), and
/// DAK_NARROW_SMALL_KERNELS is not set (gpu/launch.h); else P = 1. It also stores rotated k pairs
/// to the cache, or copies one 16-byte chunk (else one element) of v. Used when both describe the same QKV rows
/// (same g_qkv, row_stride, k_offset, T, and the cache's Hkv and D equal num_k_heads and
/// head_dim); otherwise the two kernels run one after the other.
/// Throws dak::Error for invalid append parameters (check_kv_append) or on a launch error.
void apply_rope_kv_append(const RopeParams& r, const KvAppendParams& kv, cudaStream_t stream);

}  // namespace dak::gpu
