// Element-type conversion kernels (weight upload: fp32 checkpoints -> bf16 in HBM).
//
// convert_f32_to_bf16: y[i] = bf16(x[i]) with round-to-nearest-even (cvt.rn.bf16.f32), NaN
// preserved, for i in [0, n). Operands in device memory (HBM). Tiling: each CTA iteration owns
// a tile of kThreads * kVec contiguous elements, one thread kVec contiguous elements (16-byte
// loads, 8-byte stores for kVec = 4); the last partial tile takes a predicated scalar path.
// Grid-stride over tiles. Bitwise equal to dak::f32_to_bf16 on the host (tested).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace dak::gpu {

struct ConvertParams {
  const float* g_in = nullptr;     // [n] fp32, HBM
  __nv_bfloat16* g_out = nullptr;  // [n] bf16, HBM (may not alias g_in)
  int64_t n = 0;                   // elements
};

/// Launches the conversion on `stream`. n == 0 is a no-op. Throws dak::Error on a launch error.
void convert_f32_to_bf16(const ConvertParams& p, cudaStream_t stream);

}  // namespace dak::gpu
