// The attention backward: the reference against central differences of a
// float64 forward, and the fast kernel against the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "attention/attention.h"
#include "attention/backward.h"
#include "util/seeded_test.h"
#include "attention/test_problem.h"

namespace swan {
namespace {

using testing::MakePrefill;
using testing::Problem;
using testing::RelativeError;

using BackwardTest = testing::SeededTest;

// loss = sum(out * w) of attention computed in float64 from double inputs.
double Loss(const Problem& p, const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
            const std::vector<double>& sinks, const std::vector<double>& w) {
  const AttentionShape& s = p.shape;
  const int64_t d = s.head_dim;
  const int32_t group = s.n_heads / s.n_kv_heads;
  const double scale = 1.0 / std::sqrt(double(d));
  double loss = 0;
  for (int64_t i = 0; i < p.n_q(); ++i)
    for (int32_t h = 0; h < s.n_heads; ++h) {
      const int32_t kvh = h / group;
      std::vector<double> logits;
      std::vector<int64_t> keys;
      double top = sinks.empty() ? -1e300 : sinks[size_t(h)];
      for (int64_t j = 0; j < p.n_rows(); ++j) {
        if (!Sees(p.span, p.q_pos[size_t(i)], p.k_pos[size_t(j)])) continue;
        double dot = 0;
        for (int64_t c = 0; c < d; ++c)
          dot += q[size_t((i * s.n_heads + h) * d + c)] * k[size_t((j * s.n_kv_heads + kvh) * d + c)];
        logits.push_back(dot * scale);
        keys.push_back(j);
        top = std::max(top, dot * scale);
      }
      double denom = sinks.empty() ? 0.0 : std::exp(sinks[size_t(h)] - top);
      for (double l : logits) denom += std::exp(l - top);
      for (int64_t c = 0; c < d; ++c) {
        double o = 0;
        for (size_t x = 0; x < keys.size(); ++x)
          o += std::exp(logits[x] - top) * v[size_t((keys[x] * s.n_kv_heads + kvh) * d + c)];
        loss += o / denom * w[size_t((i * s.n_heads + h) * d + c)];
      }
    }
  return loss;
}

struct Grads {
  std::vector<float> dq, dk, dv, dsink;
};

Grads RunBackward(const Problem& p, const std::vector<float>& d_out, bool fast) {
  const AttentionArgs a = p.Args();
  std::vector<float> out(p.q.size()), lse(size_t(p.n_q() * p.shape.n_heads));
  Attend(a, out.data(), lse.data());
  Grads g{std::vector<float>(p.q.size()), std::vector<float>(p.k.size()), std::vector<float>(p.v.size()),
          std::vector<float>(p.sinks.size(), 0.0f)};
  const AttentionSaved saved{out.data(), lse.data(), d_out.data()};
  const AttentionGrads grads{g.dq.data(), g.dk.data(), g.dv.data(), p.sinks.empty() ? nullptr : g.dsink.data()};
  if (fast)
    AttendBackward(a, saved, grads);
  else
    AttendBackwardReference(a, saved, grads);
  return g;
}

std::vector<float> RandomLike(std::mt19937& rng, size_t n) {
  std::normal_distribution<float> normal;
  std::vector<float> x(n);
  for (auto& e : x) e = normal(rng);
  return x;
}

TEST_F(BackwardTest, ReferenceMatchesFiniteDifferences) {
  for (Span span : {Span{}, Span{3, 0}, Span{3, 2}, Span{4, 1, true, 2}}) {
    const Problem p = MakePrefill(rng, AttentionShape{4, 2, 4}, span, 9, 9, /*learned_sinks=*/true);
    const std::vector<float> w = RandomLike(rng, p.q.size());
    const Grads g = RunBackward(p, w, /*fast=*/false);
    std::vector<double> q(p.q.begin(), p.q.end()), k(p.k.begin(), p.k.end()), v(p.v.begin(), p.v.end()),
        sinks(p.sinks.begin(), p.sinks.end()), wd(w.begin(), w.end());
    const double h = 1e-5;
    auto check = [&](std::vector<double>& x, const std::vector<float>& grad, const char* name) {
      for (size_t e = 0; e < x.size(); ++e) {
        const double saved = x[e];
        x[e] = saved + h;
        const double up = Loss(p, q, k, v, sinks, wd);
        x[e] = saved - h;
        const double down = Loss(p, q, k, v, sinks, wd);
        x[e] = saved;
        const double numeric = (up - down) / (2 * h);
        ASSERT_NEAR(grad[e], numeric, 1e-5 + 1e-4 * std::fabs(numeric)) << name << "[" << e << "], " << span.ToString();
      }
    };
    check(q, g.dq, "dq");
    check(k, g.dk, "dk");
    check(v, g.dv, "dv");
    check(sinks, g.dsink, "d_sink");
  }
}

void ExpectFastMatchesReference(const Problem& p, std::mt19937& rng, const std::string& what) {
  const std::vector<float> d_out = RandomLike(rng, p.q.size());
  const Grads fast = RunBackward(p, d_out, true), ref = RunBackward(p, d_out, false);
  EXPECT_LE(RelativeError(fast.dq, ref.dq), 1e-5) << "dq, " << what;
  EXPECT_LE(RelativeError(fast.dk, ref.dk), 1e-5) << "dk, " << what;
  EXPECT_LE(RelativeError(fast.dv, ref.dv), 1e-5) << "dv, " << what;
  if (!p.sinks.empty()) {
    EXPECT_LE(RelativeError(fast.dsink, ref.dsink), 1e-5) << "d_sink, " << what;
  }
}

TEST_F(BackwardTest, FastMatchesReferenceAcrossSpans) {
  for (int64_t n : {63, 64, 65, 190})
    for (Span span : {Span{}, Span{1, 0}, Span{64, 0}, Span{65, 4}, Span{int32_t(n), 0}, Span{64, 0, true, 16},
                      Span{50, 2, true, 37}}) {
      const Problem p = MakePrefill(rng, AttentionShape{4, 2, 32}, span, n, n);
      ExpectFastMatchesReference(p, rng, "n " + std::to_string(n) + ", " + span.ToString());
    }
}

TEST_F(BackwardTest, FastMatchesReferenceShapesAndSinks) {
  for (int32_t d : {8, 17, 64, 128})
    for (int32_t ratio : {1, 4}) {
      const Problem p = MakePrefill(rng, AttentionShape{2 * ratio, 2, d}, Span{40, 2}, 150, 150, true);
      ExpectFastMatchesReference(p, rng, "d " + std::to_string(d) + " gqa " + std::to_string(ratio));
    }
  const Problem chunk = MakePrefill(rng, AttentionShape{4, 2, 64}, Span{50, 0}, 300, 70);
  ExpectFastMatchesReference(chunk, rng, "70 queries after 230 keys");
}

TEST_F(BackwardTest, AccumulateAddsIntoExistingGradients) {
  const Problem p = MakePrefill(rng, AttentionShape{4, 2, 16}, Span{8, 0}, 40, 40);
  const std::vector<float> d_out = RandomLike(rng, p.q.size());
  const Grads once = RunBackward(p, d_out, true);
  const AttentionArgs a = p.Args();
  std::vector<float> out(p.q.size()), lse(size_t(40 * 4));
  Attend(a, out.data(), lse.data());
  Grads twice = once;
  AttendBackward(a, AttentionSaved{out.data(), lse.data(), d_out.data()},
                 AttentionGrads{twice.dq.data(), twice.dk.data(), twice.dv.data(), nullptr, true});
  std::vector<float> doubled(once.dq);
  for (auto& x : doubled) x *= 2;
  EXPECT_LE(RelativeError(twice.dq, doubled), 1e-6);
}

TEST_F(BackwardTest, RejectsBF16AndMissingBuffers) {
  const Problem p = MakePrefill(rng, AttentionShape{2, 1, 8}, Span{}, 5, 5, false, KvType::kBF16);
  std::vector<float> buf(p.q.size() * 4);
  const AttentionSaved saved{buf.data(), buf.data(), buf.data()};
  EXPECT_THROW(AttendBackward(p.Args(), saved, AttentionGrads{buf.data(), buf.data(), buf.data()}),
               std::invalid_argument);
  const Problem f = MakePrefill(rng, AttentionShape{2, 1, 8}, Span{}, 5, 5);
  EXPECT_THROW(AttendBackward(f.Args(), saved, AttentionGrads{buf.data(), nullptr, buf.data()}), std::invalid_argument);
}

}  // namespace
}  // namespace swan
