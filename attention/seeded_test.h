// A GoogleTest fixture with a fresh random seed per test.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>

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

}  // namespace swan::testing
