// Device helpers shared by the kernel families: warp/block reductions and bf16 <-> fp32.
// Header-only, device code only (included by .cu files).
#pragma once

#include <cuda_bf16.h>

#include <cfloat>
#include <cmath>

namespace dak::gpu {

struct SumOp {
  static constexpr float kIdentity = 0.f;
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  static constexpr float kIdentity = -INFINITY;
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

/// `op` over the 32 lanes of a warp (xor butterfly, offsets 16, 8, 4, 2, 1); every lane gets the
/// result, and the order of the operations is the same on every call (bit-reproducible).
template <class Op>
__device__ __forceinline__ float warp_reduce(float v, Op op) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// `op` over the block; every thread gets the result. `s_scratch` holds >= 32 floats; the block
/// size is a multiple of 32. Contains __syncthreads (all threads must call it); its barriers also
/// publish SMEM writes made before the call.
template <class Op>
__device__ __forceinline__ float block_reduce(float v, float* s_scratch, Op op) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, num_warps = blockDim.x >> 5;
  v = warp_reduce(v, op);
  __syncthreads();  // s_scratch may still be read by a previous call
  if (lane == 0) s_scratch[warp] = v;
  __syncthreads();
  v = lane < num_warps ? s_scratch[lane] : Op::kIdentity;
  return warp_reduce(v, op);
}

__device__ __forceinline__ float warp_sum(float v) { return warp_reduce(v, SumOp{}); }
__device__ __forceinline__ float warp_max(float v) { return warp_reduce(v, MaxOp{}); }
/// Sum / maximum over the block (block_reduce's contract).
__device__ __forceinline__ float block_sum(float v, float* s_scratch) { return block_reduce(v, s_scratch, SumOp{}); }
__device__ __forceinline__ float block_max(float v, float* s_scratch) { return block_reduce(v, s_scratch, MaxOp{}); }

__device__ __forceinline__ float bf16_to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ __nv_bfloat16 float_to_bf16(float x) { return __float2bfloat16_rn(x); }

/// The 8 bf16 of one 16-byte load (a uint4) as floats f[0..7], in memory order.
__device__ __forceinline__ void bf16x8_to_float(const uint4& raw, float* f) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const float2 v = __bfloat1622float2(h[e]);
    f[2 * e] = v.x;
    f[2 * e + 1] = v.y;
  }
}

/// f[0..7] rounded to bf16 (round to nearest even) and packed for one 16-byte store.
__device__ __forceinline__ uint4 float_to_bf16x8(const float* f) {
  uint4 o;
  __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&o);
#pragma unroll
  for (int e = 0; e < 4; ++e) h[e] = __floats2bfloat162_rn(f[2 * e], f[2 * e + 1]);
  return o;
}

}  // namespace dak::gpu
