// main() of every test binary: GoogleTest's, after the SIMD target cap
// (util/simd_target.h) that CI's second pass sets.
#include <gtest/gtest.h>

#include "util/simd_target.h"

int main(int argc, char** argv) {
  swan::ApplySimdTargetCap();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
