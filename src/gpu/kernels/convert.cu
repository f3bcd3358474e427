#include "gpu/kernels/convert.h"

#include <cute/tensor.hpp>

#include <algorithm>

#include "gpu/cuda_check.h"

namespace dak::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kVec = 4;                     // fp32 elements per thread per tile (16 bytes)
constexpr int kTile = kThreads * kVec;      // elements per CTA tile

// kVectorized: operands are aligned for the 16-byte / 8-byte path (decided on the host).
template <bool kVectorized>
__global__ void __launch_bounds__(kThreads) convert_f32_to_bf16_kernel(const __grid_constant__ ConvertParams p) {
  using namespace cute;
  const int64_t num_tiles = (p.n + kTile - 1) / kTile;
  // Tile view: (kVec, kThreads) column-major, so thread t owns kVec contiguous elements.
  auto tile_layout = make_layout(make_shape(Int<kVec>{}, Int<kThreads>{}));
  for (int64_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    const int64_t base = tile * kTile;
    if (kVectorized && base + kTile <= p.n) {
      Tensor gIn = make_tensor(make_gmem_ptr(p.g_in + base), tile_layout);     // (kVec, kThreads) fp32
      Tensor gOut = make_tensor(make_gmem_ptr(p.g_out + base), tile_layout);   // (kVec, kThreads) bf16
      Tensor tIn = gIn(_, threadIdx.x);                                         // (kVec)
      Tensor tOut = gOut(_, threadIdx.x);                                       // (kVec)
      Tensor rIn = make_tensor<float>(Shape<Int<kVec>>{});                      // (kVec) registers
      Tensor rOut = make_tensor<__nv_bfloat16>(Shape<Int<kVec>>{});             // (kVec) registers
      copy(AutoVectorizingCopyWithAssumedAlignment<128>{}, tIn, rIn);
      CUTE_UNROLL
      for (int v = 0; v < kVec; ++v) rOut(v) = __float2bfloat16_rn(rIn(v));
      copy(AutoVectorizingCopyWithAssumedAlignment<64>{}, rOut, tOut);
    } else {
      const int64_t end = base + kTile < p.n ? base + kTile : p.n;
      for (int64_t i = base + threadIdx.x; i < end; i += kThreads) p.g_out[i] = __float2bfloat16_rn(p.g_in[i]);
    }
  }
}

}  // namespace

void convert_f32_to_bf16(const ConvertParams& p, cudaStream_t stream) {
  if (p.n <= 0) return;
  // NOTE: the vector path assumes 16-byte aligned input and 8-byte aligned output (cudaMalloc
  // and the HBM arena give 256-byte alignment); misaligned operands take the scalar path.
  const bool aligned = (reinterpret_cast<uintptr_t>(p.g_in) % 16 == 0) &&
                       (reinterpret_cast<uintptr_t>(p.g_out) % 8 == 0);
  const int64_t num_tiles = (p.n + kTile - 1) / kTile;
  const int grid = int(std::min<int64_t>(num_tiles, 132 * 8));
  if (aligned) {
    convert_f32_to_bf16_kernel<true><<<grid, kThreads, 0, stream>>>(p);
  } else {
    convert_f32_to_bf16_kernel<false><<<grid, kThreads, 0, stream>>>(p);
  }
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
