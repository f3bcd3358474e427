#include "gpu/kernels/activation.h"

#include <algorithm>

#include "gpu/cuda_check.h"
#include "gpu/launch.h"
#include "gpu/kernels/reduce.cuh"

namespace dak::gpu {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float activate(float x, Activation a) {
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

__global__ void __launch_bounds__(kThreads) activation_kernel(const __grid_constant__ ActivationParams p) {
  dependency_wait();  // launched by launch_dependent (gpu/launch.h)
  const int64_t n = p.T * p.I;
  for (int64_t e = blockIdx.x * int64_t(kThreads) + threadIdx.x; e < n; e += int64_t(gridDim.x) * kThreads) {
    const int64_t t = e / p.I, i = e % p.I;
    float y;
    if (p.gated) {
      const float gate = bf16_to_float(p.g_in[t * 2 * p.I + i]);
      const float up = bf16_to_float(p.g_in[t * 2 * p.I + p.I + i]);
      y = activate(gate, p.act) * up;
    } else {
      float x = bf16_to_float(p.g_in[e]);
      if (p.g_bias) x += bf16_to_float(p.g_bias[i]);
      y = activate(x, p.act);
    }
    p.g_out[e] = float_to_bf16(y);
  }
}

__global__ void __launch_bounds__(kThreads) add_bias_kernel(__nv_bfloat16* g_y, const __nv_bfloat16* g_bias, int64_t T,
                                                             int64_t M) {
  dependency_wait();  // launched by launch_dependent (gpu/launch.h)
  const int64_t n = T * M;
  for (int64_t e = blockIdx.x * int64_t(kThreads) + threadIdx.x; e < n; e += int64_t(gridDim.x) * kThreads) {
    g_y[e] = float_to_bf16(bf16_to_float(g_y[e]) + bf16_to_float(g_bias[e % M]));
  }
}

unsigned grid_for(int64_t n) { return unsigned(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 132 * 16)); }

}  // namespace

void mlp_activation(const ActivationParams& p, cudaStream_t stream) {
  if (p.T <= 0 || p.I <= 0) return;
  launch_dependent(activation_kernel, dim3(grid_for(p.T * p.I)), dim3(kThreads), 0, stream, p);
  DAK_CUDA_CHECK(cudaGetLastError());
}

void add_bias_rows(__nv_bfloat16* g_y, const __nv_bfloat16* g_bias, int64_t T, int64_t M, cudaStream_t stream) {
  if (T <= 0 || M <= 0) return;
  launch_dependent(add_bias_kernel, dim3(grid_for(T * M)), dim3(kThreads), 0, stream, g_y, g_bias, T, M);
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
