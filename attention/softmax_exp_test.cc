// The prefill kernel's e^x against std::exp in double, on every target
// this machine runs: relative error over the range it serves, exact zeros
// below it.
#include "attention/softmax_exp.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace swan {
namespace {

TEST(SoftmaxExp, MatchesExpOnItsRangeAndIsZeroBelowIt) {
  const unsigned seed = std::random_device()();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::vector<float> x = {0.0f, -0.0f, -1e-30f, -0.5f, -0.34657359f, -1.0f, -10.0f, -86.99f, -87.0f};  // [n]
  std::uniform_real_distribution<float> near_zero(-2.0f, 0.0f), wide(-87.0f, 0.0f);
  for (int i = 0; i < 20000; ++i) x.push_back(i % 2 ? near_zero(rng) : wide(rng));
  const size_t in_range = x.size();
  for (float v :
       {-87.01f, -100.0f, -1e30f, -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()})
    x.push_back(v);
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    std::vector<float> y(x.size());  // [n]
    SoftmaxExpForTest(x.data(), int64_t(x.size()), y.data());
    double worst = 0.0;
    for (size_t i = 0; i < in_range; ++i) {
      const double want = std::exp(double(x[i]));
      const double rel = std::fabs(double(y[i]) - want) / want;
      worst = std::max(worst, rel);
      ASSERT_LT(rel, 2e-7) << "exp(" << x[i] << ") = " << y[i] << ", expected " << want;
    }
    for (size_t i = in_range; i < x.size(); ++i) EXPECT_EQ(y[i], 0.0f) << "exp(" << x[i] << ")";
    char text[32];
    std::snprintf(text, sizeof(text), "%.2e", worst);
    RecordProperty("worst_relative_error_" + std::string(hwy::TargetName(target)), text);
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace
}  // namespace swan
