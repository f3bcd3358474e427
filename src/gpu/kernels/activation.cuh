// The MLP activation of one element, shared by the activation kernels (activation.cu) and the
// tiered GEMM's gated-activation epilogue (tiered_gemm_kernel.cuh, TieredGemmActOut), so both give
// the same bits: the same source, compiled with the same flags, in both translation units.
#pragma once

#include "core/model_config.h"

namespace dak::gpu {

/// act(x) in fp32 (transformers/activations.py): SiLU x * sigmoid(x) as x / (1 + exp(-x)); ReLU;
/// GELU exact 0.5 x (1 + erf(x / sqrt 2)); GELU tanh approximation.
static __device__ __forceinline__ float activate(float x, Activation a) {
  switch (a) {
    case Activation::kSilu: return x / (1.f + expf(-x));
    case Activation::kRelu: return fmaxf(x, 0.f);
    case Activation::kGelu: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case Activation::kGeluTanh: {
      const float k0 = 0.7978845608028654f;  // sqrt(2/pi)
      return 0.5f * x * (1.f + tanhf(k0 * (x + 0.044715f * x * x * x)));
    }
  }
  return x;
}

/// One output element. Gated (LlamaMLP), x the gate and v the up value (both the bf16 values of
/// the gate_up GEMM's output, in fp32): act(gate) * up. Plain, v the bias when there is one:
/// act(x + bias). The caller rounds the result to bf16 once.
static __device__ __forceinline__ float activation_element(float x, float v, bool gated, bool has_bias,
                                                           Activation a) {
  return gated ? activate(x, a) * v : activate(has_bias ? x + v : x, a);
}

}  // namespace dak::gpu
