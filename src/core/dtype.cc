#include "core/dtype.h"

#include <cmath>
#include <limits>

namespace dak {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kQ8_0: return "q8_0";
    case DType::kQ4_0: return "q4_0";
    case DType::kQ4_1: return "q4_1";
  }
  return "?";
}

int64_t dtype_block_elems(DType t) {
  switch (t) {
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1: return 32;
    default: return 1;
  }
}

int64_t dtype_block_bytes(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kF16:
    case DType::kBF16: return 2;
    case DType::kQ8_0: return 34;
    case DType::kQ4_0: return 18;
    case DType::kQ4_1: return 20;
  }
  return 0;
}

int64_t dtype_bytes_for(DType t, int64_t n) { return n / dtype_block_elems(t) * dtype_block_bytes(t); }

float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  float mag;
  if (exp == 0) {
    mag = std::ldexp(float(man), -24);  // zero or subnormal
  } else if (exp == 31) {
    mag = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    mag = std::ldexp(float(man | 0x400u), int(exp) - 25);
  }
  uint32_t u;
  std::memcpy(&u, &mag, 4);
  u |= sign;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const float a = std::fabs(f);
  if (std::isnan(f)) return uint16_t(sign | 0x7e00u);
  if (a >= 65520.0f) return uint16_t(sign | 0x7c00u);  // rounds to inf
  if (a < 6.103515625e-05f) {                          // subnormal range: units of 2^-24
    const float q = std::nearbyint(a * 16777216.0f);  // default rounding mode: nearest even
    return uint16_t(sign | uint16_t(q));
  }
  int e;
  const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  float q = std::nearbyint(m * 2048.0f);  // 11 significant bits
  if (q >= 2048.0f) { q /= 2; ++e; }
  const uint32_t exp = uint32_t(e - 1 + 15);
  if (exp >= 31) return uint16_t(sign | 0x7c00u);
  return uint16_t(sign | (exp << 10) | (uint32_t(q) & 0x3ffu));
}

void dequantize(DType t, const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(src);
  auto rd16 = [](const uint8_t* p) { uint16_t v; std::memcpy(&v, p, 2); return v; };
  switch (t) {
    case DType::kF32:
      std::memcpy(dst, src, size_t(n) * 4);
      return;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(rd16(b + 2 * i));
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(rd16(b + 2 * i));
      return;
    case DType::kQ8_0:
      for (int64_t blk = 0; blk < n / 32; ++blk, b += 34, dst += 32) {
        const float d = f16_to_f32(rd16(b));
        for (int j = 0; j < 32; ++j) dst[j] = d * float(int8_t(b[2 + j]));
      }
      return;
    case DType::kQ4_0:
      for (int64_t blk = 0; blk < n / 32; ++blk, b += 18, dst += 32) {
        const float d = f16_to_f32(rd16(b));
        for (int j = 0; j < 16; ++j) {
          dst[j] = d * float(int(b[2 + j] & 0x0f) - 8);
          dst[j + 16] = d * float(int(b[2 + j] >> 4) - 8);
        }
      }
      return;
    case DType::kQ4_1:
      for (int64_t blk = 0; blk < n / 32; ++blk, b += 20, dst += 32) {
        const float d = f16_to_f32(rd16(b));
        const float m = f16_to_f32(rd16(b + 2));
        for (int j = 0; j < 16; ++j) {
          dst[j] = d * float(b[4 + j] & 0x0f) + m;
          dst[j + 16] = d * float(b[4 + j] >> 4) + m;
        }
      }
      return;
  }
}

}  // namespace dak
