#include "util/f16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace swan {
namespace {

TEST(F16, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = F16ToF32(uint16_t(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(F16ToF32(F32ToF16(f)))) << h;
      continue;
    }
    EXPECT_EQ(F32ToF16(f), uint16_t(h)) << h;
  }
}

// Against the definition: the nearest half, ties to the even one, found by
// searching the halves around the value.
TEST(F16, RoundsToTheNearestHalf) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-26, 16);
  for (int i = 0; i < 200000; ++i) {
    const float f = std::ldexp(mantissa(rng), exponent(rng)) * (i % 2 ? -1.0f : 1.0f);
    const uint16_t got = F32ToF16(f);
    const double err = std::fabs(double(F16ToF32(got)) - f);
    if (std::fabs(f) >= 65520.0f) {
      EXPECT_TRUE(std::isinf(F16ToF32(got))) << f;
      continue;
    }
    for (int d : {-1, 1}) {
      const uint16_t other = uint16_t(got + d);
      if ((other & 0x7c00u) == 0x7c00u || (other & 0x8000u) != (got & 0x8000u)) continue;
      const double other_err = std::fabs(double(F16ToF32(other)) - f);
      EXPECT_TRUE(err < other_err || (err == other_err && (got & 1u) == 0)) << f << " -> " << got;
    }
  }
}

}  // namespace
}  // namespace swan
