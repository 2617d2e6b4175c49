// Every backward in train/layers.h against central differences of a plain
// float64 forward written here, on random inputs.
#include "train/layers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numeric>

#include "train/grad_check.h"
#include "train/test_reference.h"
#include "util/bf16.h"

namespace swan {
namespace {

using testing::AttentionRef;
using testing::NumericGradient;
using testing::RandomVector;
using testing::RelativeError;
using testing::ToFloat;

constexpr double kTol = 2e-4;  // float32 backward against float64 differences

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

void Report(const char* what, double err) {
  std::printf("  grad check %-28s rel. error %.2e\n", what, err);
  EXPECT_LT(err, kTol) << what;
}

// --- float64 references ------------------------------------------------------

std::vector<double> RmsNormRef(const std::vector<double>& x, const std::vector<double>& w, double eps, int64_t n,
                               int64_t dim) {
  std::vector<double> out(x.size());
  for (int64_t t = 0; t < n; ++t) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += x[t * dim + i] * x[t * dim + i];
    const double r = 1 / std::sqrt(ss / dim + eps);
    for (int64_t i = 0; i < dim; ++i) out[t * dim + i] = x[t * dim + i] * r * w[i];
  }
  return out;
}

std::vector<double> RopeRef(const std::vector<double>& x, const Rope& rope, const int32_t* pos, int64_t n,
                            int32_t heads, int32_t head_dim) {
  std::vector<double> out = x;
  const int32_t half = head_dim / 2;
  for (int64_t t = 0; t < n; ++t)
    for (int32_t h = 0; h < heads; ++h)
      for (int32_t i = 0; i < half; ++i) {
        const double a = pos[t] * rope.inv_freq()[size_t(i)];
        const double c = std::cos(a) * rope.attention_factor(), s = std::sin(a) * rope.attention_factor();
        const int64_t base = (t * heads + h) * head_dim;
        const double x0 = x[size_t(base + i)], x1 = x[size_t(base + i + half)];
        out[size_t(base + i)] = x0 * c - x1 * s;
        out[size_t(base + i + half)] = x1 * c + x0 * s;
      }
  return out;
}

// --- tests --------------------------------------------------------------------

TEST(LayersGrad, Embedding) {
  std::mt19937_64 rng(1);
  const int64_t n = 7, vocab = 5, dim = 4;
  const std::vector<int32_t> ids = {0, 3, 3, 1, 4, 0, 2};
  const auto table = RandomVector(rng, size_t(vocab * dim));
  const auto r = RandomVector(rng, size_t(n * dim));
  std::vector<float> out(size_t(n * dim));
  const auto table_f = ToFloat(table);
  EmbeddingForward(out.data(), ids.data(), table_f.data(), n, vocab, dim);
  std::vector<float> d_table(size_t(vocab * dim), 0.0f);
  EmbeddingBackward(d_table.data(), ToFloat(r).data(), ids.data(), n, dim);
  auto f = [&](const std::vector<double>& tb) {
    double s = 0;
    for (int64_t t = 0; t < n; ++t)
      for (int64_t i = 0; i < dim; ++i) s += tb[size_t(ids[size_t(t)] * dim + i)] * r[size_t(t * dim + i)];
    return s;
  };
  Report("embedding d_table", RelativeError(d_table, NumericGradient(f, table)));
  EXPECT_THROW(EmbeddingForward(out.data(), std::vector<int32_t>{5}.data(), table_f.data(), 1, vocab, dim),
               std::out_of_range);
}

void CheckRmsNorm(const char* what, int64_t n, int64_t dim) {
  std::mt19937_64 rng(2);
  const double eps = 1e-5;
  const auto x = RandomVector(rng, size_t(n * dim));
  const auto w = RandomVector(rng, size_t(dim));
  const auto r = RandomVector(rng, size_t(n * dim));
  std::vector<float> out(x.size()), rstd(static_cast<size_t>(n)), dx(x.size(), 0.5f), dw(size_t(dim), 0.0f);
  const auto xf = ToFloat(x), wf = ToFloat(w), rf = ToFloat(r);
  RmsNorm(out.data(), xf.data(), wf.data(), float(eps), n, dim, rstd.data());
  EXPECT_LT(RelativeError(out, RmsNormRef(x, w, eps, n, dim)), 1e-6);
  RmsNormBackward(dx.data(), dw.data(), rf.data(), xf.data(), rstd.data(), wf.data(), n, dim,
                  /*accumulate_dx=*/true);
  for (float& v : dx) v -= 0.5f;  // accumulate_dx added onto 0.5
  auto fx = [&](const std::vector<double>& xx) { return Dot(RmsNormRef(xx, w, eps, n, dim), r); };
  auto fw = [&](const std::vector<double>& ww) { return Dot(RmsNormRef(x, ww, eps, n, dim), r); };
  Report((std::string(what) + " dx").c_str(), RelativeError(dx, NumericGradient(fx, x)));
  Report((std::string(what) + " d_weight").c_str(), RelativeError(dw, NumericGradient(fw, w)));
}

TEST(LayersGrad, RmsNorm) { CheckRmsNorm("rmsnorm", 5, 12); }
// QK-norm (Gemma 3): the same RMSNorm over each head of q or k.
TEST(LayersGrad, QkNorm) { CheckRmsNorm("qk-norm (4 tok x 3 heads)", 4 * 3, 8); }

TEST(LayersGrad, Linear) {
  std::mt19937_64 rng(3);
  const int64_t n = 6, in = 5, out = 7;
  const auto x = RandomVector(rng, size_t(n * in));
  const auto w = RandomVector(rng, size_t(out * in));
  const auto r = RandomVector(rng, size_t(n * out));
  auto fwd = [&](const std::vector<double>& xx, const std::vector<double>& ww) {
    std::vector<double> y(size_t(n * out), 0.0);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) y[size_t(t * out + o)] += xx[size_t(t * in + i)] * ww[size_t(o * in + i)];
    return y;
  };
  const auto xf = ToFloat(x), wf = ToFloat(w), rf = ToFloat(r);
  std::vector<float> y(size_t(n * out));
  LinearForward(y.data(), xf.data(), wf.data(), n, in, out);
  EXPECT_LT(RelativeError(y, fwd(x, w)), 1e-5);
  std::vector<float> dx(x.size()), dw(w.size(), 0.0f);
  LinearBackward(dx.data(), dw.data(), rf.data(), xf.data(), wf.data(), n, in, out, false);
  Report("linear dx",
         RelativeError(dx, NumericGradient([&](const std::vector<double>& v) { return Dot(fwd(v, w), r); }, x)));
  Report("linear d_weight",
         RelativeError(dw, NumericGradient([&](const std::vector<double>& v) { return Dot(fwd(x, v), r); }, w)));
}

