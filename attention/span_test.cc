#include "attention/span.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace swan {
namespace {

TEST(Span, FullSeesEveryEarlierKeyAndNothingLater) {
  const Span full{};
  EXPECT_TRUE(Sees(full, 100, 0));
  EXPECT_TRUE(Sees(full, 100, 100));
  EXPECT_FALSE(Sees(full, 100, 101));
  EXPECT_FALSE(Sees(full, 100, -1));  // empty slot
}

TEST(Span, WindowCountsTheQueryItself) {
  const Span one{1, 0};
  EXPECT_TRUE(Sees(one, 7, 7));
  EXPECT_FALSE(Sees(one, 7, 6));
  const Span w4{4, 0};
  for (int k = 0; k <= 10; ++k) EXPECT_EQ(Sees(w4, 10, k), k >= 7) << k;
  EXPECT_EQ(WindowStart(w4, 10), 7);
  EXPECT_EQ(WindowStart(w4, 2), 0);
  EXPECT_EQ(WindowStart(Span{}, 1000), 0);
}

TEST(Span, SinksStayVisibleAtAnyDistance) {
  const Span s{4, 2};
  EXPECT_TRUE(Sees(s, 1000, 0));
  EXPECT_TRUE(Sees(s, 1000, 1));
  EXPECT_FALSE(Sees(s, 1000, 2));
  EXPECT_TRUE(Sees(s, 1000, 997));
  EXPECT_FALSE(Sees(s, 1, 2));  // a sink is still causal
}

TEST(Span, BlocksSeeTheirOwnBlockFromItsStart) {
  const Span aligned{4, 0, true, 0};  // blocks [0,3], [4,7], [8,11], ...
  for (int k = 0; k <= 10; ++k) EXPECT_EQ(Sees(aligned, 9, k), k >= 8 && k <= 9) << k;
  EXPECT_EQ(WindowStart(aligned, 8), 8);  // a block's first query sees itself alone
  EXPECT_EQ(WindowStart(aligned, 11), 8);
  const Span shifted{4, 1, true, 1};  // blocks [0,0], [1,4], [5,8], ... and sink 0
  EXPECT_EQ(WindowStart(shifted, 0), 0);
  EXPECT_EQ(WindowStart(shifted, 4), 1);
  EXPECT_EQ(WindowStart(shifted, 5), 5);
  for (int k = 0; k <= 8; ++k) EXPECT_EQ(Sees(shifted, 7, k), k == 0 || (k >= 5 && k <= 7)) << k;
  // Never more keys than the sliding window of the same size, and the
  // start never moves back as the query moves on.
  for (int32_t offset = 0; offset < 7; ++offset) {
    const Span b{7, 0, true, offset};
    for (int64_t q = 0; q < 60; ++q) {
      EXPECT_GE(WindowStart(b, q), WindowStart(Span{7, 0}, q)) << offset << " " << q;
      EXPECT_GE(WindowStart(b, q + 1), WindowStart(b, q));
      EXPECT_EQ((WindowStart(b, q + 1) == q + 1), (q + 1 - offset) % 7 == 0) << offset << " " << q;
    }
  }
  EXPECT_EQ(shifted.ToString(), "blocks of 4 from 1 + 1 sinks");
}

TEST(Span, Validation) {
  EXPECT_NO_THROW(ValidateSpan(Span{}));
  EXPECT_NO_THROW(ValidateSpan(Span{16, 4}));
  EXPECT_NO_THROW(ValidateSpan(Span{2, 8}));  // more sinks than the window
  EXPECT_THROW(ValidateSpan(Span{-1, 0}), std::invalid_argument);
  EXPECT_THROW(ValidateSpan(Span{8, -2}), std::invalid_argument);
  EXPECT_THROW(ValidateSpan(Span{0, 4}), std::invalid_argument);
  EXPECT_NO_THROW(ValidateSpan(Span{8, 0, true, 7}));
  EXPECT_THROW(ValidateSpan(Span{8, 0, true, 8}), std::invalid_argument);
  EXPECT_THROW(ValidateSpan(Span{0, 0, true, 0}), std::invalid_argument);
}

TEST(Span, FlashAttentionWindowSizeIsInclusive) {
  // window_size=(left, 0): keys q-left .. q, i.e. left + 1 keys.
  const Span s = SpanFromFlashAttention(3, 0);
  EXPECT_EQ(s.window, 4);
  EXPECT_TRUE(Sees(s, 10, 7));
  EXPECT_FALSE(Sees(s, 10, 6));
  EXPECT_EQ(SpanFromFlashAttention(-1, -1), Span{});  // unbounded, causal
  EXPECT_EQ(SpanFromFlashAttention(0, 0).window, 1);
  EXPECT_THROW(SpanFromFlashAttention(4, 2, /*causal=*/false), std::invalid_argument);
  EXPECT_THROW(SpanFromFlashAttention(-3, 0), std::invalid_argument);
}

TEST(Span, LlamaCppNSwa) {
  // is_masked_swa: masked when p1 - p0 >= n_swa.
  const Span s = SpanFromLlamaCppSwa(4096);
  EXPECT_TRUE(Sees(s, 5000, 5000 - 4095));
  EXPECT_FALSE(Sees(s, 5000, 5000 - 4096));
  EXPECT_EQ(SpanFromLlamaCppSwa(0), Span{});
  EXPECT_THROW(SpanFromLlamaCppSwa(-1), std::invalid_argument);
}

TEST(Span, HuggingFaceSlidingWindow) {
  // masking_utils: keep kv_idx > q_idx - sliding_window.
  for (int sw : {1, 128, 1024, 4096}) {
    const Span s = SpanFromHfSlidingWindow(sw);
    for (int q : {0, sw - 1, sw, 3 * sw + 5})
      for (int k = 0; k <= q; ++k) ASSERT_EQ(Sees(s, q, k), k > q - sw) << sw << " " << q << " " << k;
  }
  EXPECT_EQ(SpanFromHfSlidingWindow(0), Span{});
  EXPECT_EQ(SpanFromHfSlidingWindow(-1), Span{});
  EXPECT_EQ(SpanFromHfSlidingWindow(1024).ToString(), "window 1024");
  EXPECT_EQ((Span{1024, 4}).ToString(), "window 1024 + 4 sinks");
}

}  // namespace
}  // namespace swan
