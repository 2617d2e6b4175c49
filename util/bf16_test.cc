#include "util/bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace swan {
namespace {

TEST(BF16, RoundTripsExactValuesAndRoundsToNearest) {
  for (float f : {0.0f, 1.0f, -2.5f, 65536.0f, 1.0f / 128}) EXPECT_EQ(BF16ToF32(F32ToBF16(f)), f);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-100.0f, 100.0f);
  for (int i = 0; i < 10000; ++i) {
    const float f = u(rng);
    const float r = BF16ToF32(F32ToBF16(f));
    EXPECT_LE(std::fabs(r - f), std::fabs(f) * (1.0f / 256)) << f;  // 8 mantissa bits
  }
  EXPECT_TRUE(std::isnan(BF16ToF32(F32ToBF16(std::nanf("")))));
  EXPECT_TRUE(std::isinf(BF16ToF32(F32ToBF16(INFINITY))));
}

}  // namespace
}  // namespace swan
