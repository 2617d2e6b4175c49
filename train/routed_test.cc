// Switch Attention training ops (train/routed.h) against float64 references
// written here, on random inputs.
//
// The hard gate has no derivative, so the routed layer is checked through
// the surrogate whose gradient is the straight-through estimator's:
//   g_t = h_t + σ(logit_t) − σ0_t
// with the hard gate h_t and σ0_t = σ(logit_t) frozen at the point where the
// gradient is taken. There g_t = h_t (the forward value), and d g/d logit =
// σ'(logit): central differences of the surrogate give exactly what the
// backward must produce, gate flips impossible.
#include "train/routed.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numeric>

#include "attention/backward.h"
#include "train/grad_check.h"
#include "train/test_reference.h"

namespace swan {
namespace {

using testing::AttentionRef;
using testing::NumericGradient;
using testing::RandomVector;
using testing::RelativeError;
using testing::ToFloat;
using Vec = std::vector<double>;

constexpr double kTol = 2e-4;  // float32 backward against float64 differences

double Dot(const Vec& a, const Vec& b) { return std::inner_product(a.begin(), a.end(), b.begin(), 0.0); }
double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double Softplus(double x) { return std::log(1 + std::exp(x)); }  // |x| small here: no overflow

void Report(const std::string& what, double err) {
  std::printf("  grad check %-34s rel. error %.2e\n", what.c_str(), err);
  EXPECT_LT(err, kTol) << what;
}

TEST(RoutedGrad, Router) {
  std::mt19937_64 rng(1);
  const int64_t n = 6, dim = 5;
  const Vec xn = RandomVector(rng, size_t(n * dim)), w = RandomVector(rng, size_t(dim));
  const Vec b = {0.3}, r = RandomVector(rng, size_t(n));
  // loss = Σ_t r_t (xn_t · w + b)
  auto ref = [&](const Vec& x, const Vec& ww, const Vec& bb) {
    double s = 0;
    for (int64_t t = 0; t < n; ++t) {
      double l = bb[0];
      for (int64_t i = 0; i < dim; ++i) l += x[size_t(t * dim + i)] * ww[size_t(i)];
      s += r[size_t(t)] * l;
    }
    return s;
  };
  const auto xf = ToFloat(xn), wf = ToFloat(w), bf = ToFloat(b), rf = ToFloat(r);
  std::vector<float> logit(static_cast<size_t>(n));
  RouterForward(logit.data(), xf.data(), wf.data(), bf.data(), n, dim);
  for (int64_t t = 0; t < n; ++t)
    EXPECT_NEAR(logit[size_t(t)], b[0] + Dot(Vec(xn.begin() + t * dim, xn.begin() + (t + 1) * dim), w), 1e-5);
  // Every gradient accumulates: start from ones and subtract them after.
  std::vector<float> dx(size_t(n * dim), 1.0f), dw(size_t(dim), 1.0f), db(1, 1.0f);
  RouterBackward(dx.data(), dw.data(), db.data(), rf.data(), xf.data(), wf.data(), n, dim);
  for (auto* g : {&dx, &dw, &db})
    for (float& x : *g) x -= 1.0f;
  Report("router d_xn", RelativeError(dx, NumericGradient([&](const Vec& x) { return ref(x, w, b); }, xn)));
  Report("router d_w", RelativeError(dw, NumericGradient([&](const Vec& x) { return ref(xn, x, b); }, w)));
  Report("router d_b", RelativeError(db, NumericGradient([&](const Vec& x) { return ref(xn, w, x); }, b)));
}

// The routed layer: q, k, v and logits in, out = surrogate mix of both branches.
struct RoutedProblem : testing::AttentionInputs {
  Vec logit;  // [N]

  RoutedProblem(std::mt19937_64& rng, Span span, int64_t batch, int64_t seq) : AttentionInputs(rng, span, batch, seq) {
    // Away from 0, so the float32 forward and this reference gate alike.
    logit = RandomVector(rng, size_t(batch * seq));
    for (double& l : logit) l += l >= 0 ? 0.1 : -0.1;
  }

