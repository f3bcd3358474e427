#include "gpu/kernels/activation.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/rope_layout.h"
#include "gpu/cuda_check.h"
#include "gpu/launch.h"
#include "gpu/kernels/activation.cuh"
#include "gpu/kernels/reduce.cuh"

namespace dak::gpu {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) activation_kernel(const __grid_constant__ ActivationParams p) {
  dependency_wait();  // launched by launch_dependent (gpu/launch.h)
  const int64_t n = p.T * p.I;
  for (int64_t e = blockIdx.x * int64_t(kThreads) + threadIdx.x; e < n; e += int64_t(gridDim.x) * kThreads) {
    const int64_t t = e / p.I, i = e % p.I;
    float x, v = 0.0f;
    if (p.gated) {
      // gate i and up i: columns i and I + i, or their paired rows (core/rope_layout.h, D = 2I)
      const int64_t gc = p.paired ? rope_layout::paired_row(i, 2 * p.I) : i;
      const int64_t uc = p.paired ? rope_layout::paired_row(p.I + i, 2 * p.I) : p.I + i;
      x = bf16_to_float(p.g_in[t * 2 * p.I + gc]);  // gate
      v = bf16_to_float(p.g_in[t * 2 * p.I + uc]);  // up
    } else {
      x = bf16_to_float(p.g_in[e]);
      if (p.g_bias) v = bf16_to_float(p.g_bias[i]);
    }
    p.g_out[e] = float_to_bf16(activation_element(x, v, p.gated, p.g_bias != nullptr, p.act));
  }
}

// Vector path (I % 8 == 0, every pointer 16-byte aligned): a thread-iteration computes kUnroll
// 8-element chunks of one or two tokens' rows with 16-byte loads and stores, issuing every load of
// its chunks before the math, so the launch streams near HBM bandwidth at large T (the scalar loop
// above moves 2 bytes per load and divides 64-bit indices per element). The same fp32 math per
// element as activation_kernel (activation_element), so the same bits.
constexpr int kVec = 8;
constexpr int kUnroll = 2;

__global__ void __launch_bounds__(kThreads) activation_vec_kernel(const __grid_constant__ ActivationParams p) {
  dependency_wait();  // launched by launch_dependent (gpu/launch.h)
  const int64_t row_chunks = p.I / kVec, chunks = p.T * row_chunks;
  const int64_t stride = int64_t(gridDim.x) * kThreads * kUnroll;
  const uint4* g_in = reinterpret_cast<const uint4*>(p.g_in);
  const uint4* g_bias = reinterpret_cast<const uint4*>(p.g_bias);
  uint4* g_out = reinterpret_cast<uint4*>(p.g_out);
  for (int64_t c0 = blockIdx.x * int64_t(kThreads) * kUnroll + threadIdx.x; c0 < chunks; c0 += stride) {
    uint4 a[kUnroll], b[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t c = c0 + int64_t(u) * kThreads;
      if (c >= chunks) break;
      const int64_t t = c / row_chunks, i = c - t * row_chunks;
      if (p.gated) {
        // Paired: the gates of chunk i (8 values) are columns 16 i .. 16 i + 7, their ups the next 8.
        a[u] = g_in[t * 2 * row_chunks + (p.paired ? 2 * i : i)];                   // gate
        b[u] = g_in[t * 2 * row_chunks + (p.paired ? 2 * i + 1 : row_chunks + i)];  // up
      } else {
        a[u] = g_in[c];
        if (g_bias) b[u] = __ldg(g_bias + i);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t c = c0 + int64_t(u) * kThreads;
      if (c >= chunks) break;
      float x[kVec], y[kVec], v[kVec] = {};  // v: the up values, the bias, or 0
      bf16x8_to_float(a[u], x);
      if (p.gated || g_bias) bf16x8_to_float(b[u], v);
#pragma unroll
      for (int e = 0; e < kVec; ++e) y[e] = activation_element(x[e], v[e], p.gated, g_bias != nullptr, p.act);
      g_out[c] = float_to_bf16x8(y);
    }
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

// CTAs for n thread-iterations: one each, capped at 16 per SM (the grid-stride loops take the rest).
unsigned grid_for(int64_t n) {
  return unsigned(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, int64_t(device_sm_count()) * 16));
}

}  // namespace

void mlp_activation(const ActivationParams& p, cudaStream_t stream) {
  if (p.T <= 0 || p.I <= 0) return;
  if (p.paired && (!p.gated || !rope_layout::pairable(2 * p.I))) {
    fail(std::string("the paired gate_up order needs a gated MLP with I % 8 == 0 (") + (p.gated ? "gated" : "not gated") +
             ", I = " + std::to_string(p.I) + ")",
         "mlp_activation", "pass paired = false, or use rope_layout::engine_pairs_gate_up to decide");
  }
  const auto addr = [](const void* q) { return reinterpret_cast<uintptr_t>(q); };
  // The 16-byte path where the element path would need more than one pass of its capped grid: below,
  // a pass is latency-bound and 16 x fewer threads take longer (session 28, H100: at batch 1 the
  // vector path took 4.2 us against 1.1, at batch 512 16.1 against 26.9).
  const bool many = !narrow_small_kernels() && p.T * p.I > int64_t(device_sm_count()) * 16 * kThreads;
  if (many && p.I % kVec == 0 && (addr(p.g_in) | addr(p.g_bias) | addr(p.g_out)) % 16 == 0) {
    launch_dependent(activation_vec_kernel, dim3(grid_for(p.T * p.I / (kVec * kUnroll))), dim3(kThreads), 0, stream, p);
  } else {
    launch_dependent(activation_kernel, dim3(grid_for(p.T * p.I)), dim3(kThreads), 0, stream, p);
  }
  DAK_CUDA_CHECK(cudaGetLastError());
}

void add_bias_rows(__nv_bfloat16* g_y, const __nv_bfloat16* g_bias, int64_t T, int64_t M, cudaStream_t stream) {
  if (T <= 0 || M <= 0) return;
  launch_dependent(add_bias_kernel, dim3(grid_for(T * M)), dim3(kThreads), 0, stream, g_y, g_bias, T, M);
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
