// The row order of the q and k heads on the GPU engine ("paired rows"), so that RoPE and the KV
// append can run in the qkv GEMM's epilogue (kernels/tiered_gemm.h, TieredGemmRopeOut).
//
// HF's RoPE (rotate-half, modeling_llama.py apply_rotary_pos_emb) rotates the pair
// (x[i], x[i + D/2]) of each q / k head by the angle pos * inv_freq[i], i < D/2. In the natural row
// order the two values of a pair are D/2 rows of W apart, so in the tiered GEMM they land in
// different 64-row tiles (different CTAs). The GPU engine therefore stores each q and k head of
// W_qkv (and of its bias) with its rows permuted within the head: slab s = i / 8 (16 rows) holds
// pairs 8 s .. 8 s + 7, the first value of pair i at row 16 s + i % 8 and the second 8 rows below:
//
//   paired row of x[i]         = 16 (i / 8) + i % 8          i < D/2
//   paired row of x[i + D/2]   = 16 (i / 8) + i % 8 + 8
//
// In wgmma's fp32 accumulator fragment a thread holds rows r and r + 8 of its warp's 16, so both
// values of a pair sit in one thread. q . k is a sum over the head's D values, the same set in any
// order, so attention reads paired q and k (and the KV cache holds paired k) without knowing the
// order; v is not permuted. RoPE kernels take the order as a flag (RopeParams::paired_rows).
// Needs D % 16 == 0 (D/2 a multiple of 8): every head_dim the GPU kernels support (64, 80, 96,
// 128, 256) qualifies. The CPU reference keeps the natural order; logits are the same model's.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define DAK_ROPE_HD __host__ __device__
#else
#define DAK_ROPE_HD
#endif

namespace dak {
struct ModelConfig;
}

namespace dak::rope_layout {

/// Whether the GPU engine keeps model `c`'s q / k heads in the paired order: a RoPE model (not OPT)
/// whose head_dim is pairable. The one rule for the weight upload (gpu_weights.cc), the planner's
/// kernel count (op_graph.cc) and the tests. Host only (rope_layout.cc).
bool engine_pairs_rows(const ModelConfig& c);

/// Whether the GPU engine keeps model `c`'s fused gate_up rows (gate_proj then up_proj, [2I, K]) in
/// the paired order with D = 2I, one "head" for the whole matrix: gate row j and up row j are the
/// pair (x[j], x[j + I]), on rows 16 (j / 8) + j % 8 and + 8, so both sit in one thread of the wgmma
/// fragment and the gated activation runs in gate_up's epilogue (kernels/tiered_gemm.h,
/// TieredGemmActOut). A gated MLP with I % 8 == 0 (pairable(2I)). Host only (rope_layout.cc).
bool engine_pairs_gate_up(const ModelConfig& c);

/// Whether a head of `head_dim` values can take the paired order (head_dim % 16 == 0, > 0).
DAK_ROPE_HD constexpr bool pairable(int64_t head_dim) { return head_dim > 0 && head_dim % 16 == 0; }

/// Paired row (within the head, [0, D)) of value `i` of the natural order (i < D), D pairable.
DAK_ROPE_HD constexpr int64_t paired_row(int64_t i, int64_t head_dim) {
  const int64_t half = head_dim / 2;
  const int64_t pair = i < half ? i : i - half;
  return 16 * (pair / 8) + pair % 8 + (i < half ? 0 : 8);
}

/// Natural index (within the head) of paired row `p` (the inverse of paired_row).
DAK_ROPE_HD constexpr int64_t natural_index(int64_t p, int64_t head_dim) {
  const int64_t pair = 8 * (p / 16) + p % 8;
  return p % 16 < 8 ? pair : pair + head_dim / 2;
}

/// The RoPE pair index (inv_freq[i], i < D/2) of paired row `p`, and whether it is the pair's
/// first value (x[i]) or second (x[i + D/2]).
DAK_ROPE_HD constexpr int64_t pair_of_row(int64_t p) { return 8 * (p / 16) + p % 8; }
DAK_ROPE_HD constexpr bool is_first_of_pair(int64_t p) { return p % 16 < 8; }

}  // namespace dak::rope_layout
