// RMSNorm / LayerNorm fused with the residual add.
//
// Per row t (C elements), with s = x[t] + residual[t] (x absent: s = residual[t]):
//   RMSNorm   (LlamaRMSNorm):  n = s * rsqrt(mean(s^2) + eps) * weight
//   LayerNorm (nn.LayerNorm):  n = (s - mean(s)) * rsqrt(var(s) + eps) * weight + bias   (biased var)
// kPreNorm  (Llama, Mistral, Qwen2, OPT with do_layer_norm_before):  residual <- s, out <- bf16(n)
// kPostNorm (OPT-350m style, do_layer_norm_before = false):          residual <- n, out <- bf16(n)
// Statistics in fp32; the residual stream stays fp32 so that the skip path does not accumulate
// bf16 rounding across layers (only GEMM inputs are bf16).
// Tiling: one CTA per row. C % 8 == 0 (and C <= 16384, 16-byte aligned pointers): up to 1024
// threads, each holding one or two 8-element chunks in registers, every load issued before the
// first reduction (one memory latency per row). Otherwise 256 threads stride over C; pass 1
// writes s into the residual row and reduces, later passes re-read the elements the same
// thread wrote (no barrier needed between the write and the re-read). Invariant: no element
// of another row is touched, so rows are independent and the result does not depend on the
// grid.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace dak::gpu {

enum class NormType : int32_t { kRms, kLayer };
enum class NormResidual : int32_t { kPreNorm, kPostNorm };

struct NormParams {
  const __nv_bfloat16* g_x = nullptr;       // [T, C] bf16, HBM: sublayer output; null = 0
  float* g_residual = nullptr;              // [T, C] fp32, HBM: residual stream, read and written
  const __nv_bfloat16* g_weight = nullptr;  // [C] bf16, HBM; null = 1 (no elementwise affine)
  const __nv_bfloat16* g_bias = nullptr;    // [C] bf16, HBM; null = 0 (LayerNorm only)
  __nv_bfloat16* g_out = nullptr;           // [T, C] bf16, HBM: normalized rows
  int64_t T = 0;
  int64_t C = 0;
  float eps = 1e-6f;
  NormType type = NormType::kRms;
  NormResidual mode = NormResidual::kPreNorm;
};

/// Launches on `stream`; T == 0 is a no-op. Throws dak::Error on a launch error.
void residual_norm(const NormParams& p, cudaStream_t stream);

/// RMSNorm's norm-out step in its own launch: bitwise what the tiered GEMM's norm-out epilogue
/// (TieredGemmNormOut, kernels/tiered_gemm.h) writes, for a linear whose tiles cannot carry it
/// (host rows not a multiple of 64). Per token t and row j of C: resid[t, j] += float(x[t, j]);
/// scaled[t, j] = bf16(resid[t, j] * weight[j]); sumsq[b, t] = sum of resid^2 over rows
/// [64 b, 64 b + 64), in the epilogue's order (fmaf over rows j and j + 8, a butterfly over the 8
/// pairs, then the four 16-row groups in order). The next linear applies 1 / rms (TieredGemmNormIn).
struct NormOutParams {
  const __nv_bfloat16* g_x = nullptr;       // [T, C] bf16, HBM: the linear's output (bias included)
  float* g_residual = nullptr;              // [T, C] fp32, HBM: residual stream, read and written
  const __nv_bfloat16* g_weight = nullptr;  // [C] bf16, HBM: the next RMSNorm's weight; null = 1
  __nv_bfloat16* g_scaled = nullptr;        // [T, C] bf16, HBM (out): bf16(resid * weight)
  float* g_sumsq = nullptr;                 // [C / 64, T] fp32, HBM (out): block sums of resid^2
  int64_t T = 0;
  int64_t C = 0;                            // a multiple of 64
};

/// Launches on `stream`; T == 0 is a no-op. Throws dak::Error if C is not a multiple of 64, T is
/// above 65535 (one grid row per token), or the launch fails.
void rms_norm_out(const NormOutParams& p, cudaStream_t stream);

}  // namespace dak::gpu
