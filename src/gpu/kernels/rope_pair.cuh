// The RoPE rotation of one pair, shared by every kernel that rotates q or k (rope.cu, the tiered
// attention's fused path, the tiered GEMM's RoPE epilogue), so they all give the same bits.
#pragma once

#include <cuda_bf16.h>

namespace dak::gpu {

/// RoPE of one pair (x1, x2) = (x[i], x[i + D/2]) of a q or k head (HF rotate-half,
/// modeling_llama.py apply_rotary_pos_emb): angle a = pos * inv_freq (fp32, as HF's fp32 `freqs`),
/// c = m cos a, s = m sin a (m: the attention factor; m = 1 changes no bit), then
///   y1 = bf16(x1 c - x2 s),  y2 = bf16(x2 c + x1 s)
/// with explicit roundings (no FMA contraction) and round-to-nearest-even to bf16.
__device__ __forceinline__ void rope_pair(float x1, float x2, float pos, float inv_freq, float m, __nv_bfloat16& y1,
                                          __nv_bfloat16& y2) {
  const float ang = pos * inv_freq;
  float sn, cs;
  sincosf(ang, &sn, &cs);
  cs = __fmul_rn(cs, m);
  sn = __fmul_rn(sn, m);
  y1 = __float2bfloat16_rn(__fsub_rn(__fmul_rn(x1, cs), __fmul_rn(x2, sn)));
  y2 = __float2bfloat16_rn(__fadd_rn(__fmul_rn(x2, cs), __fmul_rn(x1, sn)));
}

}  // namespace dak::gpu
