// DuoAttention's head gates (train/head_gates.h): the gated layer against a
// float64 reference and central differences on random inputs, the gates'
// gradient through a whole frozen model, and the trainer's two limits.
#include "train/head_gates.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numeric>

#include "model/plan.h"
#include "train/grad_check.h"
#include "train/model.h"
#include "train/test_reference.h"

namespace swan {
namespace {

using testing::AttentionRef;
using testing::NumericGradient;
using testing::RandomVector;
using testing::RelativeError;
using testing::ToFloat;
using Vec = std::vector<double>;

// The gated layer (two query heads per KV head): q, k, v and the gates in, loss = Σ r · out.
struct GatedProblem : testing::AttentionInputs {
  Vec gates = {0.3, 0.8};  // [KV]

  GatedProblem(std::mt19937_64& rng, Span span, int64_t batch, int64_t seq) : AttentionInputs(rng, span, batch, seq) {}
  int64_t D() const { return a.shape.head_dim; }
  int64_t group() const { return a.shape.n_heads / a.shape.n_kv_heads; }

  Vec Out(const Vec& qq, const Vec& kk, const Vec& vv, const Vec& gg) const {
    SequenceAttention full = a;
    full.span = Span{};
    const Vec of = AttentionRef(qq, kk, vv, full), ow = AttentionRef(qq, kk, vv, a);
    Vec out(of.size());
    for (size_t i = 0; i < out.size(); ++i) {
      const double alpha = gg[size_t(int64_t(i) / D() % a.shape.n_heads / group())];
      out[i] = alpha * of[i] + (1 - alpha) * ow[i];
    }
    return out;
  }
  double Loss(const Vec& qq, const Vec& kk, const Vec& vv, const Vec& gg) const {
    const Vec out = Out(qq, kk, vv, gg);
    return std::inner_product(out.begin(), out.end(), r.begin(), 0.0);
  }
};

void CheckGatedLayer(Span span, int64_t batch, int64_t seq) {
  std::mt19937_64 rng(3);
  const GatedProblem p(rng, span, batch, seq);
  const int64_t N = batch * seq, row = int64_t(p.q.size()) / N, H = p.a.shape.n_heads;
  const auto qf = ToFloat(p.q), kf = ToFloat(p.k), vf = ToFloat(p.v), rf = ToFloat(p.r);
  const auto gf = ToFloat(p.gates);
  std::vector<float> full(size_t(N * row)), window(size_t(N * row));      // [N, H*D]
  std::vector<float> lse_full(size_t(N * H)), lse_window(size_t(N * H));  // [N, H]
  const RoutedBranches saved{full.data(), lse_full.data(), window.data(), lse_window.data()};
  std::vector<float> out(size_t(N * row));  // [N, H*D]
  HeadGatedAttentionForward(out.data(), saved, gf.data(), qf.data(), kf.data(), vf.data(), p.a);
  const Vec ref = p.Out(p.q, p.k, p.v, p.gates);
  EXPECT_LT(RelativeError(out, ref), 1e-5) << "forward";

  std::vector<float> dq(qf.size()), dk(kf.size()), dv(vf.size());
  std::vector<float> d_gates = {1.0f, 1.0f};  // accumulates: subtract the start after
  HeadGatedAttentionBackward(dq.data(), dk.data(), dv.data(), d_gates.data(), rf.data(), saved, gf.data(), qf.data(),
                             kf.data(), vf.data(), p.a);
  for (float& g : d_gates) g -= 1.0f;
  const double tol = 2e-4;  // float32 backward against float64 differences
  const auto check = [&](const char* what, const std::vector<float>& got, const Vec& want) {
    const double err = RelativeError(got, want);
    std::printf("  gated layer [%s, B=%lld] %-8s rel. error %.2e\n", span.ToString().c_str(), (long long)batch, what,
                err);
    EXPECT_LT(err, tol) << what;
  };
  check("dq", dq, NumericGradient([&](const Vec& x) { return p.Loss(x, p.k, p.v, p.gates); }, p.q));
  check("dk", dk, NumericGradient([&](const Vec& x) { return p.Loss(p.q, x, p.v, p.gates); }, p.k));
  check("dv", dv, NumericGradient([&](const Vec& x) { return p.Loss(p.q, p.k, x, p.gates); }, p.v));
  check("d_gates", d_gates, NumericGradient([&](const Vec& x) { return p.Loss(p.q, p.k, p.v, x); }, p.gates));
}

TEST(HeadGatesGrad, GatedLayerWindow) { CheckGatedLayer(Span{3, 0}, 1, 9); }
TEST(HeadGatesGrad, GatedLayerWindowSinksBatched) { CheckGatedLayer(Span{3, 1}, 2, 8); }

TEST(HeadGates, DistillationIsTheWeightedMeanSquaredDistance) {
  const std::vector<float> hidden = {1, 2, 3, 4}, target = {0, 2, 3, 2};  // [2, 2]
  const std::vector<float> weights = {1, 3};
  std::vector<float> d(4);
  // (1·1 + 3·4) / 4
  EXPECT_DOUBLE_EQ(HiddenDistillation(d.data(), hidden.data(), target.data(), weights.data(), 2, 2), 13.0 / 4);
  EXPECT_FLOAT_EQ(d[0], 2 * 0.25f * 1);
  EXPECT_FLOAT_EQ(d[1], 0);
  EXPECT_FLOAT_EQ(d[3], 2 * 0.75f * 2);
}

// A tiny model with two KV heads per layer and a window on every layer.
TrainModel TinyGatedModel(const std::string& spec) {
  ModelConfig shape = PresetConfig("tiny", 32, 16);
  shape.n_kv_heads = 2;
  shape.n_heads = 4;
  ModelAttentionDefaults d;
  d.n_layers = shape.n_layers;
  d.n_kv_heads = shape.n_kv_heads;
  TrainModel model(shape, ResolvePlan(spec, d));
  model.InitRandom(5);
  std::mt19937_64 rng(9);
  std::normal_distribution<float> noise(0.0f, 0.3f);  // larger than the init: visible gradients
  for (float& p : model.params()) p += noise(rng);
  return model;
}

std::vector<int32_t> RandomTokens(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> id(0, 31);
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  for (int32_t& t : tokens) t = id(rng);
  return tokens;
}

TEST(HeadGates, AllOnesIsFullAttentionAndAllZerosTheWindow) {
  const int64_t T = 12;
  const std::vector<int32_t> tokens = RandomTokens(T, 1);
  TrainModel gated = TinyGatedModel("swa:3,sinks:1");
  const int64_t n_gates = int64_t(gated.config().n_layers) * gated.config().n_kv_heads;
  for (const auto& [gate, spec] : {std::pair{1.0f, "full"}, std::pair{0.0f, "swa:3,sinks:1"}}) {
    TrainModel plain = TinyGatedModel(spec);
    const float* want = plain.ForwardHidden(tokens.data(), 1, T);
    gated.set_head_gates(std::vector<float>(size_t(n_gates), gate));
    const float* got = gated.ForwardHidden(tokens.data(), 1, T);
    const int64_t C = gated.config().hidden_size;
    for (int64_t i = 0; i < T * C; ++i) ASSERT_NEAR(got[i], want[i], 1e-5) << spec << " at " << i;
  }
}

TEST(HeadGatesGrad, ThroughTheFrozenModel) {
  TrainModel model = TinyGatedModel("swa:3,sinks:1");
  const int64_t T = 12, C = model.config().hidden_size;
  const std::vector<int32_t> tokens = RandomTokens(T, 2);
  const std::vector<float> weights = {0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 2, 1};  // [T]
  std::vector<float> target(model.ForwardHidden(tokens.data(), 1, T),
                            model.ForwardHidden(tokens.data(), 1, T) + T * C);  // [T, C] full
  const std::vector<double> gates = {0.7, 0.2, 0.5, 0.9};                       // [L * KV]
  std::vector<float> d_hidden(size_t(T * C));                                   // [T, C]
  const auto loss = [&](const Vec& g) {
    model.set_head_gates(ToFloat(g));
    const float* h = model.ForwardHidden(tokens.data(), 1, T);
    return HiddenDistillation(d_hidden.data(), h, target.data(), weights.data(), T, C);
  };
  const std::vector<float> params_before = model.params();
  loss(gates);
  model.ZeroGrads();
  model.BackwardHidden(d_hidden.data());
  const std::vector<float> analytic = model.head_gate_grads();
  // The forward is float32: differences of 1e-2 (the loss is smooth in each gate).
  const double err = RelativeError(analytic, NumericGradient(loss, gates, 1e-2));
  std::printf("  head gates through the model: rel. error %.2e\n", err);
  EXPECT_LT(err, 5e-3);
  // Frozen: no weight moved and no weight gradient was written.
  EXPECT_EQ(model.params(), params_before);
  for (const float g : model.grads()) ASSERT_EQ(g, 0.0f);
}

TEST(HeadGates, RefusedWithoutAWindowOrWithTheWrongCount) {
  TrainModel full = TinyGatedModel("full");
  EXPECT_THROW(full.set_head_gates(std::vector<float>(4, 1.0f)), std::invalid_argument);
  TrainModel window = TinyGatedModel("swa:3");
  EXPECT_THROW(window.set_head_gates(std::vector<float>(3, 1.0f)), std::invalid_argument);
  window.set_head_gates(std::vector<float>(4, 1.0f));
}

HeadGateSample RandomSample(uint64_t index) {
  HeadGateSample s;
  s.tokens = RandomTokens(12, 100 + index);
  s.weights.assign(12, 0.0f);
  s.weights[8] = s.weights[11] = 1.0f;
  return s;
}

// Where the window sees every key the window loses nothing: λ alone drives
// every gate to 0. Where it hides keys and λ = 0, full attention is the
// minimum and the gates stay at 1.
TEST(HeadGates, TrainerLimits) {
  HeadGateOptions o;
  o.steps = 60;
  o.batch = 2;
  o.lr = 0.05;
  TrainModel wide = TinyGatedModel("swa:16");  // the samples have 12 tokens
  const std::vector<float> params_before = wide.params();
  int64_t reports = 0;
  const std::vector<float> dropped = TrainHeadGates(wide, RandomSample, o, [&](const HeadGateProgress& p) {
                                       ++reports;
                                       EXPECT_NEAR(p.distill, 0.0, 1e-10);
                                     }).gates;
  EXPECT_EQ(reports, o.steps);
  for (const float g : dropped) EXPECT_EQ(g, 0.0f);
  EXPECT_EQ(wide.params(), params_before);
  EXPECT_TRUE(wide.head_gates().empty());

  o.l1 = 0;
  TrainModel narrow = TinyGatedModel("swa:2");
  const HeadGates kept = TrainHeadGates(narrow, RandomSample, o, nullptr);
  for (const float g : kept.gates) EXPECT_EQ(g, 1.0f);
  for (const double p : kept.pressure) EXPECT_EQ(p, 0.0);
}

}  // namespace
}  // namespace swan
