// Element types of checkpoint tensors and the scalar conversions dak needs on the host.
//
// Quantized GGUF block types follow ggml's block layouts (ggml-common.h; dequantize_row_* in
// ggml-quants.c). The legacy types cover 32 elements a block:
//   Q8_0: fp16 scale d, 32 x int8 q            -> x = d * q                     (34 bytes)
//   Q4_0: fp16 scale d, 16 bytes of nibbles    -> x = d * (q - 8)               (18 bytes)
//   Q4_1: fp16 scale d, fp16 min m, 16 bytes   -> x = d * q + m                 (20 bytes)
//   Q5_0: fp16 d, 32 high bits, 16 bytes       -> x = d * (q - 16)              (22 bytes)
//   Q5_1: fp16 d, fp16 m, 32 high bits, 16 B   -> x = d * q + m                 (24 bytes)
//   IQ4_NL: fp16 d, 16 bytes of nibbles      -> x = d * kIq4nl[q]             (18 bytes)
// (kIq4nl: ggml's 16 non-linear levels, -127 ... 113.)
// Nibble order: element j (j < 16) is the low nibble of byte j, element j + 16 the high one;
// Q5's fifth bit of element j is bit j of the 32-bit high-bit word.
// The k-quants cover 256 elements a block (super-block) of 16 or 8 sub-blocks, each with its own
// scale (and min) quantized against the block's fp16 d (and dmin):
//   Q2_K: 16 x (4-bit scale, 4-bit min), 2-bit q, d, dmin   -> x = d sc q - dmin m        (84 bytes)
//   Q3_K: 2-bit q + 1 high bit, 16 x 6-bit scales, d        -> x = d (sc - 32) q          (110 bytes)
//   Q4_K: d, dmin, 8 x (6-bit scale, 6-bit min), 4-bit q    -> x = d sc q - dmin m        (144 bytes)
//   Q5_K: as Q4_K with a fifth bit per element              -> x = d sc q - dmin m        (176 bytes)
//   Q6_K: 4-bit low + 2-bit high q, 16 x int8 scales, d     -> x = d sc (q - 32)          (210 bytes)
//   IQ4_XS: d, 8 x 6-bit scales, 4-bit q                     -> x = d (sc - 32) kIq4nl[q]  (136 bytes)
// These are what llama.cpp's Q2_K ... Q6_K, Q4_K_M, Q5_K_M, IQ4_NL, IQ4_XS and similar files hold.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace dak {

enum class DType : uint8_t { kF32, kF16, kBF16, kQ8_0, kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ2_K, kQ3_K, kQ4_K, kQ5_K, kQ6_K, kIQ4_NL, kIQ4_XS };

/// Lower-case name as printed by `dak inspect` ("f32", "bf16", "q4_1", ...).
std::string_view dtype_name(DType t);

/// Elements per storage block: 1 for plain types, 32 for Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 /
/// IQ4_NL, 256 for the k-quants and IQ4_XS.
int64_t dtype_block_elems(DType t);

/// Bytes per storage block (F32 4, F16 / BF16 2, Q8_0 34, Q4_0 18, Q4_1 20, Q5_0 22, Q5_1 24,
/// Q2_K 84, Q3_K 110, Q4_K 144, Q5_K 176, Q6_K 210, IQ4_NL 18, IQ4_XS 136).
int64_t dtype_block_bytes(DType t);

/// Bytes needed for n elements; n must be a multiple of dtype_block_elems(t)
/// (callers validate this and report a malformed tensor otherwise).
int64_t dtype_bytes_for(DType t, int64_t n);

/// Decodes n elements of type t from src into fp32 dst. n must be a multiple of the block size.
/// Each element is computed with ggml's fp32 operations in ggml's order (the scale product
/// first, then the quant times it, minus the min product), so the values equal ggml's and
/// gguf-py's dequantize (tests/cpu/test_gguf.cc checks them against gguf-py).
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
