// The whole model's gradient against central differences of a float64
// reference forward written here, on a tiny configuration under a window
// plan with sinks and NoPE on the full layers.
#include "train/model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "train/grad_check.h"

namespace swan {
namespace {

using Vec = std::vector<double>;

// y[n, out] = x[n, in] · w[out, in]ᵀ
Vec Linear(const Vec& x, const double* w, int64_t n, int64_t in, int64_t out) {
  Vec y(size_t(n * out), 0.0);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t o = 0; o < out; ++o) {
      double s = 0;
      for (int64_t i = 0; i < in; ++i) s += x[size_t(t * in + i)] * w[o * in + i];
      y[size_t(t * out + o)] = s;
    }
  return y;
}

Vec Norm(const Vec& x, const double* w, double eps, int64_t n, int64_t dim) {
  Vec y(x.size());
  for (int64_t t = 0; t < n; ++t) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += x[size_t(t * dim + i)] * x[size_t(t * dim + i)];
    const double r = 1 / std::sqrt(ss / dim + eps);
    for (int64_t i = 0; i < dim; ++i) y[size_t(t * dim + i)] = x[size_t(t * dim + i)] * r * w[i];
  }
  return y;
}

void Rotate(Vec& x, const Rope& rope, bool enabled, int64_t seq, int32_t heads, int32_t dim) {
  if (!enabled) return;
  const int32_t half = dim / 2;
  for (int64_t t = 0; t < seq; ++t)
    for (int32_t h = 0; h < heads; ++h)
      for (int32_t i = 0; i < half; ++i) {
        const double a = double(t) * rope.inv_freq()[size_t(i)];
        const size_t base = size_t((t * heads + h) * dim);
        const double x0 = x[base + size_t(i)], x1 = x[base + size_t(i + half)];
        x[base + size_t(i)] = x0 * std::cos(a) - x1 * std::sin(a);
        x[base + size_t(i + half)] = x1 * std::cos(a) + x0 * std::sin(a);
      }
}

// Mean cross-entropy of one batch, every sequence from position 0.
double ReferenceLoss(const TrainModel& m, const Vec& params, const std::vector<int32_t>& tokens,
                     const std::vector<int32_t>& targets, int64_t batch, int64_t seq) {
  const ModelShape& s = m.shape();
  const int64_t C = s.hidden, F = s.intermediate, V = s.vocab, H = s.n_heads, KV = s.n_kv_heads;
  const int64_t D = s.head_dim;
  auto P = [&](const std::string& name) { return params.data() + m.tensor(name).offset; };
  double total = 0;
  int64_t counted = 0;
  for (int64_t b = 0; b < batch; ++b) {
    Vec x(size_t(seq * C));
    for (int64_t t = 0; t < seq; ++t)
      for (int64_t i = 0; i < C; ++i)
        x[size_t(t * C + i)] = P("model.embed_tokens.weight")[tokens[size_t(b * seq + t)] * C + i];
    for (int32_t l = 0; l < s.n_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      const LayerPlan& lp = m.plan().layers[size_t(l)];
      const Rope rope(lp.rope, int32_t(D));
      const Vec xn = Norm(x, P(p + "input_layernorm.weight"), s.rms_eps, seq, C);
      Vec q = Linear(xn, P(p + "self_attn.q_proj.weight"), seq, C, H * D);
      Vec k = Linear(xn, P(p + "self_attn.k_proj.weight"), seq, C, KV * D);
      const Vec v = Linear(xn, P(p + "self_attn.v_proj.weight"), seq, C, KV * D);
      Rotate(q, rope, lp.rope.enabled, seq, int32_t(H), int32_t(D));
      Rotate(k, rope, lp.rope.enabled, seq, int32_t(KV), int32_t(D));
      Vec att(size_t(seq * H * D), 0.0);
      for (int64_t i = 0; i < seq; ++i)
        for (int64_t h = 0; h < H; ++h) {
          const int64_t kh = h / (H / KV);
          std::vector<double> w(size_t(seq), 0.0);
          double max = -1e300, sum = 0;
          for (int64_t j = 0; j <= i; ++j) {
            if (!Sees(lp.span, i, j)) continue;
            double d = 0;
            for (int64_t c = 0; c < D; ++c) d += q[size_t((i * H + h) * D + c)] * k[size_t((j * KV + kh) * D + c)];
            w[size_t(j)] = d / std::sqrt(double(D));
            max = std::max(max, w[size_t(j)]);
          }
          for (int64_t j = 0; j <= i; ++j)
            if (Sees(lp.span, i, j)) sum += std::exp(w[size_t(j)] - max);
          for (int64_t j = 0; j <= i; ++j) {
            if (!Sees(lp.span, i, j)) continue;
            const double pr = std::exp(w[size_t(j)] - max) / sum;
            for (int64_t c = 0; c < D; ++c) att[size_t((i * H + h) * D + c)] += pr * v[size_t((j * KV + kh) * D + c)];
          }
        }
      const Vec o = Linear(att, P(p + "self_attn.o_proj.weight"), seq, H * D, C);
      for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
      const Vec mxn = Norm(x, P(p + "post_attention_layernorm.weight"), s.rms_eps, seq, C);
      const Vec gate = Linear(mxn, P(p + "mlp.gate_proj.weight"), seq, C, F);
      Vec up = Linear(mxn, P(p + "mlp.up_proj.weight"), seq, C, F);
      for (size_t i = 0; i < up.size(); ++i) up[i] *= gate[i] / (1 + std::exp(-gate[i]));
      const Vec down = Linear(up, P(p + "mlp.down_proj.weight"), seq, F, C);
      for (size_t i = 0; i < x.size(); ++i) x[i] += down[i];
    }
    const Vec xn = Norm(x, P("model.norm.weight"), s.rms_eps, seq, C);
    const Vec logits = Linear(xn, s.tied_embeddings ? P("model.embed_tokens.weight") : P("lm_head.weight"), seq, C, V);
    for (int64_t t = 0; t < seq; ++t) {
      const int32_t target = targets[size_t(b * seq + t)];
      if (target < 0) continue;
      double max = -1e300, sum = 0;
      for (int64_t j = 0; j < V; ++j) max = std::max(max, logits[size_t(t * V + j)]);
      for (int64_t j = 0; j < V; ++j) sum += std::exp(logits[size_t(t * V + j)] - max);
      total += max + std::log(sum) - logits[size_t(t * V + target)];
      ++counted;
    }
  }
  return total / double(counted);
}

