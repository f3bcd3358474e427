#include "gpu/kernels/norm.h"

#include <cstdint>
#include <string>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/launch.h"
#include "gpu/kernels/reduce.cuh"

namespace dak::gpu {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) residual_norm_kernel(const __grid_constant__ NormParams p) {
  dependency_wait();  // launched by launch_dependent (gpu/launch.h)
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

// Vector path (C % 8 == 0, C <= 8 * kMaxChunks * blockDim): thread i owns the 8-element chunks
// i, i + blockDim, ... of the row and issues every load (residual, x, weight, bias) before the
// first reduction, so a row costs about one memory latency instead of one per strided
// iteration (the generic loop above is serialized by possible aliasing of g_r and g_x). The
// row stays in registers for both LayerNorm passes.
constexpr int kVec = 8;
constexpr int kMaxChunks = 2;  // C <= 16384 (registers: 1024 threads x <= 64)
constexpr int kMaxVecThreads = 1024;

__global__ void __launch_bounds__(kMaxVecThreads) residual_norm_vec_kernel(const __grid_constant__ NormParams p) {
  dependency_wait();  // launched by launch_dependent (gpu/launch.h)
  __shared__ float s_scratch[32];
  const int64_t row = blockIdx.x;
  const int chunks = int(p.C / kVec);
  float4* g_r = reinterpret_cast<float4*>(p.g_residual + row * p.C);                     // [C/4]
  const uint4* g_x = p.g_x ? reinterpret_cast<const uint4*>(p.g_x + row * p.C) : nullptr;  // [C/8]
  const uint4* g_w = reinterpret_cast<const uint4*>(p.g_weight);                          // [C/8] or null
  const uint4* g_b = reinterpret_cast<const uint4*>(p.g_bias);                            // [C/8] or null
  uint4* g_out = reinterpret_cast<uint4*>(p.g_out + row * p.C);                           // [C/8]
  const float inv_c = 1.0f / float(p.C);

  float4 r_r[kMaxChunks][2];
  uint4 r_x[kMaxChunks], r_w[kMaxChunks], r_b[kMaxChunks];
#pragma unroll
  for (int k = 0; k < kMaxChunks; ++k) {
    const int i = threadIdx.x + k * blockDim.x;
    if (i < chunks) {
      r_r[k][0] = g_r[2 * i];
      r_r[k][1] = g_r[2 * i + 1];
      if (g_x) r_x[k] = g_x[i];
      if (g_w) r_w[k] = __ldg(g_w + i);
      if (g_b) r_b[k] = __ldg(g_b + i);
    }
  }
  float s[kMaxChunks][kVec];
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < kMaxChunks; ++k) {
    const int i = threadIdx.x + k * blockDim.x;
    if (i < chunks) {
      const float4 a = r_r[k][0], b = r_r[k][1];
      s[k][0] = a.x; s[k][1] = a.y; s[k][2] = a.z; s[k][3] = a.w;
      s[k][4] = b.x; s[k][5] = b.y; s[k][6] = b.z; s[k][7] = b.w;
      if (g_x) {
        float xf[kVec];
        bf16x8_to_float(r_x[k], xf);
#pragma unroll
        for (int e = 0; e < kVec; ++e) s[k][e] += xf[e];
      }
#pragma unroll
      for (int e = 0; e < kVec; ++e) acc += p.type == NormType::kRms ? s[k][e] * s[k][e] : s[k][e];
    }
  }
  acc = block_sum(acc, s_scratch);
  float mean = 0.f, rstd;
  if (p.type == NormType::kRms) {
    rstd = rsqrtf(acc * inv_c + p.eps);
  } else {
    mean = acc * inv_c;
    float var = 0.f;
#pragma unroll
    for (int k = 0; k < kMaxChunks; ++k) {
      if (int(threadIdx.x + k * blockDim.x) < chunks) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) var += (s[k][e] - mean) * (s[k][e] - mean);
      }
    }
    var = block_sum(var, s_scratch);
    rstd = rsqrtf(var * inv_c + p.eps);
  }
