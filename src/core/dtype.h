// Element types of checkpoint tensors and the scalar conversions dak needs on the host.
//
// Quantized GGUF block types (Q8_0, Q4_0, Q4_1) follow ggml's block layouts
// (ggml-common.h): a block covers kBlockElems = 32 elements.
//   Q8_0: fp16 scale d, 32 x int8 q            -> x = d * q                     (34 bytes)
//   Q4_0: fp16 scale d, 16 bytes of nibbles    -> x = d * (q - 8)               (18 bytes)
//   Q4_1: fp16 scale d, fp16 min m, 16 bytes   -> x = d * q + m                 (20 bytes)
// Nibble order: element j (j < 16) is the low nibble of byte j, element j + 16 the high one.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace dak {

enum class DType : uint8_t { kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_1 };

/// Lower-case name as printed by `dak inspect` ("f32", "bf16", "q4_1", ...).
std::string_view dtype_name(DType t);

/// Elements per storage block: 1 for plain types, 32 for the GGUF block types.
int64_t dtype_block_elems(DType t);

/// Bytes per storage block (4, 2, 2, 34, 18, 20).
int64_t dtype_block_bytes(DType t);

/// Bytes needed for n elements; n must be a multiple of dtype_block_elems(t)
/// (callers validate this and report a malformed tensor otherwise).
int64_t dtype_bytes_for(DType t, int64_t n);

/// Decodes n elements of type t from src into fp32 dst. n must be a multiple of the block size.
void dequantize(DType t, const void* src, float* dst, int64_t n);

// ------------------------------------------------------------------ scalar conversions

/// bf16 bits -> fp32 (exact).
inline float bf16_to_f32(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// fp32 -> bf16 bits, round to nearest even; NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

/// IEEE fp16 bits -> fp32 (exact, handles subnormals, inf, NaN).
float f16_to_f32(uint16_t h);

/// fp32 -> IEEE fp16 bits, round to nearest even.
uint16_t f32_to_f16(float f);

}  // namespace dak