// The bf16 products against (1) a float64 product of the bf16-rounded
// inputs, which they must match to float32 accumulation error, and (2) the
// float32 product, which they follow to bf16 precision.
TEST(LayersBF16, LinearMatchesRoundedReferenceAndFloat32) {
  std::mt19937_64 rng(8);
  const int64_t n = 37, in = 48, out = 29;
  const auto xf = ToFloat(RandomVector(rng, size_t(n * in)));     // [n, in]
  const auto wf = ToFloat(RandomVector(rng, size_t(out * in)));   // [out, in]
  const auto dyf = ToFloat(RandomVector(rng, size_t(n * out)));   // [n, out]
  const auto dx0 = ToFloat(RandomVector(rng, size_t(n * in)));    // [n, in] dx adds onto it
  const auto dw0 = ToFloat(RandomVector(rng, size_t(out * in)));  // [out, in] d_w adds onto it
  std::vector<uint16_t> w16(wf.size());                           // [out, in]
  for (size_t i = 0; i < wf.size(); ++i) w16[i] = F32ToBF16(wf[i]);
  auto round = [](const std::vector<float>& v) {
    std::vector<double> r(v.size());
    for (size_t i = 0; i < v.size(); ++i) r[i] = BF16ToF32(F32ToBF16(v[i]));
    return r;
  };
  auto exact = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
  for (bool rounded : {true, false}) {
    const auto x = rounded ? round(xf) : exact(xf), w = rounded ? round(wf) : exact(wf);
    const auto dy = rounded ? round(dyf) : exact(dyf);
    const double tol = rounded ? 1e-5 : 1e-2;
    const char* what = rounded ? "vs. bf16-rounded inputs" : "vs. float32";
    // y = x · wᵀ,  dx = dx0 + dy · w,  d_w = dw0 + dyᵀ · x, in float64.
    std::vector<double> y_ref(size_t(n * out), 0.0), dx_ref = exact(dx0), dw_ref = exact(dw0);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) {
          const double xv = x[size_t(t * in + i)], wv = w[size_t(o * in + i)];
          const double dyv = dy[size_t(t * out + o)];
          y_ref[size_t(t * out + o)] += xv * wv;
          dx_ref[size_t(t * in + i)] += dyv * wv;
          dw_ref[size_t(o * in + i)] += dyv * xv;
        }
    std::vector<float> y(size_t(n * out));  // [n, out]
    LinearForwardBF16(y.data(), xf.data(), w16.data(), n, in, out);
    std::vector<float> dx = dx0, dw = dw0;
    LinearBackwardBF16(dx.data(), dw.data(), dyf.data(), xf.data(), w16.data(), n, in, out,
                       /*accumulate_dx=*/true);
    const double y_err = RelativeError(y, y_ref), dx_err = RelativeError(dx, dx_ref);
    const double dw_err = RelativeError(dw, dw_ref);
    EXPECT_LT(y_err, tol) << "y " << what;
    EXPECT_LT(dx_err, tol) << "dx " << what;
    EXPECT_LT(dw_err, tol) << "d_w " << what;
    std::printf("  bf16 linear %-24s rel. error y %.2e, dx %.2e, d_w %.2e\n", what, y_err, dx_err, dw_err);
  }
  // dx written, not added, without accumulate_dx; a null dx is allowed.
  std::vector<float> dx(size_t(n * in), 1e6f), dw = dw0;  // [n, in], [out, in]
  LinearBackwardBF16(dx.data(), dw.data(), dyf.data(), xf.data(), w16.data(), n, in, out, false);
  EXPECT_LT(std::abs(dx[0]), 1e3f);
  LinearBackwardBF16(nullptr, dw.data(), dyf.data(), xf.data(), w16.data(), n, in, out, false);
}

