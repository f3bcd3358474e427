// MLP activations on the GEMM outputs, fp32 math on bf16 operands, one rounding to bf16.
//
// Gated (Llama/Mistral/Qwen2 LlamaMLP):  in [T, 2I] = [gate | up] (the fused gate_up GEMM's
//   output: columns 0..I-1 are gate_proj, I..2I-1 up_proj; or, with `paired`, the GPU engine's
//   paired order: gate i at column 16 (i / 8) + i % 8 and up i 8 columns later) -> out[t, i] =
//   act(gate) * up.
// Plain (OPT fc1 -> act):                in [T, I] -> out[t, i] = act(in[t, i]) (out may alias in).
// act: SiLU x*sigmoid(x); ReLU; GELU exact 0.5x(1+erf(x/sqrt2)); GELU tanh approximation
// (transformers/activations.py). Optional bias (plain form only): act(in + bias[i]), for GEMMs
// whose bias the cuBLASLt epilogue did not take.
// Tiling: grid-stride over the T*I outputs: 2 x 8 elements per thread-iteration with 16-byte
// loads and stores when T*I exceeds one pass of the element path's capped grid (SMs x 16 CTAs x
// 256 threads: below, the launch is latency-bound and the element path is faster), I % 8 == 0,
// every pointer is 16-byte aligned (the engine's buffers) and DAK_NARROW_SMALL_KERNELS is not set
// (gpu/launch.h); else one element per thread-iteration. Both compute each element with the same
// fp32 math, so the same bits.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/model_config.h"

namespace dak::gpu {

struct ActivationParams {
  const __nv_bfloat16* g_in = nullptr;    // gated: [T, 2I]; plain: [T, I] bf16, HBM
  const __nv_bfloat16* g_bias = nullptr;  // [I] bf16, HBM, plain form only; null = none
  __nv_bfloat16* g_out = nullptr;         // [T, I] bf16, HBM
  int64_t T = 0;
  int64_t I = 0;                          // output width
  Activation act = Activation::kSilu;
  bool gated = true;
  bool paired = false;                    // gated only: g_in in the engine's paired gate_up order
                                          //   (core/rope_layout.h engine_pairs_gate_up): gate i at
                                          //   column 16 (i / 8) + i % 8, up i 8 columns after it
};

/// Launches on `stream`; T*I == 0 is a no-op. Throws dak::Error on a launch error.
void mlp_activation(const ActivationParams& p, cudaStream_t stream);

/// Adds a bias row to every row in place: y[t, m] += bias[m] (bf16, fp32 add, one rounding);
/// y [T, M] bf16 HBM, bias [M] bf16 HBM. The fallback when a cuBLASLt bias epilogue is not
/// available for a shape. Throws dak::Error on a launch error.
void add_bias_rows(__nv_bfloat16* g_y, const __nv_bfloat16* g_bias, int64_t T, int64_t M, cudaStream_t stream);

}  // namespace dak::gpu