#pragma unroll
  for (int k = 0; k < kMaxChunks; ++k) {
    const int i = threadIdx.x + k * blockDim.x;
    if (i < chunks) {
      float wf[kVec], bfv[kVec], n[kVec];
      if (g_w) bf16x8_to_float(r_w[k], wf);
      if (g_b) bf16x8_to_float(r_b[k], bfv);
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        n[e] = (s[k][e] - mean) * rstd;
        if (g_w) n[e] *= wf[e];
        if (g_b) n[e] += bfv[e];
      }
      if (p.mode == NormResidual::kPostNorm) {
        g_r[2 * i] = make_float4(n[0], n[1], n[2], n[3]);
        g_r[2 * i + 1] = make_float4(n[4], n[5], n[6], n[7]);
      } else {
        g_r[2 * i] = make_float4(s[k][0], s[k][1], s[k][2], s[k][3]);
        g_r[2 * i + 1] = make_float4(s[k][4], s[k][5], s[k][6], s[k][7]);
      }
      uint4 o;
      __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&o);
#pragma unroll
      for (int e = 0; e < 4; ++e) h[e] = __floats2bfloat162_rn(n[2 * e], n[2 * e + 1]);
      g_out[i] = o;
    }
  }
}

// One CTA of 64 threads per (64-row block, token): thread j owns row 64 b + j, thread 0 adds the
// squares in the tiered GEMM epilogue's order (norm_out_epilogue in tiered_gemm_kernel.cuh).
__global__ void __launch_bounds__(64) rms_norm_out_kernel(const __grid_constant__ NormOutParams p) {
  dependency_wait();  // launched by launch_dependent (gpu/launch.h)
  __shared__ float s_r[64];
  const int64_t b = blockIdx.x, t = blockIdx.y, j = 64 * b + threadIdx.x, at = t * p.C + j;
  const float r = __fadd_rn(p.g_residual[at], bf16_to_float(p.g_x[at]));
  p.g_residual[at] = r;
  p.g_scaled[at] = float_to_bf16(p.g_weight ? __fmul_rn(r, bf16_to_float(p.g_weight[j])) : r);
  s_r[threadIdx.x] = r;
  __syncthreads();
  if (threadIdx.x != 0) return;
  float total = 0.0f;
  for (int w = 0; w < 4; ++w) {  // a warp's 16 rows: lane group g holds rows g and g + 8
    float s[8];
    for (int g = 0; g < 8; ++g) {
      const float lo = s_r[16 * w + g], hi = s_r[16 * w + g + 8];
      s[g] = fmaf(hi, hi, fmaf(lo, lo, 0.0f));
    }
    for (int span = 1; span < 8; span <<= 1) {  // the butterfly: g + (g ^ span), span 1, 2, 4
      for (int g = 0; g < 8; g += 2 * span) s[g] = __fadd_rn(s[g], s[g + span]);
    }
    total = w == 0 ? s[0] : __fadd_rn(total, s[0]);
  }
  p.g_sumsq[b * p.T + t] = total;
}

}  // namespace

void rms_norm_out(const NormOutParams& p, cudaStream_t stream) {
  if (p.T <= 0) return;
  if (p.C % 64 != 0 || p.T > 65535) {
    fail("rms_norm_out needs a row length that is a multiple of 64 and at most 65535 tokens, got C = " +
             std::to_string(p.C) + ", T = " + std::to_string(p.T),
         "rms_norm_out", "run the separate residual_norm instead");
  }
  launch_dependent(rms_norm_out_kernel, dim3(unsigned(p.C / 64), unsigned(p.T)), dim3(64), 0, stream, p);
  DAK_CUDA_CHECK(cudaGetLastError());
}

void residual_norm(const NormParams& p, cudaStream_t stream) {
  if (p.T <= 0) return;
  const int64_t chunks = p.C / kVec;
  const bool aligned = (reinterpret_cast<uintptr_t>(p.g_residual) | reinterpret_cast<uintptr_t>(p.g_x) |
                        reinterpret_cast<uintptr_t>(p.g_weight) | reinterpret_cast<uintptr_t>(p.g_bias) |
                        reinterpret_cast<uintptr_t>(p.g_out)) % 16 == 0;
  if (aligned && p.C % kVec == 0 && chunks <= int64_t(kMaxChunks) * kMaxVecThreads) {
    // Fewest chunks per thread: one per thread up to C = 8192, then two.
    const int64_t per_thread = (chunks + kMaxVecThreads - 1) / kMaxVecThreads;
    const int64_t threads = ((chunks + per_thread - 1) / per_thread + 31) / 32 * 32;
    launch_dependent(residual_norm_vec_kernel, dim3(unsigned(p.T)), dim3(unsigned(threads)), 0, stream, p);
  } else {
    launch_dependent(residual_norm_kernel, dim3(unsigned(p.T)), dim3(kThreads), 0, stream, p);
  }
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
