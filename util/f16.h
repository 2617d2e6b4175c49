// IEEE half precision (binary16) <-> float32, for weights stored as F16.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace swan {

// Exact (subnormals, infinities and NaN included).
inline float F16ToF32(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  float magnitude;
  if (exp == 0) {
    magnitude = std::ldexp(float(mant), -24);  // zero or subnormal
  } else if (exp == 31) {
    magnitude = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    const uint32_t bits = ((exp + 112) << 23) | (mant << 13);
    std::memcpy(&magnitude, &bits, sizeof(magnitude));
  }
  uint32_t bits;
  std::memcpy(&bits, &magnitude, sizeof(bits));
  bits |= sign;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// Round to nearest even; beyond the largest half (65504) infinity; NaN stays NaN.
inline uint16_t F32ToF16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds past 65504: infinity
  if (abs < 0x38800000u) {                                  // below 2^-14: subnormal or zero
    // The value in units of 2^-24, rounded to nearest even.
    const float scaled = std::ldexp(std::fabs(f), 24);
    return uint16_t(sign | uint16_t(std::nearbyint(scaled)));
  }
  const uint32_t rounded = abs + 0x0fffu + ((abs >> 13) & 1u);
  return uint16_t(sign | uint16_t(((rounded >> 13) - (112u << 10)) & 0xffffu));
}

}  // namespace swan
