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
// that leave vector tails, on every target this CPU runs.
TEST(WidenF16, GivesTheScalarConversionOnEveryTarget) {
  std::vector<uint16_t> all(65536 + 3);  // [n]
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    std::vector<float> got(all.size());
    WidenF16(got.data(), all.data(), int64_t(all.size()));
    int wrong = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      const float want = F16ToF32(all[i]);
      const bool same = std::isnan(want) ? std::isnan(got[i]) : std::memcmp(&want, &got[i], sizeof(float)) == 0;
      if (!same && ++wrong <= 5) ADD_FAILURE() << "half " << all[i] << ": " << got[i] << " vs " << want;
    }
    EXPECT_EQ(wrong, 0);
  }
  hwy::SetSupportedTargetsForTest(0);
}

// The same halves to bf16 in one pass: util's two conversions, bit for bit
// (NaN stays NaN).
TEST(F16ToBF16, GivesTheScalarConversionsOnEveryTarget) {
  std::vector<uint16_t> all(65536 + 3);  // [n]
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    std::vector<uint16_t> got(all.size());
    F16ToBF16(got.data(), all.data(), int64_t(all.size()));
    int wrong = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      const float wide = F16ToF32(all[i]);
      const uint16_t want = F32ToBF16(wide);
      const bool same = std::isnan(wide) ? std::isnan(BF16ToF32(got[i])) : got[i] == want;
      if (!same && ++wrong <= 5) ADD_FAILURE() << "half " << all[i] << ": " << got[i] << " vs " << want;
    }
    EXPECT_EQ(wrong, 0);
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace
}  // namespace swan
