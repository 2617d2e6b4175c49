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

// f16 and bf16 alike: every 16-bit pattern widens to util's scalar
// conversion bit for bit (NaN stays NaN).
TEST(Widen16BitFloats, GiveTheScalarConversionsOnEveryTarget) {
  struct Case {
    const char* name;
    void (*widen)(float* dst, const uint16_t* src, int64_t n);
    float (*scalar)(uint16_t bits);
  };
  for (const Case& c : {Case{"f16", WidenF16, F16ToF32}, Case{"bf16", WidenBF16, BF16ToF32}}) {
    SCOPED_TRACE(c.name);
    ExpectEveryHalfOnEveryTarget(
        [&](const std::vector<uint16_t>& bits) {
          std::vector<float> got(bits.size());  // [n]
          c.widen(got.data(), bits.data(), int64_t(bits.size()));
          return got;
        },
        [&](uint16_t bits, float got) {
          const float want = c.scalar(bits);
          return std::isnan(want) ? std::isnan(got) : std::memcmp(&want, &got, sizeof(float)) == 0;
        });
  }
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
