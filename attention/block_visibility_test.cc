// The cost property of the kernels: which key blocks a query tile visits is
// decided from positions, and a window visits O(W + S) keys per query.
#include "attention/block_visibility.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "attention/flash_plan.h"

namespace swan {
namespace {

TEST(BlockVisibility, ClassifiesFromPositionBounds) {
  const Span w128{128, 0};
  const QueryRange q{1000, 1015};
  // Keys 600..663: older than every query's window start (1000 - 127 = 873).
  EXPECT_EQ(ClassifyBlock(w128, BlockBounds{600, 663, true, true}, q).span, Visibility::kNone);
  // Keys 900..963: inside the window of every query, causal for all.
  EXPECT_EQ(ClassifyBlock(w128, BlockBounds{900, 963, true, true}, q).span, Visibility::kFull);
  // Keys 870..933: the earliest queries see 873.., the boundary needs a mask.
  EXPECT_EQ(ClassifyBlock(w128, BlockBounds{870, 933, true, true}, q).span, Visibility::kPartial);
  // Keys 990..1053: some are after some queries.
  EXPECT_EQ(ClassifyBlock(w128, BlockBounds{990, 1053, true, true}, q).span, Visibility::kPartial);
  // After every query.
  EXPECT_EQ(ClassifyBlock(w128, BlockBounds{1016, 1079, true, true}, q).span, Visibility::kNone);
  // Sinks: an old block holding positions < S is visible, fully when all are sinks.
  const Span sinks{128, 4};
  EXPECT_EQ(ClassifyBlock(sinks, BlockBounds{0, 3, true, true}, q).span, Visibility::kFull);
  EXPECT_EQ(ClassifyBlock(sinks, BlockBounds{0, 63, true, true}, q).span, Visibility::kPartial);
  // An empty slot in the block forces a mask; an all-empty block is skipped.
  EXPECT_EQ(ClassifyBlock(w128, BlockBounds{900, 963, true, false}, q).span, Visibility::kPartial);
  EXPECT_EQ(ClassifyBlock(w128, BlockBounds{0, 0, false, false}, q).span, Visibility::kNone);
  // The dual output's second state: causal keys outside the window.
  EXPECT_EQ(ClassifyBlock(w128, BlockBounds{600, 663, true, true}, q).outside, Visibility::kFull);
  EXPECT_EQ(ClassifyBlock(w128, BlockBounds{900, 963, true, true}, q).outside, Visibility::kNone);
  EXPECT_EQ(ClassifyBlock(Span{}, BlockBounds{600, 663, true, true}, q).outside, Visibility::kNone);
}

// Counts the key rows a prefill of n tokens visits under `span`.
int64_t VisitedKeys(int64_t n, Span span) {
  std::vector<int32_t> pos(static_cast<size_t>(n));  // [n]
  std::iota(pos.begin(), pos.end(), 0);
  std::vector<float> dummy(1);
  AttentionArgs args;
  args.shape = {4, 1, 8};  // 4 query heads on 1 KV head: 16 queries a tile
  args.q = dummy.data();
  args.q_pos = pos.data();
  args.n_q = n;
  args.kv = KvView{dummy.data(), dummy.data(), pos.data(), n, 0, KvType::kF32};
  args.span = span;
  const FlashPlan plan(args, DualOutput{dummy.data()}, false);
  int64_t keys = 0;
  for (int64_t t = 0; t < plan.n_tasks(); ++t) keys += int64_t(plan.VisitsFor(plan.Task(t)).size()) * kBlockKeys;
  return keys;
}

// Each block's bounds against a plain loop, on rings of shuffled positions
// with empty slots (-1, and other negatives), ending inside a block.
TEST(BlockVisibility, BoundsMatchAPlainLoop) {
  std::mt19937 rng(7);
  for (int64_t n_rows : {1, 63, 64, 65, 300, 1000}) {
    for (double empty : {0.0, 0.1, 0.9, 1.0}) {
      std::vector<int32_t> pos(static_cast<size_t>(n_rows));  // [n_rows]
      std::iota(pos.begin(), pos.end(), 0);
      std::shuffle(pos.begin(), pos.end(), rng);
      for (int32_t& p : pos)
        if (std::bernoulli_distribution(empty)(rng)) p = std::bernoulli_distribution(0.5)(rng) ? -1 : INT32_MIN;
      const std::vector<BlockBounds> got = ComputeBlockBounds(pos.data(), n_rows);
      ASSERT_EQ(int64_t(got.size()), (n_rows + kBlockKeys - 1) / kBlockKeys);
      for (size_t b = 0; b < got.size(); ++b) {
        BlockBounds want;
        for (int64_t j = int64_t(b) * kBlockKeys; j < std::min(n_rows, int64_t(b + 1) * kBlockKeys); ++j) {
          const int32_t p = pos[size_t(j)];
          if (p < 0) {
            want.all_valid = false;
          } else if (!want.any) {
            want.any = true;
            want.min_pos = want.max_pos = p;
          } else {
            want.min_pos = std::min(want.min_pos, p);
            want.max_pos = std::max(want.max_pos, p);
          }
        }
        SCOPED_TRACE(std::to_string(n_rows) + " rows, block " + std::to_string(b));
        EXPECT_EQ(got[b].any, want.any);
        EXPECT_EQ(got[b].all_valid, want.all_valid);
        if (want.any) {
          EXPECT_EQ(got[b].min_pos, want.min_pos);
          EXPECT_EQ(got[b].max_pos, want.max_pos);
        }
      }
    }
  }
}

TEST(BlockVisibility, WindowCostIsLinearInLength) {
  const Span window{256, 0}, with_sinks{256, 4};
  // Per query tile: the window's blocks plus at most two boundary blocks.
  for (int64_t n : {4096, 16384}) {
    const int64_t tiles = n / 16;
    EXPECT_LE(VisitedKeys(n, window), tiles * (256 + 2 * kBlockKeys)) << n;
    EXPECT_LE(VisitedKeys(n, with_sinks), tiles * (256 + 3 * kBlockKeys)) << n;
  }
  // Doubling the length doubles a window's work and quadruples full attention's.
  const double w_ratio = double(VisitedKeys(16384, window)) / double(VisitedKeys(8192, window));
  const double f_ratio = double(VisitedKeys(16384, Span{})) / double(VisitedKeys(8192, Span{}));
  EXPECT_NEAR(w_ratio, 2.0, 0.05);
  EXPECT_NEAR(f_ratio, 4.0, 0.05);
}

}  // namespace
}  // namespace swan
