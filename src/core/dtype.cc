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
    case DType::kQ5_0: return "q5_0";
    case DType::kQ5_1: return "q5_1";
    case DType::kQ2_K: return "q2_k";
    case DType::kQ3_K: return "q3_k";
    case DType::kQ4_K: return "q4_k";
    case DType::kQ5_K: return "q5_k";
    case DType::kQ6_K: return "q6_k";
    case DType::kIQ4_NL: return "iq4_nl";
    case DType::kIQ4_XS: return "iq4_xs";
  }
  return "?";
}

int64_t dtype_block_elems(DType t) {
  switch (t) {
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kIQ4_NL: return 32;
    case DType::kIQ4_XS:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K: return 256;
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
    case DType::kQ5_0: return 22;
    case DType::kQ5_1: return 24;
    case DType::kQ2_K: return 84;
    case DType::kQ3_K: return 110;
    case DType::kQ4_K: return 144;
    case DType::kQ5_K: return 176;
    case DType::kQ6_K: return 210;
    case DType::kIQ4_NL: return 18;
    case DType::kIQ4_XS: return 136;
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

namespace {

uint16_t read_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

/// Q5_0 / Q5_1: 32 elements from the 32 high bits `qh` and 16 bytes of nibbles; x = d * q + m with
/// q in [0, 32) (Q5_1), or x = d * (q - 16) (Q5_0: m unused, offset 16).
void dequantize_q5(const uint8_t* qh_bytes, const uint8_t* qs, float d, float m, bool offset, float* y) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  for (int j = 0; j < 16; ++j) {
    const int q0 = int((qs[j] & 0x0f) | (((qh >> j) & 1u) << 4));
    const int q1 = int((qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4));
    if (offset) {
      y[j] = d * float(q0 - 16);
      y[j + 16] = d * float(q1 - 16);
    } else {
      y[j] = d * float(q0) + m;
      y[j + 16] = d * float(q1) + m;
    }
  }
}

/// ggml's kvalues_iq4nl: the 16 levels of IQ4_NL and IQ4_XS.
constexpr int8_t kIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/// Q4_K / Q5_K's 6-bit scale and min of sub-block j (of 8) from the 12 packed bytes.
void scale_min_k4(int j, const uint8_t* q, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

/// One 256-element k-quant block of type t at b into y[256].
void dequantize_k_block(DType t, const uint8_t* b, float* y) {
  switch (t) {
    case DType::kQ2_K: {  // scales[16], qs[64], d, dmin
      const uint8_t* scales = b;
      const uint8_t* qs = b + 16;
      const float d = f16_to_f32(read_u16(b + 80)), dmin = f16_to_f32(read_u16(b + 82));
      for (int s = 0; s < 16; ++s) {  // sub-block s: 16 elements, 2 bits at shift 2 * ((s % 8) / 2)
        const float dl = d * float(scales[s] & 0x0f), ml = dmin * float(scales[s] >> 4);
        const uint8_t* q = qs + (s / 8) * 32 + (s % 2) * 16;
        const int shift = 2 * ((s % 8) / 2);
        for (int l = 0; l < 16; ++l) y[s * 16 + l] = dl * float((q[l] >> shift) & 3) - ml;
      }
      return;
    }
    case DType::kQ3_K: {  // hmask[32], qs[64], scales[12], d
      const uint8_t* hmask = b;
      const uint8_t* qs = b + 32;
      const uint8_t* sc = b + 96;
      const float d = f16_to_f32(read_u16(b + 108));
      for (int s = 0; s < 16; ++s) {
        const int low = s < 8 ? (sc[s] & 0x0f) : (sc[s - 8] >> 4);
        const int high = (sc[8 + s % 4] >> (2 * (s / 4))) & 3;
        const float dl = d * float((low | (high << 4)) - 32);
        const uint8_t* q = qs + (s / 8) * 32 + (s % 2) * 16;
        const uint8_t* hm = hmask + (s % 2) * 16;
        const int shift = 2 * ((s % 8) / 2), bit = s / 2;
        for (int l = 0; l < 16; ++l) {
          const int v = int((q[l] >> shift) & 3) - (((hm[l] >> bit) & 1) ? 0 : 4);
          y[s * 16 + l] = dl * float(v);
        }
      }
      return;
    }
    case DType::kQ4_K:
    case DType::kQ5_K: {  // d, dmin, scales[12], (Q5_K: qh[32]), qs[128]
      const bool five = t == DType::kQ5_K;
      const float d = f16_to_f32(read_u16(b)), dmin = f16_to_f32(read_u16(b + 2));
      const uint8_t* scales = b + 4;
      const uint8_t* qh = b + 16;
      const uint8_t* qs = b + (five ? 48 : 16);
      for (int s = 0; s < 8; ++s) {  // sub-block s: 32 elements, nibble s % 2 of bytes 32 * (s / 2)
        int sc, m;
        scale_min_k4(s, scales, sc, m);
        const float dl = d * float(sc), ml = dmin * float(m);
        const uint8_t* q = qs + (s / 2) * 32;
        for (int l = 0; l < 32; ++l) {
          int v = (s % 2) ? (q[l] >> 4) : (q[l] & 0x0f);
          if (five) v |= ((qh[l] >> s) & 1) << 4;
          y[s * 32 + l] = dl * float(v) - ml;
        }
      }
      return;
    }
    case DType::kQ6_K: {  // ql[128], qh[64], scales[16] (int8), d
      const uint8_t* ql = b;
      const uint8_t* qh = b + 128;
      const auto* scales = reinterpret_cast<const int8_t*>(b + 192);
      const float d = f16_to_f32(read_u16(b + 208));
      for (int c = 0; c < 2; ++c) {      // 128-element halves
        for (int g = 0; g < 4; ++g) {    // 32-element groups: nibble g / 2 of ql bytes 32 * (g % 2)
          for (int l = 0; l < 32; ++l) {
            const int e = c * 128 + g * 32 + l;
            const uint8_t lo = ql[c * 64 + (g % 2) * 32 + l];
            const int q = int(((g / 2) ? (lo >> 4) : (lo & 0x0f)) | (((qh[c * 32 + l] >> (2 * g)) & 3) << 4)) - 32;
            y[e] = d * float(scales[e / 16]) * float(q);
          }
        }
      }
      return;
    }
    case DType::kIQ4_XS: {  // d, scales_h (16 bits), scales_l[4], qs[128]
      const float d = f16_to_f32(read_u16(b));
      const uint16_t scales_h = read_u16(b + 2);
      const uint8_t* scales_l = b + 4;
      const uint8_t* qs = b + 8;
      for (int s = 0; s < 8; ++s) {  // sub-block s: 32 elements, the nibbles of bytes 16 s ... 16 s + 15
        const int low = (scales_l[s / 2] >> (4 * (s % 2))) & 0x0f, high = (scales_h >> (2 * s)) & 3;
        const float dl = d * float((low | (high << 4)) - 32);
        for (int j = 0; j < 16; ++j) {
          y[s * 32 + j] = dl * float(kIq4nl[qs[s * 16 + j] & 0x0f]);
          y[s * 32 + j + 16] = dl * float(kIq4nl[qs[s * 16 + j] >> 4]);
        }
      }
      return;
    }
    default: return;
  }
}

}  // namespace

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
    case DType::kQ5_0:
      for (int64_t blk = 0; blk < n / 32; ++blk, b += 22, dst += 32)
        dequantize_q5(b + 2, b + 6, f16_to_f32(rd16(b)), 0.0f, true, dst);
      return;
    case DType::kQ5_1:
      for (int64_t blk = 0; blk < n / 32; ++blk, b += 24, dst += 32)
        dequantize_q5(b + 4, b + 8, f16_to_f32(rd16(b)), f16_to_f32(rd16(b + 2)), false, dst);
      return;
    case DType::kIQ4_NL:
      for (int64_t blk = 0; blk < n / 32; ++blk, b += 18, dst += 32) {
        const float d = f16_to_f32(rd16(b));
        for (int j = 0; j < 16; ++j) {
          dst[j] = d * float(kIq4nl[b[2 + j] & 0x0f]);
          dst[j + 16] = d * float(kIq4nl[b[2 + j] >> 4]);
        }
      }
      return;
    case DType::kIQ4_XS:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K: {
      const int64_t bytes = dtype_block_bytes(t);
      for (int64_t blk = 0; blk < n / 256; ++blk, b += bytes, dst += 256) dequantize_k_block(t, b, dst);
      return;
    }
  }
}

}  // namespace dak
