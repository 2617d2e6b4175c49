#include "util/simd_target.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace swan {
namespace {

// Asking which target runs must not undo the cap (hwy::SupportedTargets
// resets Highway 1.0.3's dispatch to every target the CPU has).
TEST(SimdTarget, ReportingKeepsTheCap) {
  const char* before = std::getenv("SWAN_SIMD_TARGET");
  const std::optional<std::string> saved = before ? std::optional<std::string>(before) : std::nullopt;
  setenv("SWAN_SIMD_TARGET", "SSE4", 1);  // every x86-64 CPU swan runs on has SSE4
  ApplySimdTargetCap();
  EXPECT_EQ(DispatchedSimdTargetBit(), HWY_SSE4);
  EXPECT_EQ(DispatchedSimdTarget(), "SSE4");
  EXPECT_EQ(DispatchedSimdTargetBit(), HWY_SSE4);
  // back to the cap this binary started with
  hwy::DisableTargets(0);
  if (saved)
    setenv("SWAN_SIMD_TARGET", saved->c_str(), 1);
  else
    unsetenv("SWAN_SIMD_TARGET");
  ApplySimdTargetCap();
}

}  // namespace
}  // namespace swan
