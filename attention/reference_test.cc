// The reference kernel on cases small enough to work out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "attention/attention.h"

namespace swan {
namespace {

// One head, head_dim 1: logits are q*k, outputs weighted means of v.
struct Tiny {
  std::vector<float> q, k, v;
  std::vector<int32_t> q_pos, k_pos;
  AttentionArgs Args(Span span, const float* sinks = nullptr) {
    AttentionArgs a;
    a.shape = {1, 1, 1};
    a.q = q.data();
    a.q_pos = q_pos.data();
    a.n_q = int64_t(q.size());
    a.kv = KvView{k.data(), v.data(), k_pos.data(), int64_t(k.size()), 0, KvType::kF32};
    a.span = span;
    a.sink_logits = sinks;
    a.scale = 1.0f;
    return a;
  }
};

TEST(AttendReference, WeightsFollowTheSpan) {
  Tiny t{{1.0f}, {0.0f, std::log(2.0f), std::log(3.0f)}, {10.0f, 20.0f, 30.0f}, {2}, {0, 1, 2}};
  float out = 0, lse = 0;
  AttendReference(t.Args(Span{}), &out, &lse);  // weights 1:2:3
  EXPECT_NEAR(out, (10 + 40 + 90) / 6.0, 1e-5);
  EXPECT_NEAR(lse, std::log(6.0), 1e-6);
  AttendReference(t.Args(Span{2, 0}), &out, &lse);  // keys 1, 2: weights 2:3
  EXPECT_NEAR(out, (40 + 90) / 5.0, 1e-5);
  AttendReference(t.Args(Span{1, 1}), &out, &lse);  // sink 0 and key 2: 1:3
  EXPECT_NEAR(out, (10 + 90) / 4.0, 1e-5);
}

TEST(AttendReference, LearnedSinkOnlyAddsToTheDenominator) {
  Tiny t{{1.0f}, {0.0f}, {8.0f}, {0}, {0}};
  const float sink = std::log(3.0f);  // e^s = 3, the key's weight is 1
  float out = 0, lse = 0;
  AttendReference(t.Args(Span{}, &sink), &out, &lse);
  EXPECT_NEAR(out, 8.0 / 4.0, 1e-6);
  EXPECT_NEAR(lse, std::log(4.0), 1e-6);
}

TEST(AttendReference, NothingVisibleGivesZeros) {
  Tiny t{{1.0f}, {1.0f}, {5.0f}, {3}, {-1}};  // the only slot is empty
  float out = 1, lse = 0;
  AttendReference(t.Args(Span{}), &out, &lse);
  EXPECT_EQ(out, 0.0f);
  EXPECT_TRUE(std::isinf(lse) && lse < 0);
}

TEST(AttendReference, RejectsBadShapes) {
  Tiny t{{1.0f}, {1.0f}, {5.0f}, {0}, {0}};
  float out = 0;
  AttentionArgs a = t.Args(Span{});
  a.shape = {3, 2, 1};
  EXPECT_THROW(AttendReference(a, &out), std::invalid_argument);
  a = t.Args(Span{-4, 0});
  EXPECT_THROW(AttendReference(a, &out), std::invalid_argument);
  a = t.Args(Span{});
  a.kv.row_stride = -3;
  EXPECT_THROW(AttendReference(a, &out), std::invalid_argument);
}

}  // namespace
}  // namespace swan
