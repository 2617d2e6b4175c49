#include "eval/attention_work.h"

#include <gtest/gtest.h>

#include <random>

namespace swan {
namespace {

// KeysVisible against counting Sees() key by key, on random spans.
TEST(AttentionWork, KeysVisibleCountsWhatSeesShows) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    Span span;
    span.window = int32_t(rng() % 3 == 0 ? 0 : 1 + rng() % 40);
    span.sinks = span.window == 0 ? 0 : int32_t(rng() % 6);
    const int64_t q = int64_t(rng() % 120);
    int64_t seen = 0;
    for (int64_t k = 0; k <= q; ++k) seen += Sees(span, q, k);
    EXPECT_EQ(KeysVisible(span, q), seen) << span.ToString() << " q " << q;
  }
}

// A full layer, a window layer and a routed layer with known routes.
TEST(AttentionWork, SumsOverLayersAndFollowsRoutes) {
  AttentionPlan plan;
  plan.layers.resize(3);
  plan.layers[0].kind = LayerKind::kFull;
  plan.layers[1].kind = LayerKind::kWindow;
  plan.layers[1].span = {4, 1};
  plan.layers[2].kind = LayerKind::kRouted;
  plan.layers[2].span = {4, 0};
  const int64_t T = 10;
  std::vector<std::vector<uint8_t>> routes(3);
  routes[2] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1};  // the last two to full attention
  AttentionWork work;
  work.AddSequence(plan, T, routes);
  // full: 1+..+10 = 55; window 4 + 1 sink: 1,2,3,4 then 5 from q=4 on (6 of them) = 40;
  // routed: window 4 for q=0..7 (1+2+3+4*5 = 26) and full for q=8,9 (9+10) = 45.
  EXPECT_DOUBLE_EQ(work.keys, 55 + 40 + 45);
  EXPECT_EQ(work.pairs, 30);
  EXPECT_EQ(work.routed_pairs, 10);
  EXPECT_EQ(work.routed_full, 2);
  EXPECT_DOUBLE_EQ(work.RoutedFullRatio(), 0.2);
  routes[2].pop_back();
  EXPECT_THROW(work.AddSequence(plan, T, routes), std::invalid_argument);
}

}  // namespace
}  // namespace swan