void CheckRope(const char* what, const RopeSettings& settings) {
  std::mt19937_64 rng(4);
  const int64_t n = 5;
  const int32_t heads = 2, head_dim = 8;
  const std::vector<int32_t> pos = {0, 3, 7, 100, 2000};
  const Rope rope(settings, head_dim);
  const auto x = RandomVector(rng, size_t(n * heads * head_dim));
  const auto r = RandomVector(rng, x.size());
  auto ref = [&](const std::vector<double>& v) {
    return settings.enabled ? RopeRef(v, rope, pos.data(), n, heads, head_dim) : v;
  };
  std::vector<float> y = ToFloat(x);
  RopeForward(y.data(), rope, pos.data(), n, heads);
  EXPECT_LT(RelativeError(y, ref(x)), 1e-5);
  std::vector<float> dx = ToFloat(r);
  RopeBackward(dx.data(), rope, pos.data(), n, heads);
  Report(what, RelativeError(dx, NumericGradient([&](const std::vector<double>& v) { return Dot(ref(v), r); }, x)));
}

TEST(LayersGrad, Rope) {
  RopeSettings plain;
  CheckRope("rope dx", plain);
  RopeSettings yarn;
  yarn.scaling.kind = RopeScaling::Kind::kYarn;
  yarn.scaling.factor = 4;
  yarn.scaling.original_max_position_embeddings = 256;
  CheckRope("rope (yarn x4) dx", yarn);
  RopeSettings nope;
  nope.enabled = false;
  CheckRope("nope dx", nope);
}

using Gate = void (*)(float* out, const float* gate, const float* up, int64_t n);
using GateBackward = void (*)(float* d_gate, float* d_up, const float* d_out, const float* gate, const float* up,
                              int64_t n);

// A gated MLP activation out = act(gate) * up (ops/elementwise.h) against
// its float64 form, and its backward against central differences.
void CheckGate(const char* what, double (*act)(double), Gate forward, GateBackward backward) {
  std::mt19937_64 rng(5);
  const int64_t n = 40;  // past one SIMD vector, with a tail
  const auto gate = RandomVector(rng, size_t(n), 2.0), up = RandomVector(rng, size_t(n)),
             r = RandomVector(rng, size_t(n));
  auto ref = [&](const std::vector<double>& g, const std::vector<double>& u) {
    std::vector<double> o(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) o[size_t(i)] = act(g[size_t(i)]) * u[size_t(i)];
    return o;
  };
  std::vector<float> dg(static_cast<size_t>(n)), du(static_cast<size_t>(n));
  std::vector<float> out(static_cast<size_t>(n));
  forward(out.data(), ToFloat(gate).data(), ToFloat(up).data(), n);
  EXPECT_LT(RelativeError(out, ref(gate, up)), 1e-5) << what;
  backward(dg.data(), du.data(), ToFloat(r).data(), ToFloat(gate).data(), ToFloat(up).data(), n);
  Report((std::string(what) + " d_gate").c_str(),
         RelativeError(dg, NumericGradient([&](const std::vector<double>& v) { return Dot(ref(v, up), r); }, gate)));
  Report((std::string(what) + " d_up").c_str(),
         RelativeError(du, NumericGradient([&](const std::vector<double>& v) { return Dot(ref(gate, v), r); }, up)));
}

TEST(LayersGrad, SwiGlu) {
  CheckGate(
      "swiglu", [](double g) { return g / (1 + std::exp(-g)); }, SiluMul, SiluMulBackward);
}

