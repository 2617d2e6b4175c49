// A GoogleTest fixture with a fresh random seed per test, and a loop over
// the SIMD targets Highway compiled.
#pragma once

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cstdio>
#include <cstdlib>
#include <random>

#include "util/sanitizers.h"

namespace swan::testing {

// A test with a fresh random seed, printed when the test fails so the
// failure can be replayed with SWAN_TEST_SEED=<seed>.
class SeededTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure()) std::printf("random seed of this test: %u\n", seed_);
  }
  const unsigned seed_ = std::getenv("SWAN_TEST_SEED")
                             ? unsigned(std::strtoul(std::getenv("SWAN_TEST_SEED"), nullptr, 10))
                             : std::random_device()();
  std::mt19937 rng{seed_};
};

// Runs `body` once on every SIMD target Highway compiled that this CPU
// supports (AVX-512, AVX2, SSE4, ...), so each dispatch path is checked.
// Under AddressSanitizer only the target the dispatcher picks runs: the
// sanitizer checks memory safety, the Release build covers every target.
template <class F>
void ForEachTarget(const F& body) {
#ifdef SWAN_UNDER_ASAN
  body();
  return;
#endif
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    body();
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace swan::testing
