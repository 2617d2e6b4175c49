// Per-head spans: the grouped kernels against the float64 reference with a
// per-head mask, and the backward against finite differences.
#include "attention/head_groups.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/flash_decode_bf16.h"
#include "util/seeded_test.h"
#include "attention/test_problem.h"

namespace swan {
namespace {

using testing::BF16ProbabilitiesBound;
using testing::BF16Queries;
using testing::ForEachTarget;
using testing::MakePrefill;
using testing::MaxAbsDifference;
using testing::Problem;
using testing::RelativeError;

using HeadGroupsTest = testing::SeededTest;

// Spans of n_kv heads: the heads in `full` see everything, the others `window`.
std::vector<Span> Spans(int32_t n_kv, const std::vector<int32_t>& full, const Span& window) {
  std::vector<Span> spans(size_t(n_kv), window);  // [n_kv]
  for (const int32_t h : full) spans[size_t(h)] = Span{};
  return spans;
}

// Stores s.k and s.v again in s.type (after they were overwritten).
void Reencode(Problem& s) {
  if (s.type == KvType::kBF16)
    for (size_t i = 0; i < s.k.size(); ++i) {
      s.k16[i] = F32ToBF16(s.k[i]);
      s.v16[i] = F32ToBF16(s.v[i]);
    }
  if (s.type == KvType::kQ8_0) {
    QuantizeRowQ8_0(reinterpret_cast<BlockQ8_0*>(s.k8.data()), s.k.data(), int64_t(s.k.size()));
    QuantizeRowQ8_0(reinterpret_cast<BlockQ8_0*>(s.v8.data()), s.v.data(), int64_t(s.v.size()));
  }
}

TEST(HeadGroups, SplitHeadsGroupsAndRefusesNonsense) {
  const std::vector<HeadGroup> g = SplitHeads({3, 0}, 4, Span{16, 4});
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].kv_heads, (std::vector<int32_t>{0, 3}));
  EXPECT_TRUE(g[0].span.full());
  EXPECT_EQ(g[1].kv_heads, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(g[1].span, (Span{16, 4}));
  EXPECT_EQ(SplitHeads({}, 2, Span{8, 0}).size(), 1u);
  EXPECT_THROW(SplitHeads({4}, 4, Span{8, 0}), std::invalid_argument);
  EXPECT_THROW(SplitHeads({1, 1}, 4, Span{8, 0}), std::invalid_argument);
  EXPECT_THROW(SplitHeads({1}, 4, Span{}), std::invalid_argument);
  EXPECT_EQ(QueryHeadsOf({1, 3}, 2), (std::vector<int32_t>{2, 3, 6, 7}));
}

// A per-head span is the same as running each head alone under its span:
// check it against AttendReference head by head, so the reference of the
// reference is the plain mask.
TEST_F(HeadGroupsTest, ReferenceIsThePlainMaskPerHead) {
  const AttentionShape shape{4, 2, 16};
  const Problem p = MakePrefill(rng, shape, Span{}, 40, 40);
  const std::vector<Span> spans = Spans(2, {1}, Span{5, 2});
  std::vector<float> out(p.q.size()), lse(size_t(40 * 4));
  AttendPerHeadReference(p.Args(), spans, out.data(), lse.data());
  for (int32_t kv = 0; kv < 2; ++kv) {
    Problem whole = p;
    whole.span = spans[size_t(kv)];
    std::vector<float> o(p.q.size()), l(lse.size());
    AttendReference(whole.Args(), o.data(), l.data());
    for (int64_t t = 0; t < 40; ++t)
      for (int32_t h = 2 * kv; h < 2 * kv + 2; ++h) {
        EXPECT_EQ(lse[size_t(t * 4 + h)], l[size_t(t * 4 + h)]);
        for (int32_t c = 0; c < 16; ++c) EXPECT_EQ(out[size_t((t * 4 + h) * 16 + c)], o[size_t((t * 4 + h) * 16 + c)]);
      }
  }
}

TEST_F(HeadGroupsTest, PerHeadMatchesReferenceOnRandomPlans) {
  ForEachTarget([&] {
    for (int trial = 0; trial < 6; ++trial) {
      const int32_t n_kv = 1 + int32_t(rng() % 4), group = 1 + int32_t(rng() % 3);
      const AttentionShape shape{n_kv * group, n_kv, 32};
      const int64_t n = 20 + int64_t(rng() % 180);
      const Span window{1 + int32_t(rng() % 40), int32_t(rng() % 3)};
      std::vector<int32_t> full;
      for (int32_t h = 0; h < n_kv; ++h)
        if (rng() % 2) full.push_back(h);
      const bool sinks = trial % 2 == 1;
      const Problem p = MakePrefill(rng, shape, Span{}, n, n, sinks);
      const std::vector<Span> spans = Spans(n_kv, full, window);
      std::vector<float> out(p.q.size()), lse(size_t(n * shape.n_heads));
      std::vector<float> ref(out.size()), ref_lse(lse.size());
      AttendPerHead(p.Args(), spans, out.data(), lse.data());
      AttendPerHeadReference(p.Args(), spans, ref.data(), ref_lse.data());
      const std::string what = "trial " + std::to_string(trial) + " kv " + std::to_string(n_kv) + " full " +
                               std::to_string(full.size()) + " " + window.ToString();
      EXPECT_LE(RelativeError(out, ref), 1e-5) << what;
      EXPECT_LE(RelativeError(lse, ref_lse), 1e-5) << what;
    }
  });
}

// Decode and chunks over per-group views holding only their heads (as a
// per-head cache stores them), with q8_0 and bf16 storage too.
TEST_F(HeadGroupsTest, GroupViewsMatchReferenceForEveryStorage) {
  for (const KvType type : {KvType::kF32, KvType::kBF16, KvType::kQ8_0}) {
    const AttentionShape shape{8, 4, 32};
    const int64_t n_keys = 300;
    for (const int64_t n_q : {int64_t(1), int64_t(7), int64_t(64)}) {
      Problem p = MakePrefill(rng, shape, Span{}, n_keys, n_q, false, type);
      const std::vector<int32_t> full = {2};
      const Span window{48, 4};
      const std::vector<Span> spans = Spans(4, full, window);
      std::vector<HeadGroup> groups = SplitHeads(full, 4, window);
      // Each group's storage: the float values of its heads, stored again as `type`.
      std::vector<Problem> stores;
      for (const HeadGroup& g : groups) {
        Problem s = MakePrefill(rng, AttentionShape{int32_t(g.kv_heads.size()), int32_t(g.kv_heads.size()), 32}, Span{},
                                n_keys, 1, false, type);
        GatherHeads(s.k.data(), p.k.data(), n_keys, 4, 32, g.kv_heads);
        GatherHeads(s.v.data(), p.v.data(), n_keys, 4, 32, g.kv_heads);
        Reencode(s);
        stores.push_back(std::move(s));
      }
      for (size_t i = 0; i < groups.size(); ++i) groups[i].kv = stores[i].Args().kv;
      std::vector<float> out(p.q.size()), lse(size_t(n_q * 8)), ref(out.size()), ref_lse(lse.size());
      AttendHeadGroups(p.Args(), groups, out.data(), lse.data());
      // Where decode multiplies in bf16 (flash_decode_bf16.h), the reference
      // takes the queries it rounds, and the output its bound.
      const bool bf16_dots = DecodeRunsBf16Dot(p.Args());
      AttentionArgs ref_args = p.Args();
      const std::vector<float> q = BF16Queries(ref_args);  // [n_q, heads, head_dim]
      if (bf16_dots) ref_args.q = q.data();
      AttendPerHeadReference(ref_args, spans, ref.data(), ref_lse.data());
      const std::string what = "type " + std::to_string(int(type)) + " n_q " + std::to_string(n_q);
      if (bf16_dots)
        EXPECT_LE(MaxAbsDifference(out, ref), 1.001 * BF16ProbabilitiesBound(p.Args()) + 1e-6) << what;
      else
        EXPECT_LE(RelativeError(out, ref), 1e-5) << what;
      EXPECT_LE(RelativeError(lse, ref_lse), 1e-5) << what;
    }
  }
}

TEST_F(HeadGroupsTest, BackwardMatchesFiniteDifferences) {
  const AttentionShape shape{4, 2, 8};
  const int64_t n = 24;
  Problem p = MakePrefill(rng, shape, Span{}, n, n, /*learned_sinks=*/true);
  for (auto& x : p.q) x *= 0.5f;
  const std::vector<Span> spans = Spans(2, {0}, Span{5, 1});
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> r(p.q.size());  // [n, heads, dim] the loss is sum(out * r)
  for (auto& x : r) x = normal(rng);
  auto loss = [&](const Problem& at) {
    std::vector<float> out(at.q.size());
    AttendPerHeadReference(at.Args(), spans, out.data());
    double l = 0;
    for (size_t i = 0; i < out.size(); ++i) l += double(out[i]) * r[i];
    return l;
  };
  std::vector<float> out(p.q.size()), lse(size_t(n * 4));
  AttendPerHead(p.Args(), spans, out.data(), lse.data());
  std::vector<float> dq(p.q.size()), dk(p.k.size()), dv(p.v.size()), d_sinks(4, 0.0f);
  AttendBackwardPerHead(p.Args(), spans, AttentionSaved{out.data(), lse.data(), r.data()},
                        AttentionGrads{dq.data(), dk.data(), dv.data(), d_sinks.data(), false});
  const double eps = 1e-2;
  auto check = [&](std::vector<float> Problem::*field, const std::vector<float>& grad, const char* name) {
    for (int probe = 0; probe < 12; ++probe) {
      const size_t i = size_t(rng() % grad.size());
      Problem plus = p, minus = p;
      (plus.*field)[i] += float(eps);
      (minus.*field)[i] -= float(eps);
      const double numeric = (loss(plus) - loss(minus)) / (2 * eps);
      EXPECT_NEAR(grad[i], numeric, 2e-3 + 2e-2 * std::fabs(numeric)) << name << "[" << i << "]";
    }
  };
  check(&Problem::q, dq, "dq");
  check(&Problem::k, dk, "dk");
  check(&Problem::v, dv, "dv");
  check(&Problem::sinks, d_sinks, "d_sinks");
}

TEST(HeadGroups, GroupsMustCoverEveryHeadOnce) {
  std::mt19937 rng(1);
  const Problem p = MakePrefill(rng, AttentionShape{2, 2, 8}, Span{}, 4, 4);
  std::vector<HeadGroup> groups = SplitHeads({0}, 2, Span{2, 0});
  for (HeadGroup& g : groups) g.kv = p.Args().kv;
  groups.pop_back();
  std::vector<float> out(p.q.size());
  EXPECT_THROW(AttendHeadGroups(p.Args(), groups, out.data()), std::invalid_argument);
}

}  // namespace
}  // namespace swan
