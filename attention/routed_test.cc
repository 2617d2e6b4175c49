#include "attention/routed.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "util/seeded_test.h"
#include "attention/test_problem.h"

namespace swan {
namespace {

using RoutedTest = testing::SeededTest;

// Each query's row equals the reference under the span its route picks.
TEST_F(RoutedTest, EachQueryFollowsItsRoute) {
  for (double ratio : {0.0, 0.13, 0.5, 1.0}) {
    testing::Problem p = testing::MakePrefill(rng, AttentionShape{8, 2, 64}, Span{48, 4}, 300, 300, true);
    std::bernoulli_distribution draw(ratio);
    std::vector<uint8_t> route(300);  // [n_q]
    for (auto& r : route) r = draw(rng);
    const AttentionArgs a = p.Args();
    const size_t n = p.q.size(), nl = size_t(300 * 8);
    std::vector<float> out(n), lse(nl), window(n), window_lse(nl), full(n), full_lse(nl);
    AttendRouted(a, route.data(), out.data(), lse.data());
    AttendReference(a, window.data(), window_lse.data());
    AttentionArgs f = a;
    f.span = Span{};
    AttendReference(f, full.data(), full_lse.data());
    std::vector<float> expected(n), expected_lse(nl);
    for (size_t i = 0; i < 300; ++i) {
      const std::vector<float>& src = route[i] ? full : window;
      const std::vector<float>& src_lse = route[i] ? full_lse : window_lse;
      std::copy(src.begin() + long(i * 8 * 64), src.begin() + long((i + 1) * 8 * 64),
                expected.begin() + long(i * 8 * 64));
      std::copy(src_lse.begin() + long(i * 8), src_lse.begin() + long((i + 1) * 8), expected_lse.begin() + long(i * 8));
    }
    EXPECT_LE(testing::RelativeError(out, expected), 1e-5) << "ratio " << ratio;
    EXPECT_LE(testing::RelativeError(lse, expected_lse), 1e-5) << "ratio " << ratio;
  }
}

TEST_F(RoutedTest, RejectsMissingRoutes) {
  const testing::Problem p = testing::MakePrefill(rng, AttentionShape{2, 1, 8}, Span{4, 0}, 6, 6);
  std::vector<float> out(p.q.size());
  EXPECT_THROW(AttendRouted(p.Args(), nullptr, out.data()), std::invalid_argument);
}

}  // namespace
}  // namespace swan