AttentionPlan TinyPlan(const std::string& spec, int32_t n_layers) {
  ModelAttentionDefaults d;
  d.n_layers = n_layers;
  return ResolvePlan(spec, d);
}

void CheckModelGradient(const std::string& spec, bool tied) {
  ModelShape shape = PresetShape("tiny", 32, 16);
  shape.tied_embeddings = tied;
  TrainModel model(shape, TinyPlan(spec, shape.n_layers));
  model.InitRandom(7);
  // Larger weights than the init, so every path carries a visible gradient.
  std::mt19937_64 rng(11);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  for (float& p : model.params()) p += noise(rng);
  const int64_t batch = 2, seq = 10;
  std::vector<int32_t> tokens(size_t(batch * seq)), targets(tokens.size());
  std::uniform_int_distribution<int32_t> id(0, 31);
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = id(rng);
    targets[i] = i % 7 == 3 ? -1 : id(rng);
  }
  model.ZeroGrads();
  const double loss = model.Forward(tokens.data(), targets.data(), batch, seq);
  model.Backward(1.0f / float(model.counted_tokens()));

  Vec params(model.params().begin(), model.params().end());
  EXPECT_NEAR(loss, ReferenceLoss(model, params, tokens, targets, batch, seq), 1e-5);
  double worst = 0;
  for (const ParamTensor& t : model.tensors()) {
    // Differences on about 20 entries of each tensor, spread over it.
    const int64_t stride = std::max<int64_t>(1, t.numel / 20);
    std::vector<float> analytic;
    std::vector<double> numeric;
    for (int64_t i = 0; i < t.numel; i += stride) {
      analytic.push_back(model.grads()[size_t(t.offset + i)]);
      double& p = params[size_t(t.offset + i)];
      const double keep = p, h = 1e-5;
      p = keep + h;
      const double up = ReferenceLoss(model, params, tokens, targets, batch, seq);
      p = keep - h;
      const double down = ReferenceLoss(model, params, tokens, targets, batch, seq);
      p = keep;
      numeric.push_back((up - down) / (2 * h));
    }
    const double err = testing::RelativeError(analytic, numeric);
    worst = std::max(worst, err);
    EXPECT_LT(err, 1e-3) << t.name;
  }
  std::printf("  model grad check [%s%s]: worst tensor rel. error %.2e\n", spec.c_str(),
              tied ? ", tied" : "", worst);
}

TEST(ModelGrad, WindowSinksNopeTied) { CheckModelGradient("hybrid:1:1,window:4,sinks:1,nope:full", true); }
TEST(ModelGrad, FullUntied) { CheckModelGradient("full", false); }

TEST(ModelGrad, FirstNonFiniteNamesTheLayer) {
  const ModelShape shape = PresetShape("tiny", 32, 16);
  TrainModel model(shape, TinyPlan("full", shape.n_layers));
  model.InitRandom(1);
  const std::vector<int32_t> tokens = {1, 2, 3, 4}, targets = {2, 3, 4, 5};
  EXPECT_TRUE(std::isfinite(model.Forward(tokens.data(), targets.data(), 1, 4)));
  EXPECT_EQ(model.FirstNonFinite(), "");
  model.params()[size_t(model.tensor("model.layers.1.mlp.up_proj.weight").offset)] = NAN;
  EXPECT_FALSE(std::isfinite(model.Forward(tokens.data(), targets.data(), 1, 4)));
  EXPECT_EQ(model.FirstNonFinite(), "layer 1 mlp");
}

}  // namespace
}  // namespace swan
