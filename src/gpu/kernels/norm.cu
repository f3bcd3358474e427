#include "gpu/kernels/norm.h"

#include "gpu/cuda_check.h"
#include "gpu/kernels/reduce.cuh"

namespace dak::gpu {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) residual_norm_kernel(const __grid_constant__ NormParams p) {
  __shared__ float s_scratch[32];
  const int64_t row = blockIdx.x;
  float* g_r = p.g_residual + row * p.C;                                // [C] fp32
  const __nv_bfloat16* g_x = p.g_x ? p.g_x + row * p.C : nullptr;       // [C] bf16
  __nv_bfloat16* g_out = p.g_out + row * p.C;                           // [C] bf16
  const float inv_c = 1.0f / float(p.C);

  // Pass 1: s = x + r into the residual row; sum (LayerNorm) or sum of squares (RMSNorm).
  float acc = 0.f;
  for (int64_t c = threadIdx.x; c < p.C; c += kThreads) {
    float s = g_r[c];
    if (g_x) s += bf16_to_float(g_x[c]);
    g_r[c] = s;
    acc += p.type == NormType::kRms ? s * s : s;
  }
  acc = block_sum(acc, s_scratch);
  float mean = 0.f, rstd;
  if (p.type == NormType::kRms) {
    rstd = rsqrtf(acc * inv_c + p.eps);
  } else {
    mean = acc * inv_c;
    float var = 0.f;
    for (int64_t c = threadIdx.x; c < p.C; c += kThreads) {
      const float d = g_r[c] - mean;
      var += d * d;
    }
    var = block_sum(var, s_scratch);
    rstd = rsqrtf(var * inv_c + p.eps);
  }
  // Last pass: normalize the elements this thread wrote in pass 1.
  for (int64_t c = threadIdx.x; c < p.C; c += kThreads) {
    const float s = g_r[c];
    float n = (s - mean) * rstd;
    if (p.g_weight) n *= bf16_to_float(p.g_weight[c]);
    if (p.g_bias) n += bf16_to_float(p.g_bias[c]);
    if (p.mode == NormResidual::kPostNorm) g_r[c] = n;
    g_out[c] = float_to_bf16(n);
  }
}

}  // namespace

void residual_norm(const NormParams& p, cudaStream_t stream) {
  if (p.T <= 0) return;
  residual_norm_kernel<<<unsigned(p.T), kThreads, 0, stream>>>(p);
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
