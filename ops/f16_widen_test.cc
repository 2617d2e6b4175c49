#include "ops/f16_widen.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ops/bf16_round.h"
#include "util/bf16.h"
#include "util/f16.h"

namespace swan {
namespace {

// Every one of the 65536 halves (subnormals, infinities, NaN), at lengths
// that leave vector tails, on every target this CPU runs: convert(halves)
// gives what each must become, and same(i, expected) compares lane i.
template <class Convert, class Same>
void ExpectEveryHalfOnEveryTarget(const Convert& convert, const Same& same) {
  std::vector<uint16_t> all(65536 + 3);  // [n]
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    const auto got = convert(all);
    int wrong = 0;
    for (size_t i = 0; i < all.size(); ++i)
      if (!same(all[i], got[i]) && ++wrong <= 5) ADD_FAILURE() << "half " << all[i] << ": " << got[i];
    EXPECT_EQ(wrong, 0);
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(WidenF16, GivesTheScalarConversionOnEveryTarget) {
  ExpectEveryHalfOnEveryTarget(
      [](const std::vector<uint16_t>& halves) {
        std::vector<float> got(halves.size());  // [n]
        WidenF16(got.data(), halves.data(), int64_t(halves.size()));
        return got;
      },
      [](uint16_t half, float got) {
        const float want = F16ToF32(half);
        return std::isnan(want) ? std::isnan(got) : std::memcmp(&want, &got, sizeof(float)) == 0;
      });
}

// The same halves to bf16 in one pass: util's two conversions, bit for bit
// (NaN stays NaN).
TEST(F16ToBF16, GivesTheScalarConversionsOnEveryTarget) {
  ExpectEveryHalfOnEveryTarget(
      [](const std::vector<uint16_t>& halves) {
        std::vector<uint16_t> got(halves.size());  // [n]
        F16ToBF16(got.data(), halves.data(), int64_t(halves.size()));
        return got;
      },
      [](uint16_t half, uint16_t got) {
        const float wide = F16ToF32(half);
        return std::isnan(wide) ? std::isnan(BF16ToF32(got)) : got == F32ToBF16(wide);
      });
}

}  // namespace
}  // namespace swan