TEST(LayersGrad, GeluTanhGate) {
  CheckGate(
      "gelu-tanh gate",
      [](double g) { return 0.5 * g * (1 + std::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g * g * g))); }, GeluTanhMul,
      GeluTanhMulBackward);
}

void CheckAttention(const char* what, Span span) {
  std::mt19937_64 rng(7);
  SequenceAttention a;
  a.shape = AttentionShape{4, 2, 8};
  a.span = span;
  a.batch = 2;
  a.seq = 9;
  std::vector<int32_t> pos(size_t(a.seq));
  std::iota(pos.begin(), pos.end(), 0);
  a.pos = pos.data();
  const int64_t nq = a.batch * a.seq * a.shape.n_heads * a.shape.head_dim;
  const int64_t nkv = a.batch * a.seq * a.shape.n_kv_heads * a.shape.head_dim;
  const auto q = RandomVector(rng, size_t(nq)), k = RandomVector(rng, size_t(nkv)), v = RandomVector(rng, size_t(nkv)),
             r = RandomVector(rng, size_t(nq));
  const auto qf = ToFloat(q), kf = ToFloat(k), vf = ToFloat(v), rf = ToFloat(r);
  std::vector<float> out(static_cast<size_t>(nq)), lse(size_t(a.batch * a.seq * a.shape.n_heads));
  AttentionForward(out.data(), lse.data(), qf.data(), kf.data(), vf.data(), a);
  EXPECT_LT(RelativeError(out, AttentionRef(q, k, v, a)), 1e-5);
  std::vector<float> dq(static_cast<size_t>(nq)), dk(static_cast<size_t>(nkv)), dv(static_cast<size_t>(nkv));
  AttentionBackward(dq.data(), dk.data(), dv.data(), rf.data(), out.data(), lse.data(), qf.data(), kf.data(), vf.data(),
                    a);
  const std::string w = what;
  Report((w + " dq").c_str(),
         RelativeError(
             dq, NumericGradient([&](const std::vector<double>& x) { return Dot(AttentionRef(x, k, v, a), r); }, q)));
  Report((w + " dk").c_str(),
         RelativeError(
             dk, NumericGradient([&](const std::vector<double>& x) { return Dot(AttentionRef(q, x, v, a), r); }, k)));
  Report((w + " dv").c_str(),
         RelativeError(
             dv, NumericGradient([&](const std::vector<double>& x) { return Dot(AttentionRef(q, k, x, a), r); }, v)));
}

TEST(LayersGrad, AttentionFull) { CheckAttention("attention full", Span{}); }
TEST(LayersGrad, AttentionWindowSinks) { CheckAttention("attention w3+1 sink", Span{3, 1}); }

TEST(LayersGrad, CrossEntropy) {
  std::mt19937_64 rng(8);
  const int64_t n = 5, vocab = 11;
  const std::vector<int32_t> targets = {3, 0, -1, 10, 7};
  const auto logits = RandomVector(rng, size_t(n * vocab), 3.0);
  // Unweighted (null), and answer-style weights: 0 on a counted token too.
  const std::vector<float> weights = {1.0f, 0.25f, 1.0f, 0.0f, 2.0f};
  for (const float* w : {static_cast<const float*>(nullptr), weights.data()}) {
    SCOPED_TRACE(w ? "weighted" : "unweighted");
    auto ref = [&](const std::vector<double>& l) {
      double total = 0, weight_sum = 0;
      for (int64_t t = 0; t < n; ++t) {
        if (targets[size_t(t)] < 0) continue;
        double sum = 0;
        for (int64_t j = 0; j < vocab; ++j) sum += std::exp(l[size_t(t * vocab + j)]);
        const double wt = w ? w[t] : 1.0;
        total += wt * (std::log(sum) - l[size_t(t * vocab + targets[size_t(t)])]);
        weight_sum += wt;
      }
      return total / weight_sum;
    };
    const double weight_sum = w ? 1.0 + 0.25 + 0.0 + 2.0 : 4.0;
    const auto lf = ToFloat(logits);
    std::vector<float> losses(static_cast<size_t>(n));
    const double mean = CrossEntropyForward(losses.data(), lf.data(), targets.data(), w, n, vocab);
    EXPECT_NEAR(mean, ref(logits), 1e-5);
    EXPECT_EQ(losses[2], 0.0f);
    EXPECT_GT(losses[3], 0.0f);  // the per-token loss stays unweighted
    std::vector<float> d = lf;   // in place, as the model runs it
    CrossEntropyBackward(d.data(), d.data(), targets.data(), w, float(1.0 / weight_sum), n, vocab);
    Report("cross-entropy d_logits", RelativeError(d, NumericGradient(ref, logits)));
  }
}

}  // namespace
}  // namespace swan
