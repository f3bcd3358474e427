// Device helpers shared by the kernel families: warp/block reductions and bf16 <-> fp32.
// Header-only, device code only (included by .cu files).
#pragma once

#include <cuda_bf16.h>

#include <cfloat>
#include <cmath>

namespace dak::gpu {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Sum over the block; every thread gets the result. `s_scratch` holds >= 32 floats; the
/// block size is a multiple of 32. Contains __syncthreads (all threads must call it).
__device__ __forceinline__ float block_sum(float v, float* s_scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, num_warps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // s_scratch may still be read by a previous call
  if (lane == 0) s_scratch[warp] = v;
  __syncthreads();
  v = lane < num_warps ? s_scratch[lane] : 0.f;
  return warp_sum(v);
}

/// Maximum over the block; every thread gets the result. Same contract as block_sum.
__device__ __forceinline__ float block_max(float v, float* s_scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, num_warps = blockDim.x >> 5;
  v = warp_max(v);
  __syncthreads();  // s_scratch may still be read by a previous call
  if (lane == 0) s_scratch[warp] = v;
  __syncthreads();
  v = lane < num_warps ? s_scratch[lane] : -INFINITY;
  return warp_max(v);
}

__device__ __forceinline__ float bf16_to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ __nv_bfloat16 float_to_bf16(float x) { return __float2bfloat16_rn(x); }

}  // namespace dak::gpu
