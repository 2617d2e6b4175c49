// Linear attention (attention/linear_attention.h) and its feature map
// (attention/hedgehog.h) against the float64 quadratic form and central
// differences, on random inputs: whole = chunked = decoded one token at a
// time, and a state whose size does not grow.
#include "attention/linear_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "attention/hedgehog.h"
#include "train/grad_check.h"
#include "train/test_reference.h"

namespace swan {
namespace {

using testing::NumericGradient;
using testing::RelativeError;
using testing::ToFloat;
using Vec = std::vector<double>;

// Positive features, as a feature map makes them.
Vec RandomFeatures(std::mt19937_64& rng, size_t n) {
  std::uniform_real_distribution<double> u(0.05, 1.0);
  Vec v(n);
  for (double& x : v) x = u(rng);
  return v;
}

struct LinearProblem {
  LinearAttentionShape shape{4, 2, 8, 6};
  int64_t n;
  Vec phi_q, phi_k, v;  // [n, H, P], [n, KV, P], [n, KV, D]

  LinearProblem(std::mt19937_64& rng, int64_t tokens) : n(tokens) {
    phi_q = RandomFeatures(rng, size_t(n * shape.n_heads * shape.phi_dim));
    phi_k = RandomFeatures(rng, size_t(n * shape.n_kv_heads * shape.phi_dim));
    v = testing::RandomVector(rng, size_t(n * shape.n_kv_heads * shape.head_dim));
  }
  int64_t out_size() const { return n * shape.n_heads * shape.head_dim; }
  Vec Reference() const {
    Vec out(static_cast<size_t>(out_size()));
    LinearAttendReference(out.data(), phi_q.data(), phi_k.data(), v.data(), n, shape);
    return out;
  }
  // Runs LinearAttend over pieces of the given sizes (their sum: n).
  std::vector<float> Pieces(const std::vector<int64_t>& sizes) const {
    const auto q = ToFloat(phi_q), k = ToFloat(phi_k), vf = ToFloat(v);
    const int64_t H = shape.n_heads, KV = shape.n_kv_heads, D = shape.head_dim, P = shape.phi_dim;
    std::vector<float> out(static_cast<size_t>(out_size()));  // [n, H, D]
    LinearState state;
    state.Reset(shape);
    int64_t at = 0;
    for (const int64_t m : sizes) {
      LinearAttend(out.data() + at * H * D, nullptr, state, q.data() + at * H * P, k.data() + at * KV * P,
                   vf.data() + at * KV * D, m, shape);
      at += m;
    }
    EXPECT_EQ(at, n);
    EXPECT_EQ(state.tokens, n);
    return out;
  }
};

TEST(LinearAttention, WholeChunkedAndDecodedMatchTheQuadraticForm) {
  std::mt19937_64 rng(1);
  const LinearProblem p(rng, 150);  // three blocks of 64, the last partial
  const Vec ref = p.Reference();
  const double whole = RelativeError(p.Pieces({150}), ref);
  const double chunked = RelativeError(p.Pieces({1, 7, 64, 78}), ref);
  const double decoded = RelativeError(p.Pieces(std::vector<int64_t>(150, 1)), ref);
  std::printf("  linear attention vs float64: whole %.2e, chunked %.2e, decoded %.2e\n", whole, chunked, decoded);
  EXPECT_LT(whole, 1e-5);
  EXPECT_LT(chunked, 1e-5);
  EXPECT_LT(decoded, 1e-5);
}

TEST(LinearAttention, TheStateDoesNotGrow) {
  std::mt19937_64 rng(2);
  const LinearProblem p(rng, 200);
  LinearState state;
  state.Reset(p.shape);
  const int64_t empty = state.bytes();
  EXPECT_EQ(empty, int64_t(sizeof(float)) * 2 * 6 * (8 + 1));  // KV · P · (D + 1)
  const auto q = ToFloat(p.phi_q), k = ToFloat(p.phi_k), v = ToFloat(p.v);
  std::vector<float> out(static_cast<size_t>(p.out_size()));
  LinearAttend(out.data(), nullptr, state, q.data(), k.data(), v.data(), 200, p.shape);
  EXPECT_EQ(state.bytes(), empty);
  EXPECT_EQ(state.tokens, 200);
}

TEST(LinearAttention, BackwardMatchesDifferences) {
  std::mt19937_64 rng(3);
  const LinearProblem p(rng, 11);
  const Vec r = testing::RandomVector(rng, static_cast<size_t>(p.out_size()));  // loss = Σ r · out
  const auto loss = [&](const Vec& q, const Vec& k, const Vec& v) {
    LinearProblem x = p;
    x.phi_q = q;
    x.phi_k = k;
    x.v = v;
    const Vec out = x.Reference();
    double s = 0;
    for (size_t i = 0; i < out.size(); ++i) s += r[i] * out[i];
    return s;
  };
  const auto q = ToFloat(p.phi_q), k = ToFloat(p.phi_k), v = ToFloat(p.v), rf = ToFloat(r);
  std::vector<float> out(static_cast<size_t>(p.out_size())), norm(size_t(p.n * p.shape.n_heads));
  LinearState state;
  state.Reset(p.shape);
  LinearAttend(out.data(), norm.data(), state, q.data(), k.data(), v.data(), p.n, p.shape);
  std::vector<float> dq(q.size()), dk(k.size()), dv(v.size());
  LinearAttendBackward(dq.data(), dk.data(), dv.data(), rf.data(), out.data(), norm.data(), q.data(), k.data(),
                       v.data(), p.n, p.shape);
  const double eq = RelativeError(dq, NumericGradient([&](const Vec& x) { return loss(x, p.phi_k, p.v); }, p.phi_q));
  const double ek = RelativeError(dk, NumericGradient([&](const Vec& x) { return loss(p.phi_q, x, p.v); }, p.phi_k));
  const double ev = RelativeError(dv, NumericGradient([&](const Vec& x) { return loss(p.phi_q, p.phi_k, x); }, p.v));
  std::printf("  linear attention backward: d_phi_q %.2e, d_phi_k %.2e, dv %.2e\n", eq, ek, ev);
  EXPECT_LT(eq, 2e-4);
  EXPECT_LT(ek, 2e-4);
  EXPECT_LT(ev, 2e-4);
}

// LoLCATs' hybrid: the window by softmax, older keys linear.
struct WindowProblem : LinearProblem {
  Vec q, k;    // [n, H, D], [n, KV, D]
  Vec factor;  // [H] γ
  int32_t window;
  WindowProblem(std::mt19937_64& rng, int64_t tokens, int32_t w) : LinearProblem(rng, tokens), window(w) {
    q = testing::RandomVector(rng, size_t(n * shape.n_heads * shape.head_dim), 2.0);
    k = testing::RandomVector(rng, v.size());
    std::uniform_real_distribution<double> u(0.05, 0.95);
    for (int32_t h = 0; h < shape.n_heads; ++h) factor.push_back(u(rng));
  }
  Vec Reference(const Vec& qq, const Vec& kk, const Vec& vv, const Vec& pq, const Vec& pk, const Vec& f) const {
    Vec out(static_cast<size_t>(out_size()));
    LinearWindowReference(out.data(), qq.data(), kk.data(), vv.data(), pq.data(), pk.data(), f.data(), n, shape,
                          window);
    return out;
  }
  Vec Reference() const { return Reference(q, k, v, phi_q, phi_k, factor); }
  // The window's softmax as the inference kernel gives it, in float64:
  // out [n, H, D], lse and max [n, H].
  void WindowSoftmax(Vec& out, Vec& lse, Vec& max) const {
    const int64_t H = shape.n_heads, KV = shape.n_kv_heads, D = shape.head_dim;
    out.assign(size_t(n * H * D), 0.0);
    lse.assign(size_t(n * H), 0.0);
    max.assign(size_t(n * H), -INFINITY);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t h = 0; h < H; ++h) {
        const int64_t g = h / (H / KV), lo = std::max<int64_t>(0, i - window + 1);
        Vec s(size_t(i + 1));
        for (int64_t j = lo; j <= i; ++j) {
          for (int64_t d = 0; d < D; ++d)
            s[size_t(j)] += q[size_t((i * H + h) * D + d)] * k[size_t((j * KV + g) * D + d)];
          s[size_t(j)] /= std::sqrt(double(D));
          max[size_t(i * H + h)] = std::max(max[size_t(i * H + h)], s[size_t(j)]);
        }
        double sum = 0;
        for (int64_t j = lo; j <= i; ++j) {
          const double e = std::exp(s[size_t(j)] - max[size_t(i * H + h)]);
          sum += e;
          for (int64_t d = 0; d < D; ++d) out[size_t((i * H + h) * D + d)] += e * v[size_t((j * KV + g) * D + d)];
        }
        for (int64_t d = 0; d < D; ++d) out[size_t((i * H + h) * D + d)] /= sum;
        lse[size_t(i * H + h)] = max[size_t(i * H + h)] + std::log(sum);
      }
  }
};

TEST(LinearWindow, ForwardAndBackwardMatchTheReference) {
  std::mt19937_64 rng(6);
  const WindowProblem p(rng, 13, 4);
  const Vec r = testing::RandomVector(rng, static_cast<size_t>(p.out_size()));  // loss = Σ r · out
  const int64_t H = p.shape.n_heads;
  const auto q = ToFloat(p.q), k = ToFloat(p.k), v = ToFloat(p.v), pq = ToFloat(p.phi_q), pk = ToFloat(p.phi_k);
  const auto f = ToFloat(p.factor);
  std::vector<float> out(static_cast<size_t>(p.out_size())), norm(size_t(p.n * H));
  LinearWindowForward(out.data(), norm.data(), q.data(), k.data(), v.data(), pq.data(), pk.data(), f.data(), p.n,
                      p.shape, p.window);
  const double forward = RelativeError(out, p.Reference());
  EXPECT_LT(forward, 1e-6);
  std::vector<float> dq(q.size()), dk(k.size()), dv(v.size()), dpq(pq.size()), dpk(pk.size()), df(f.size(), 0.0f);
  const auto rf = ToFloat(r);
  LinearWindowBackward(dq.data(), dk.data(), dv.data(), dpq.data(), dpk.data(), df.data(), rf.data(), out.data(),
                       norm.data(), q.data(), k.data(), v.data(), pq.data(), pk.data(), f.data(), p.n, p.shape,
                       p.window);
  const auto loss = [&](const Vec& qq, const Vec& kk, const Vec& vv, const Vec& a, const Vec& b, const Vec& ff) {
    const Vec o = p.Reference(qq, kk, vv, a, b, ff);
    double sum = 0;
    for (size_t i = 0; i < o.size(); ++i) sum += r[i] * o[i];
    return sum;
  };
  const auto grad = [&](int which) {
    Vec x[6] = {p.q, p.k, p.v, p.phi_q, p.phi_k, p.factor};
    const Vec at = x[which];
    return NumericGradient(
        [&](const Vec& y) {
          x[which] = y;
          return loss(x[0], x[1], x[2], x[3], x[4], x[5]);
        },
        at);
  };
  const double eq = RelativeError(dq, grad(0)), ek = RelativeError(dk, grad(1)), ev = RelativeError(dv, grad(2));
  const double epq = RelativeError(dpq, grad(3)), epk = RelativeError(dpk, grad(4)), ef = RelativeError(df, grad(5));
  std::printf(
      "  linear + window 4: forward %.2e; backward dq %.2e, dk %.2e, dv %.2e, d_phi_q %.2e, d_phi_k %.2e, "
      "d_factor %.2e\n",
      forward, eq, ek, ev, epq, epk, ef);
  for (const double e : {eq, ek, ev, epq, epk, ef}) EXPECT_LT(e, 2e-4);
  // A window as long as the sequence is softmax attention alone.
  const WindowProblem wide(rng, 9, 9);
  SequenceAttention sa;
  std::vector<int32_t> pos(9);
  for (int32_t i = 0; i < 9; ++i) pos[size_t(i)] = i;
  sa.shape = AttentionShape{wide.shape.n_heads, wide.shape.n_kv_heads, wide.shape.head_dim};
  sa.batch = 1;
  sa.seq = 9;
  sa.pos = pos.data();
  const Vec softmax = testing::AttentionRef(wide.q, wide.k, wide.v, sa);
  const Vec hybrid = wide.Reference();
  double worst = 0;
  for (size_t i = 0; i < softmax.size(); ++i) worst = std::max(worst, std::abs(softmax[i] - hybrid[i]));
  EXPECT_LT(worst, 1e-9);
}

// Inference: the window's softmax from the kernel (here in float64) with the
// state and the pending tokens, whole, in chunks and one token at a time,
// equals the reference; the pending tokens stay fewer than W + the chunk.
TEST(LinearWindow, AttendInPiecesMatchesTheReference) {
  std::mt19937_64 rng(8);
  const WindowProblem p(rng, 30, 5);
  const int64_t H = p.shape.n_heads, KV = p.shape.n_kv_heads, D = p.shape.head_dim, P = p.shape.phi_dim;
  Vec wo, lse, max;
  p.WindowSoftmax(wo, lse, max);
  const auto o = ToFloat(wo), l = ToFloat(lse), m = ToFloat(max), f = ToFloat(p.factor);
  const auto pq = ToFloat(p.phi_q), pk = ToFloat(p.phi_k), v = ToFloat(p.v);
  const Vec ref = p.Reference();
  for (const int64_t piece : {p.n, int64_t(7), int64_t(1)}) {
    LinearState state;
    state.Reset(p.shape);
    std::vector<float> out(static_cast<size_t>(p.out_size()));  // [n, H, D]
    for (int64_t at = 0; at < p.n; at += piece) {
      const int64_t c = std::min(piece, p.n - at);
      LinearWindowAttend(out.data() + at * H * D, o.data() + at * H * D, l.data() + at * H, m.data() + at * H, f.data(),
                         state, pq.data() + at * H * P, pk.data() + at * KV * P, v.data() + at * KV * D, c, p.shape,
                         p.window);
      EXPECT_LE(state.tokens - state.folded, p.window - 1);
    }
    EXPECT_LT(RelativeError(out, ref), 1e-5) << "pieces of " << piece;
  }
}

Vec HedgehogRef(const Vec& x, const Vec& w, const Vec& b, int64_t n, const FeatureMapShape& s) {
  Vec phi(static_cast<size_t>(n * s.heads * s.phi_dim()));
  HedgehogReference(phi.data(), x.data(), w.data(), b.data(), n, s);
  return phi;
}

TEST(Hedgehog, ForwardAndBackward) {
  std::mt19937_64 rng(4);
  const FeatureMapShape s{3, 5, 4};
  const int64_t n = 6;
  const Vec x = testing::RandomVector(rng, size_t(n * s.heads * s.head_dim));
  const Vec w = testing::RandomVector(rng, size_t(s.heads * s.head_dim * s.feature_dim), 0.5);
  const Vec b = testing::RandomVector(rng, size_t(s.heads * s.feature_dim), 0.5);
  const Vec r = testing::RandomVector(rng, size_t(n * s.heads * s.phi_dim()));
  const auto xf = ToFloat(x), wf = ToFloat(w), bf = ToFloat(b), rf = ToFloat(r);
  std::vector<float> phi(r.size());
  HedgehogForward(phi.data(), xf.data(), wf.data(), bf.data(), n, s);
  EXPECT_LT(RelativeError(phi, HedgehogRef(x, w, b, n, s)), 1e-6);
  const auto loss = [&](const Vec& xx, const Vec& ww, const Vec& bb) {
    const Vec p = HedgehogRef(xx, ww, bb, n, s);
    double sum = 0;
    for (size_t i = 0; i < p.size(); ++i) sum += r[i] * p[i];
    return sum;
  };
  std::vector<float> dx(x.size(), 0.0f), dw(w.size(), 0.0f), db(b.size(), 0.0f);
  HedgehogBackward(dx.data(), dw.data(), db.data(), rf.data(), phi.data(), xf.data(), wf.data(), n, s);
  const double ex = RelativeError(dx, NumericGradient([&](const Vec& v) { return loss(v, w, b); }, x));
  const double ew = RelativeError(dw, NumericGradient([&](const Vec& v) { return loss(x, v, b); }, w));
  const double eb = RelativeError(db, NumericGradient([&](const Vec& v) { return loss(x, w, v); }, b));
  std::printf("  hedgehog backward: dx %.2e, dW %.2e, db %.2e\n", ex, ew, eb);
  EXPECT_LT(ex, 2e-4);
  EXPECT_LT(ew, 2e-4);
  EXPECT_LT(eb, 2e-4);
}

TEST(Hedgehog, IdentityStartAndPositiveFeatures) {
  const FeatureMapShape s{2, 8, 4};
  std::vector<float> w(size_t(2 * 8 * 4)), b(size_t(2 * 4));
  InitHedgehog(w.data(), b.data(), s);
  EXPECT_FLOAT_EQ(w[0], std::pow(8.0f, -0.25f));  // head 0: W[0][0]
  EXPECT_FLOAT_EQ(w[1], 0.0f);
  EXPECT_FLOAT_EQ(w[(1 * 8 + 3) * 4 + 3], std::pow(8.0f, -0.25f));  // head 1: W[3][3]
  std::mt19937_64 rng(5);
  const auto x = ToFloat(testing::RandomVector(rng, size_t(3 * 2 * 8), 30.0));  // large inputs
  std::vector<float> phi(size_t(3 * 2 * 8));
  HedgehogForward(phi.data(), x.data(), w.data(), b.data(), 3, s);
  for (const float f : phi) {
    EXPECT_TRUE(std::isfinite(f));
    EXPECT_GE(f, 0.0f);
  }
}

}  // namespace
}  // namespace swan