  // Σ r · out, out_t = g_t o_full_t + (1 − g_t) o_window_t with the surrogate g.
  double Loss(const Vec& qq, const Vec& kk, const Vec& vv, const Vec& ll) const {
    SequenceAttention full = a;
    full.span = Span{};
    const Vec of = AttentionRef(qq, kk, vv, full), ow = AttentionRef(qq, kk, vv, a);
    double s = 0;
    for (size_t t = 0; t < ll.size(); ++t) {
      const double h = RoutesFull(float(logit[t])) ? 1 : 0;
      const double g = h + Sigmoid(ll[t]) - Sigmoid(logit[t]);
      for (int64_t c = 0; c < width(); ++c) {
        const size_t i = t * size_t(width()) + size_t(c);
        s += r[i] * (g * of[i] + (1 - g) * ow[i]);
      }
    }
    return s;
  }
};

void CheckRoutedAttention(const std::string& what, Span span, double shift) {
  std::mt19937_64 rng(7);
  RoutedProblem p(rng, span, 2, 9);
  for (double& l : p.logit) l += shift;  // +5: every token full, −5: every token windowed
  const int64_t N = int64_t(p.logit.size()), row = p.width(), H = p.a.shape.n_heads;
  const auto qf = ToFloat(p.q), kf = ToFloat(p.k), vf = ToFloat(p.v), rf = ToFloat(p.r), lf = ToFloat(p.logit);
  std::vector<float> out(size_t(N * row)), of(out.size()), ow(out.size());  // [N, H*D]
  std::vector<float> lse_f(size_t(N * H)), lse_w(lse_f.size());             // [N, H]
  const RoutedBranches br{of.data(), lse_f.data(), ow.data(), lse_w.data()};
  RoutedAttentionForward(out.data(), br, lf.data(), qf.data(), kf.data(), vf.data(), p.a);
  // The forward value: each token's hard-gate branch.
  SequenceAttention full = p.a;
  full.span = Span{};
  const Vec ref_full = AttentionRef(p.q, p.k, p.v, full), ref_window = AttentionRef(p.q, p.k, p.v, p.a);
  Vec expected(out.size());  // [N, H*D]
  for (int64_t t = 0; t < N; ++t)
    for (int64_t c = 0; c < row; ++c)
      expected[size_t(t * row + c)] = (p.logit[size_t(t)] > 0 ? ref_full : ref_window)[size_t(t * row + c)];
  EXPECT_LT(RelativeError(out, expected), 1e-5) << what;

  std::vector<float> dq(qf.size()), dk(kf.size()), dv(vf.size()), dl(static_cast<size_t>(N));
  RoutedAttentionBackward(dq.data(), dk.data(), dv.data(), dl.data(), rf.data(), br, lf.data(), qf.data(), kf.data(),
                          vf.data(), p.a);
  Report(what + " dq",
         RelativeError(dq, NumericGradient([&](const Vec& x) { return p.Loss(x, p.k, p.v, p.logit); }, p.q)));
  Report(what + " dk",
         RelativeError(dk, NumericGradient([&](const Vec& x) { return p.Loss(p.q, x, p.v, p.logit); }, p.k)));
  Report(what + " dv",
         RelativeError(dv, NumericGradient([&](const Vec& x) { return p.Loss(p.q, p.k, x, p.logit); }, p.v)));
  Report(what + " d_logit",
         RelativeError(dl, NumericGradient([&](const Vec& x) { return p.Loss(p.q, p.k, p.v, x); }, p.logit)));
}

TEST(RoutedGrad, AttentionMixedGates) { CheckRoutedAttention("routed w3+1 sink, mixed", Span{3, 1}, 0); }
TEST(RoutedGrad, AttentionAllFull) { CheckRoutedAttention("routed w3, all full", Span{3, 0}, 5); }
TEST(RoutedGrad, AttentionAllWindow) { CheckRoutedAttention("routed w3+1 sink, all window", Span{3, 1}, -5); }

// Longer sequences (several key blocks and query tiles): the gathered
// branches against the plain backward of each branch over every token with
// the other branch's rows of d_out zeroed, which is the definition.
TEST(RoutedGrad, GatheredBranchesMatchMaskedBackward) {
  std::mt19937_64 rng(3);
  RoutedProblem p(rng, Span{40, 2}, 2, 150);
  const int64_t N = int64_t(p.logit.size()), T = p.a.seq, row = p.width(), H = p.a.shape.n_heads;
  const int64_t kv_row = int64_t(p.a.shape.n_kv_heads) * p.a.shape.head_dim;
  const auto qf = ToFloat(p.q), kf = ToFloat(p.k), vf = ToFloat(p.v), rf = ToFloat(p.r), lf = ToFloat(p.logit);
  std::vector<float> out(size_t(N * row)), of(out.size()), ow(out.size());  // [N, H*D]
  std::vector<float> lse_f(size_t(N * H)), lse_w(lse_f.size());             // [N, H]
  const RoutedBranches br{of.data(), lse_f.data(), ow.data(), lse_w.data()};
  RoutedAttentionForward(out.data(), br, lf.data(), qf.data(), kf.data(), vf.data(), p.a);
  std::vector<float> dq(qf.size()), dk(kf.size()), dv(vf.size()), dl(static_cast<size_t>(N));
  RoutedAttentionBackward(dq.data(), dk.data(), dv.data(), dl.data(), rf.data(), br, lf.data(), qf.data(), kf.data(),
                          vf.data(), p.a);

  std::vector<float> eq(dq.size()), ek(dk.size()), ev(dv.size());  // expected
  for (int64_t b = 0; b < p.a.batch; ++b)
    for (bool full : {true, false}) {
      std::vector<float> d_out(size_t(T * row), 0.0f);  // [T, H*D] this branch's tokens only
      for (int64_t i = 0; i < T; ++i)
        if (RoutesFull(lf[size_t(b * T + i)]) == full)
          std::copy_n(&rf[size_t((b * T + i) * row)], row, &d_out[size_t(i * row)]);
      AttentionArgs args = SequenceArgs(qf.data(), kf.data(), vf.data(), p.a, b);
      if (full) args.span = Span{};
      AttentionSaved saved{(full ? of : ow).data() + b * T * row, (full ? lse_f : lse_w).data() + b * T * H,
                           d_out.data()};
      std::vector<float> dq_b(size_t(T * row));  // [T, H*D]
      AttentionGrads grads{dq_b.data(), ek.data() + b * T * kv_row, ev.data() + b * T * kv_row, nullptr,
                           /*accumulate=*/!full};
      AttendBackwardReference(args, saved, grads);
      for (size_t i = 0; i < dq_b.size(); ++i) eq[size_t(b * T * row) + i] += dq_b[i];
    }
  auto err = [](const std::vector<float>& a, const std::vector<float>& b) {
    return RelativeError(a, Vec(b.begin(), b.end()));
  };
  EXPECT_LT(err(dq, eq), 1e-5);
  EXPECT_LT(err(dk, ek), 1e-5);
  EXPECT_LT(err(dv, ev), 1e-5);
  int64_t n_full = 0;
  for (float l : lf) n_full += RoutesFull(l);
  EXPECT_GT(n_full, 0);
  EXPECT_LT(n_full, N);
}

TEST(RoutedRegularizer, ValueAndGradientMatchTheFormula) {
  std::mt19937_64 rng(5);
  const int64_t n = 7, width = 6;
  const Vec logit = RandomVector(rng, size_t(n), 2.0), of = RandomVector(rng, size_t(n * width)),
            ow = RandomVector(rng, size_t(n * width), 0.1);
  Vec nll = RandomVector(rng, size_t(n));
  for (double& x : nll) x = std::abs(x) * 3;
  const std::vector<int32_t> targets = {1, 0, -1, 4, 2, 2, 9};
  const auto lf = ToFloat(logit), nf = ToFloat(nll), off = ToFloat(of), owf = ToFloat(ow);
  RouterRegularizer settings;
  settings.gamma_base = 0.01;
  for (const char* variant : {"adaptive", "alpha 0", "constant"}) {
    RouterRegularizer r = settings;
    if (std::string(variant) == "alpha 0") r.alpha = 0;
    if (std::string(variant) == "constant") r.gamma_constant = true;
    // γ_t = γ_base / (ε + NLL_t + α ‖o_full_t − o_window_t‖²), written out in float64.
    Vec gamma(size_t(n), 0.0);
    for (int64_t t = 0; t < n; ++t) {
      if (targets[size_t(t)] < 0) continue;
      double dist = 0;
      for (int64_t c = 0; c < width; ++c) dist += std::pow(of[size_t(t * width + c)] - ow[size_t(t * width + c)], 2);
      gamma[size_t(t)] = r.gamma_constant ? r.gamma_base : r.gamma_base / (r.eps + nll[size_t(t)] + r.alpha * dist);
    }
    auto ref = [&](const Vec& l) {
      double s = 0;
      for (int64_t t = 0; t < n; ++t) s += gamma[size_t(t)] * Softplus(l[size_t(t)]);
      return s;
    };
    std::vector<float> g(static_cast<size_t>(n));
    const double value =
        RouterRegularizerForward(g.data(), lf.data(), nf.data(), targets.data(), off.data(), owf.data(), r, n, width);
    EXPECT_NEAR(value, ref(logit), 1e-6 * ref(logit)) << variant;
    EXPECT_LT(RelativeError(g, gamma), 1e-6) << variant;
    EXPECT_EQ(g[2], 0.0f) << "a token without a target has no term";
    // d_logit, scaled like the loss, accumulates: a second call doubles it.
    const float scale = 0.25f;
    std::vector<float> d(size_t(n), 0.0f);
    RouterRegularizerBackward(d.data(), g.data(), lf.data(), scale, n);
    std::vector<float> twice = d;
    RouterRegularizerBackward(twice.data(), g.data(), lf.data(), scale, n);
    for (size_t t = 0; t < d.size(); ++t) EXPECT_FLOAT_EQ(twice[t], 2 * d[t]);
    for (float& x : d) x /= scale;
    Report(std::string("regularizer d_logit, ") + variant, RelativeError(d, NumericGradient(ref, logit)));
  }
}

TEST(RoutedRouter, InitSendsEveryTokenToFullAttention) {
  std::vector<float> w(4, 9.0f), b(1, -1.0f);
  InitRouter(w.data(), b.data(), 4);
  EXPECT_EQ(w, std::vector<float>(4, 0.0f));
  EXPECT_EQ(b[0], 2.0f);
  EXPECT_GT(Sigmoid(2.0), 0.5);
  EXPECT_TRUE(RoutesFull(b[0]));
  EXPECT_FALSE(RoutesFull(0.0f));  // σ(0) = 0.5 is not > 0.5
}

}  // namespace
}  // namespace swan
