// RmsNorm against its formula in double on random rows, on every Highway
// target this CPU runs: widths with vector tails (1, 7, 64, 515), enough
// rows to split among threads, in place and not, with and without rstd.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ops/elementwise.h"

namespace swan {
namespace {

TEST(RmsNorm, MatchesItsFormulaOnEveryTarget) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const float eps = 1e-6f;
  for (const int64_t dim : {1, 7, 64, 515}) {
    const int64_t rows = 300;  // past one piece of 64K values at dim 515
    std::vector<float> x(static_cast<size_t>(rows * dim)),
        w(static_cast<size_t>(dim));  // [rows, dim], [dim]
    for (float& v : x) v = normal(rng);
    for (float& v : w) v = normal(rng);
    x[0] = 0.0f;  // a row that starts with a zero, and for dim 1 is all zero:
                  // eps alone
    for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
      hwy::SetSupportedTargetsForTest(target);
      SCOPED_TRACE(std::string(hwy::TargetName(target)) + " dim " + std::to_string(dim));
      std::vector<float> out(x.size()),
          rstd(static_cast<size_t>(rows));  // [rows, dim], [rows]
      RmsNorm(out.data(), x.data(), w.data(), eps, rows, dim, rstd.data());
      std::vector<float> in_place = x;  // [rows, dim]
      RmsNorm(in_place.data(), in_place.data(), w.data(), eps, rows, dim);
      int wrong = 0;
      for (int64_t t = 0; t < rows; ++t) {
        double sum = 0;
        for (int64_t i = 0; i < dim; ++i) sum += double(x[size_t(t * dim + i)]) * x[size_t(t * dim + i)];
        const double inv = 1.0 / std::sqrt(sum / double(dim) + eps);
        if (std::fabs(rstd[size_t(t)] - inv) > 1e-6 * inv && ++wrong <= 5)
          ADD_FAILURE() << "row " << t << " rstd " << rstd[size_t(t)] << " vs " << inv;
        for (int64_t i = 0; i < dim; ++i) {
          const size_t at = size_t(t * dim + i);
          const double want = double(x[at]) * inv * w[size_t(i)];
          const double tol = 1e-6 * std::fabs(double(x[at]) * inv * w[size_t(i)]) + 1e-30;
          if (!(std::fabs(out[at] - want) <= tol) && ++wrong <= 5)
            ADD_FAILURE() << "row " << t << " col " << i << ": " << out[at] << " vs " << want;
          if (in_place[at] != out[at] && ++wrong <= 5)
            ADD_FAILURE() << "in place, row " << t << " col " << i << ": " << in_place[at] << " vs " << out[at];
        }
      }
      EXPECT_EQ(wrong, 0);
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace
}  // namespace swan
