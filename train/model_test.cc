// The whole model's gradient against central differences of a float64
// reference forward written here, on a tiny configuration under a window
// plan with sinks and NoPE on the full layers, and under routed plans
// (Switch Attention: straight-through gate and regularizer). Continual
// pretraining into a routed plan, and export round trips.
#include "train/model.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "model/config.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "attention/hedgehog.h"
#include "attention/linear_attention.h"
#include "model/test_files.h"
#include "train/grad_check.h"
#include "train/grow.h"
#include "train/hf_io.h"
#include "train/optimizer.h"

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

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// Routed layers in the reference. The hard gate has no derivative; the
// surrogate gate g = h + σ(logit) − σ(logit0), with logit0 (hence the hard
// gate h = 1[logit0 > 0]) frozen where the gradient is taken, has the value
// h there and the straight-through gradient σ'(logit). The regularizer's
// weights γ are frozen too (they carry no gradient).
struct RoutedFrozen {
  std::map<int32_t, Vec> logit0;  // layer -> [B*T]
  std::map<int32_t, Vec> gamma;   // layer -> [B*T]
};
// What a reference pass saw, to freeze from.
struct RoutedTrace {
  std::map<int32_t, Vec> logit;  // layer -> [B*T]
  std::map<int32_t, Vec> dist;   // layer -> [B*T] ‖o_full − o_window‖² over the H*D row
  Vec nll;                       // [B*T] cross-entropy, 0 without a target
};

// out [seq, H*D]: attention of one sequence, KV head kh under spans[kh].
Vec Attention(const Vec& q, const Vec& k, const Vec& v, const std::vector<Span>& spans, int64_t seq, int64_t H,
              int64_t KV, int64_t D, double scale) {
  Vec att(size_t(seq * H * D), 0.0);
  for (int64_t i = 0; i < seq; ++i)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t kh = h / (H / KV);
      const Span span = spans[size_t(kh)];
      std::vector<double> w(size_t(seq), 0.0);
      double max = -1e300, sum = 0;
      for (int64_t j = 0; j <= i; ++j) {
        if (!Sees(span, i, j)) continue;
        double d = 0;
        for (int64_t c = 0; c < D; ++c) d += q[size_t((i * H + h) * D + c)] * k[size_t((j * KV + kh) * D + c)];
        w[size_t(j)] = d * scale;
        max = std::max(max, w[size_t(j)]);
      }
      for (int64_t j = 0; j <= i; ++j)
        if (Sees(span, i, j)) sum += std::exp(w[size_t(j)] - max);
      for (int64_t j = 0; j <= i; ++j) {
        if (!Sees(span, i, j)) continue;
        const double pr = std::exp(w[size_t(j)] - max) / sum;
        for (int64_t c = 0; c < D; ++c) att[size_t((i * H + h) * D + c)] += pr * v[size_t((j * KV + kh) * D + c)];
      }
    }
  return att;
}

// Mean cross-entropy of one batch, every sequence from position 0. With
// `frozen`: routed layers use the surrogate gate, and the loss gains the
// regularizer Σ γ softplus(logit) per counted token. Without: hard gates
// and no regularizer. `trace` (may be null) records routing and NLL.
double ReferenceLoss(const TrainModel& m, const Vec& params, const std::vector<int32_t>& tokens,
                     const std::vector<int32_t>& targets, int64_t batch, int64_t seq,
                     const RoutedFrozen* frozen = nullptr, RoutedTrace* trace = nullptr) {
  const ModelConfig& s = m.config();
  const DecoderSpec& spec = m.spec();
  const int64_t C = s.hidden_size, F = s.intermediate_size, V = s.vocab_size, H = s.n_heads, KV = s.n_kv_heads;
  const int64_t D = s.head_dim;
  const double eps = s.rms_norm_eps;
  const double scale =
      spec.default_query_pre_attn_scalar > 0 ? 1 / std::sqrt(s.query_pre_attn_scalar) : 1 / std::sqrt(double(D));
  auto P = [&](const std::string& name) { return params.data() + m.tensor(name).offset; };
  // A norm by its weight w, applied as w or as 1 + w (Gemma).
  auto norm = [&](const Vec& x, const std::string& name, int64_t n, int64_t dim) {
    const double* w = P(name);
    Vec applied(w, w + dim);
    if (spec.unit_offset_norms)
      for (double& a : applied) a += 1;
    return Norm(x, applied.data(), eps, n, dim);
  };
  double total = 0, regularizer = 0;
  int64_t counted = 0;
  if (trace) trace->nll.assign(size_t(batch * seq), 0.0);
  for (int64_t b = 0; b < batch; ++b) {
    Vec x(size_t(seq * C));
    for (int64_t t = 0; t < seq; ++t)
      for (int64_t i = 0; i < C; ++i)
        x[size_t(t * C + i)] = P("model.embed_tokens.weight")[tokens[size_t(b * seq + t)] * C + i] *
                               (spec.scale_embeddings ? std::sqrt(double(C)) : 1.0);
    for (int32_t l = 0; l < s.n_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      const LayerPlan& lp = m.plan().layers[size_t(l)];
      const Rope rope(lp.rope, int32_t(D));
      const Vec xn = norm(x, p + "input_layernorm.weight", seq, C);
      Vec q = Linear(xn, P(p + "self_attn.q_proj.weight"), seq, C, H * D);
      Vec k = Linear(xn, P(p + "self_attn.k_proj.weight"), seq, C, KV * D);
      Vec v = Linear(xn, P(p + "self_attn.v_proj.weight"), seq, C, KV * D);
      if (spec.qkv_bias)  // Qwen2: each row plus the projection's bias
        for (const auto& [x, name] : {std::pair<Vec*, const char*>{&q, "q"}, {&k, "k"}, {&v, "v"}}) {
          const double* bias = P(p + "self_attn." + name + "_proj.bias");
          const size_t width = x->size() / size_t(seq);
          for (size_t i = 0; i < x->size(); ++i) (*x)[i] += bias[i % width];
        }
      if (spec.qk_norm) {  // Gemma 3: each head's vector normed
        q = norm(q, p + "self_attn.q_norm.weight", seq * H, D);
        k = norm(k, p + "self_attn.k_norm.weight", seq * KV, D);
      }
      Rotate(q, rope, lp.rope.enabled, seq, int32_t(H), int32_t(D));
      Rotate(k, rope, lp.rope.enabled, seq, int32_t(KV), int32_t(D));
      std::vector<Span> spans;  // [KV] each KV head's span (a routed layer's full branch here)
      for (int32_t h = 0; h < KV; ++h) spans.push_back(lp.kind == LayerKind::kRouted ? Span{} : lp.HeadSpan(h));
      Vec att = Attention(q, k, v, spans, seq, H, KV, D, scale);
      if (lp.kind == LayerKind::kLinear) {  // linear attention through the feature maps
        const int32_t Fm = LinearPhiDim(s) / 2;
        Vec phi_q(size_t(seq * H * 2 * Fm)), phi_k(size_t(seq * KV * 2 * Fm));
        HedgehogReference(phi_q.data(), q.data(), P(p + "self_attn.feature_map_q.weight"),
                          P(p + "self_attn.feature_map_q.bias"), seq, {int32_t(H), int32_t(D), Fm});
        HedgehogReference(phi_k.data(), k.data(), P(p + "self_attn.feature_map_k.weight"),
                          P(p + "self_attn.feature_map_k.bias"), seq, {int32_t(KV), int32_t(D), Fm});
        const LinearAttentionShape ls{int32_t(H), int32_t(KV), int32_t(D), 2 * Fm};
        if (lp.span.full())
          LinearAttendReference(att.data(), phi_q.data(), phi_k.data(), v.data(), seq, ls);
        else {
          Vec factor(static_cast<size_t>(H));  // [H] γ = σ(θ)
          for (int64_t h = 0; h < H; ++h) factor[size_t(h)] = Sigmoid(P(p + "self_attn.window_factor")[h]);
          LinearWindowReference(att.data(), q.data(), k.data(), v.data(), phi_q.data(), phi_k.data(), factor.data(),
                                seq, ls, lp.span.window);
        }
      }
      if (lp.kind == LayerKind::kRouted) {  // att holds the full branch
        const Vec window = Attention(q, k, v, std::vector<Span>(size_t(KV), lp.span), seq, H, KV, D, scale);
        const double* w = P(p + "self_attn.router.weight");
        const double bias = *P(p + "self_attn.router.bias");
        for (int64_t t = 0; t < seq; ++t) {
          const size_t token = size_t(b * seq + t);
          double logit = bias, dist = 0;
          for (int64_t i = 0; i < C; ++i) logit += xn[size_t(t * C + i)] * w[i];
          double g = logit > 0;
          if (frozen) {
            const double logit0 = frozen->logit0.at(l)[token];
            g = double(logit0 > 0) + Sigmoid(logit) - Sigmoid(logit0);
            if (targets[token] >= 0) regularizer += frozen->gamma.at(l)[token] * std::log1p(std::exp(logit));
          }
          for (int64_t c = 0; c < H * D; ++c) {
            double& o = att[size_t(t * H * D + c)];
            const double ow = window[size_t(t * H * D + c)];
            dist += (o - ow) * (o - ow);
            o = g * o + (1 - g) * ow;
          }
          if (trace) {
            trace->logit[l].resize(size_t(batch * seq));
            trace->dist[l].resize(size_t(batch * seq));
            trace->logit[l][token] = logit;
            trace->dist[l][token] = dist;
          }
        }
      }
      Vec o = Linear(att, P(p + "self_attn.o_proj.weight"), seq, H * D, C);
      if (spec.sandwich_norms) o = norm(o, p + "post_attention_layernorm.weight", seq, C);
      for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
      const Vec mxn =
          norm(x, p + (spec.sandwich_norms ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight"),
               seq, C);
      const Vec gate = Linear(mxn, P(p + "mlp.gate_proj.weight"), seq, C, F);
      Vec up = Linear(mxn, P(p + "mlp.up_proj.weight"), seq, C, F);
      for (size_t i = 0; i < up.size(); ++i) {
        const double g = gate[i];
        up[i] *= spec.activation == MlpActivation::kSilu
                     ? g / (1 + std::exp(-g))
                     : 0.5 * g * (1 + std::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g * g * g)));
      }
      Vec down = Linear(up, P(p + "mlp.down_proj.weight"), seq, F, C);
      if (spec.sandwich_norms) down = norm(down, p + "post_feedforward_layernorm.weight", seq, C);
      for (size_t i = 0; i < x.size(); ++i) x[i] += down[i];
    }
    const Vec xn = norm(x, "model.norm.weight", seq, C);
    const Vec logits =
        Linear(xn, s.tie_word_embeddings ? P("model.embed_tokens.weight") : P("lm_head.weight"), seq, C, V);
    for (int64_t t = 0; t < seq; ++t) {
      const int32_t target = targets[size_t(b * seq + t)];
      if (target < 0) continue;
      double max = -1e300, sum = 0;
      for (int64_t j = 0; j < V; ++j) max = std::max(max, logits[size_t(t * V + j)]);
      for (int64_t j = 0; j < V; ++j) sum += std::exp(logits[size_t(t * V + j)] - max);
      const double nll = max + std::log(sum) - logits[size_t(t * V + target)];
      if (trace) trace->nll[size_t(b * seq + t)] = nll;
      total += nll;
      ++counted;
    }
  }
  return (total + regularizer) / double(counted);
}

// γ_t = γ_base / (ε + NLL_t + α ‖o_full_t − o_window_t‖²) from a trace,
// written out (docs/design.md §4); 0 for tokens without a target.
RoutedFrozen Freeze(const RoutedTrace& trace, const std::vector<int32_t>& targets, const RouterRegularizer& r) {
  RoutedFrozen f;
  f.logit0 = trace.logit;
  for (const auto& [l, dist] : trace.dist) {
    Vec& gamma = f.gamma[l];
    gamma.assign(dist.size(), 0.0);
    for (size_t t = 0; t < dist.size(); ++t)
      if (targets[t] >= 0) gamma[t] = r.gamma_base / (r.eps + trace.nll[t] + r.alpha * dist[t]);
  }
  return f;
}

AttentionPlan TinyPlan(const std::string& spec, int32_t n_layers, int32_t n_kv_heads = 0) {
  ModelAttentionDefaults d;
  d.n_layers = n_layers;
  d.n_kv_heads = n_kv_heads;
  return ResolvePlan(spec, d);
}

// The tiny preset of a family; kv_heads > 0: that many KV heads, two query
// heads each (per-head plans). Gemma 3's logit scale is made 1/sqrt(12),
// not its head_dim's, so that the scale is seen.
ModelConfig TinyConfig(const std::string& architecture, bool tied, int32_t kv_heads = 0) {
  ModelConfig c = PresetConfig("tiny", 32, 16, architecture);
  c.tie_word_embeddings = tied;
  if (kv_heads > 0) {
    c.n_kv_heads = kv_heads;
    c.n_heads = 2 * kv_heads;
  }
  if (c.query_pre_attn_scalar > 0) c.query_pre_attn_scalar = 12;
  return c;
}

void CheckModelGradient(const std::string& spec, const ModelConfig& config) {
  TrainModel model(config, TinyPlan(spec, config.n_layers, config.n_kv_heads));
  model.InitRandom(7);
  // Larger weights than the init, so every path carries a visible gradient.
  std::mt19937_64 rng(11);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  for (float& p : model.params()) p += noise(rng);
  const bool routed = model.num_routed_layers() > 0;
  RouterRegularizer reg;
  reg.gamma_base = 0.5;  // large enough to show in the router's gradient
  model.set_router_regularizer(reg);
  for (const ParamTensor& t : model.tensors())  // bias 0: tokens on both branches
    if (t.name.find("router.bias") != std::string::npos) model.params()[size_t(t.offset)] = 0;
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
  RoutedTrace trace;
  EXPECT_NEAR(loss, ReferenceLoss(model, params, tokens, targets, batch, seq, nullptr, &trace), 1e-5);
  const RoutedFrozen frozen = Freeze(trace, targets, reg);
  if (routed) {
    // The float32 gates are the reference's, and both branches are used.
    int64_t full = 0, pairs = 0;
    for (const auto& [l, logits] : trace.logit)
      for (double x : logits) {
        ASSERT_GT(std::abs(x), 1e-4) << "a logit at the gate's edge; choose another seed";
        full += x > 0;
        ++pairs;
      }
    ASSERT_GT(full, 0);
    ASSERT_LT(full, pairs);
    EXPECT_NEAR(model.full_ratio(), double(full) / double(pairs), 1e-12);
    // The regularizer's value, per counted token.
    const double with_reg = ReferenceLoss(model, params, tokens, targets, batch, seq, &frozen);
    EXPECT_NEAR(loss + model.router_loss(), with_reg, 1e-5);
    EXPECT_GT(model.router_loss(), 1e-3);
  }
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
      const double up = ReferenceLoss(model, params, tokens, targets, batch, seq, &frozen);
      p = keep - h;
      const double down = ReferenceLoss(model, params, tokens, targets, batch, seq, &frozen);
      p = keep;
      numeric.push_back((up - down) / (2 * h));
    }
    const double err = testing::RelativeError(analytic, numeric);
    worst = std::max(worst, err);
    EXPECT_LT(err, 1e-3) << t.name;
  }
  std::printf("  model grad check [%s, %s%s]: worst tensor rel. error %.2e\n", config.architecture.c_str(),
              spec.c_str(), config.tie_word_embeddings ? ", tied" : "", worst);
}
void CheckModelGradient(const std::string& spec, bool tied, int32_t kv_heads = 0) {
  CheckModelGradient(spec, TinyConfig("LlamaForCausalLM", tied, kv_heads));
}

TEST(ModelGrad, WindowSinksNopeTied) { CheckModelGradient("hybrid:1:1,window:4,sinks:1,nope:full", true); }
TEST(ModelGrad, FullUntied) { CheckModelGradient("full", false); }
// Switch Attention: the straight-through gate and the regularizer through the whole model.
TEST(ModelGrad, RoutedSinksTied) { CheckModelGradient("routed:4,sinks:1", true); }
TEST(ModelGrad, RoutedAndFullNopeUntied) { CheckModelGradient("full,layer1:routed:3,nope:full", false); }
TEST(ModelGrad, LinearAndWindowUntied) { CheckModelGradient("swa:4,layer1:linear", false); }
TEST(ModelGrad, LinearGqaTied) { CheckModelGradient("linear", true, 1); }
TEST(ModelGrad, LinearWindowGqaUntied) { CheckModelGradient("linear:3,layer0:linear", false, 1); }
// Qwen2's q/k/v biases, under a window and a routed layer.
TEST(ModelGrad, Qwen2RoutedUntied) {
  CheckModelGradient("swa:4,layer1:routed:3", TinyConfig("Qwen2ForCausalLM", false));
}
// Qwen3's QK-norms (applied as w), under a window.
TEST(ModelGrad, Qwen3WindowTied) { CheckModelGradient("swa:4", TinyConfig("Qwen3ForCausalLM", true)); }
// Gemma 3: QK-norms, sandwich norms, 1 + w norms, embedding scale, GELU-tanh
// and its logit scale, under a hybrid with sinks, a routed plan and per-head.
TEST(ModelGrad, Gemma3HybridTied) {
  CheckModelGradient("hybrid:1:1,window:4,sinks:1,nope:full", TinyConfig("Gemma3ForCausalLM", true));
}
TEST(ModelGrad, Gemma3RoutedUntied) { CheckModelGradient("routed:4,sinks:1", TinyConfig("Gemma3ForCausalLM", false)); }
TEST(ModelGrad, Gemma3PerHeadTied) {
  CheckModelGradient("swa:3,layer0:heads:1,layer1:full", TinyConfig("Gemma3ForCausalLM", true, 2));
}
TEST(ModelGrad, PerHeadSinksTied) { CheckModelGradient("swa:3,sinks:1,layer0:heads:1,layer1:heads:0+2", true, 3); }

// Loss weights: 0 on a token is the same as not counting it, and a weight
// scales its token's share of the loss and of every gradient.
TEST(ModelWeights, ZeroWeightDropsATokenAndWeightsScaleItsShare) {
  const ModelConfig shape = PresetConfig("tiny", 32, 16);
  TrainModel model(shape, TinyPlan("hybrid:1:1,window:4", shape.n_layers));
  model.InitRandom(5);
  const int64_t batch = 2, seq = 8, n = batch * seq;
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int32_t> id(0, 31);
  const size_t count = static_cast<size_t>(n);
  std::vector<int32_t> tokens(count), targets(count), dropped(count);
  std::vector<float> weights(count);  // [B, T]
  for (int64_t i = 0; i < n; ++i) {
    tokens[size_t(i)] = id(rng);
    targets[size_t(i)] = id(rng);
    weights[size_t(i)] = i % 3 == 0 ? 0.0f : 1.0f;
    dropped[size_t(i)] = i % 3 == 0 ? -1 : targets[size_t(i)];
  }
  auto run = [&](const std::vector<int32_t>& tgt, const float* w, double* loss) {
    model.ZeroGrads();
    *loss = model.Forward(tokens.data(), tgt.data(), batch, seq, w);
    model.Backward(float(1.0 / model.counted_weight()));
    return std::vector<float>(model.grads().begin(), model.grads().end());
  };
  double weighted_loss, dropped_loss, doubled_loss;
  const auto g_weighted = run(targets, weights.data(), &weighted_loss);
  EXPECT_EQ(model.counted_tokens(), n);
  const auto g_dropped = run(dropped, nullptr, &dropped_loss);
  EXPECT_NEAR(weighted_loss, dropped_loss, 1e-6);
  EXPECT_LT(testing::RelativeError(g_weighted, std::vector<double>(g_dropped.begin(), g_dropped.end())), 1e-6);
  // Twice the weight everywhere: the same normalized loss and gradient.
  for (float& w : weights) w *= 2;
  const auto g_doubled = run(targets, weights.data(), &doubled_loss);
  EXPECT_NEAR(doubled_loss, weighted_loss, 1e-6);
  EXPECT_LT(testing::RelativeError(g_doubled, std::vector<double>(g_weighted.begin(), g_weighted.end())), 1e-6);
}

TEST(ModelGrad, FirstNonFiniteNamesTheLayer) {
  const ModelConfig shape = PresetConfig("tiny", 32, 16);
  TrainModel model(shape, TinyPlan("full", shape.n_layers));
  model.InitRandom(1);
  const std::vector<int32_t> tokens = {1, 2, 3, 4}, targets = {2, 3, 4, 5};
  EXPECT_TRUE(std::isfinite(model.Forward(tokens.data(), targets.data(), 1, 4)));
  EXPECT_EQ(model.FirstNonFinite(), "");
  model.params()[size_t(model.tensor("model.layers.1.mlp.up_proj.weight").offset)] = NAN;
  EXPECT_FALSE(std::isfinite(model.Forward(tokens.data(), targets.data(), 1, 4)));
  EXPECT_EQ(model.FirstNonFinite(), "layer 1 mlp");
}

// bf16 products (--matmul bf16): the loss and every gradient follow the
// float32 model to bf16 precision, and the bf16 copy of the weights follows
// changes made through params().
TEST(ModelBF16, FollowsFloat32AndParameterChanges) {
  const ModelConfig shape = PresetConfig("tiny", 32, 16);
  TrainModel model(shape, TinyPlan("hybrid:1:1,window:4,sinks:1", shape.n_layers));
  model.InitRandom(5);
  std::mt19937_64 rng(6);
  std::normal_distribution<float> noise(0.0f, 0.2f);
  for (float& p : model.params()) p += noise(rng);
  const int64_t batch = 2, seq = 12;
  std::vector<int32_t> tokens(size_t(batch * seq)), targets(tokens.size());  // [B, T]
  std::uniform_int_distribution<int32_t> id(0, 31);
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = id(rng);
    targets[i] = id(rng);
  }
  auto run = [&](MatmulPrecision p) {
    model.set_matmul(p);
    model.ZeroGrads();
    const double loss = model.Forward(tokens.data(), targets.data(), batch, seq);
    model.Backward(1.0f / float(model.counted_tokens()));
    return loss;
  };
  const double loss32 = run(MatmulPrecision::kF32);
  const std::vector<double> grads32(model.grads().begin(), model.grads().end());
  const double loss16 = run(MatmulPrecision::kBF16);
  EXPECT_NE(loss16, loss32);  // the products did run in bf16
  EXPECT_NEAR(loss16, loss32, 1e-2 * loss32);
  for (const ParamTensor& t : model.tensors()) {
    const auto first = size_t(t.offset), last = size_t(t.offset + t.numel);
    const std::vector<float> g16(model.grads().begin() + first, model.grads().begin() + last);
    const std::vector<double> g32(grads32.begin() + first, grads32.begin() + last);
    EXPECT_LT(testing::RelativeError(g16, g32), 5e-2) << t.name;
  }
  // A change through params() reaches the next bf16 forward.
  for (float& p : model.params()) p *= 0.5f;
  const double changed16 = run(MatmulPrecision::kBF16);
  const double changed32 = run(MatmulPrecision::kF32);
  EXPECT_GT(std::abs(changed32 - loss32), 10 * std::abs(changed16 - changed32));
  EXPECT_NEAR(changed16, changed32, 1e-2 * changed32);
}

std::string TempDir(const std::string& name) { return test::TempDir("model_" + name).string(); }

// Continual pretraining: a full-attention model's weights under a routed
// plan, new routers. Every gate starts at 1, so the model is the full one:
// same loss, same logits, and the same gradient for every shared tensor
// (the window branch gets none, the router's weight 0 passes none back).
// A tiny full-attention model with visible weights, exported to `dir` (the
// start of continual pretraining under another plan).
TrainModel ExportedFullModel(const std::string& dir, std::mt19937_64& rng) {
  const ModelConfig shape = PresetConfig("tiny", 32, 16);
  TrainModel full(shape, TinyPlan("full", shape.n_layers));
  full.InitRandom(3);
  std::normal_distribution<float> noise(0.0f, 0.2f);
  for (float& p : full.params()) p += noise(rng);
  ExportHfDirectory(dir, full, ExportOptions{});
  return full;
}

TEST(RoutedCpt, NewRoutersStartAsTheFullModel) {
  std::mt19937_64 rng(4);
  const std::string dir = TempDir("cpt");
  TrainModel full = ExportedFullModel(dir, rng);
  const ModelConfig shape = full.config();

  TrainModel routed(shape, TinyPlan("routed:4,sinks:1", shape.n_layers));
  EXPECT_EQ(LoadHfWeights(routed, dir), 2);
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".self_attn.router.";
    const ParamTensor& w = routed.tensor(p + "weight");
    EXPECT_EQ(w.shape, (std::vector<int64_t>{1, shape.hidden_size}));
    EXPECT_FALSE(w.decay);
    for (int64_t i = 0; i < w.numel; ++i) EXPECT_EQ(routed.params()[size_t(w.offset + i)], 0.0f);
    EXPECT_EQ(routed.params()[size_t(routed.tensor(p + "bias").offset)], 2.0f);
  }
  const int64_t batch = 2, seq = 12;
  std::vector<int32_t> tokens(size_t(batch * seq)), targets(tokens.size());
  std::uniform_int_distribution<int32_t> id(0, 31);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = id(rng), targets[i] = id(rng);
  full.ZeroGrads();
  routed.ZeroGrads();
  const double full_loss = full.Forward(tokens.data(), targets.data(), batch, seq);
  const double routed_loss = routed.Forward(tokens.data(), targets.data(), batch, seq);
  EXPECT_NEAR(routed_loss, full_loss, 1e-5);
  EXPECT_EQ(routed.full_ratio(), 1.0);
  EXPECT_EQ(full.full_ratio(), -1.0);
  EXPECT_GT(routed.router_loss(), 0.0);
  double worst = 0;
  for (size_t i = 0; i < full.logits().size(); ++i)
    worst = std::max(worst, double(std::abs(full.logits()[i] - routed.logits()[i])));
  EXPECT_LT(worst, 1e-5);
  full.Backward(1.0f / float(batch * seq));
  routed.Backward(1.0f / float(batch * seq));
  for (const ParamTensor& t : full.tensors()) {
    const ParamTensor& r = routed.tensor(t.name);
    const std::vector<float> a(full.grads().begin() + t.offset, full.grads().begin() + t.offset + t.numel);
    const Vec b(routed.grads().begin() + r.offset, routed.grads().begin() + r.offset + r.numel);
    EXPECT_LT(testing::RelativeError(a, b), 1e-5) << t.name;
  }
  // The routers learn from the start: the straight-through gradient and the regularizer.
  const ParamTensor& bias = routed.tensor("model.layers.1.self_attn.router.bias");
  EXPECT_NE(routed.grads()[size_t(bias.offset)], 0.0f);
}

TEST(Grow, LayerSourcesKeepTheFirstAndLastLayers) {
  EXPECT_EQ(GrownLayerSources(2, 4), (std::vector<int32_t>{0, -1, -1, 1}));
  EXPECT_EQ(GrownLayerSources(2, 3), (std::vector<int32_t>{0, -1, 1}));
  EXPECT_EQ(GrownLayerSources(3, 8), (std::vector<int32_t>{0, -1, -1, -1, 1, -1, -1, 2}));
  EXPECT_EQ(GrownLayerSources(4, 8), (std::vector<int32_t>{0, -1, 1, -1, -1, 2, -1, 3}));
  EXPECT_EQ(GrownLayerSources(1, 3), (std::vector<int32_t>{0, -1, -1}));
  EXPECT_THROW(GrownLayerSources(2, 2), std::invalid_argument);
  EXPECT_THROW(GrownLayerSources(4, 3), std::invalid_argument);
}

// A 2-layer model grown to 4: the new layers add nothing until they learn,
// so the loss and logits are the small model's, and their outputs get
// gradients from the first step.
TEST(Grow, NewLayersStartAsTheIdentityAndLearn) {
  std::mt19937_64 rng(6);
  const std::string dir = TempDir("grow");
  TrainModel small = ExportedFullModel(dir, rng);
  ModelConfig shape = small.config();
  ASSERT_EQ(shape.n_layers, 2);
  shape.n_layers = 4;
  TrainModel grown(shape, TinyPlan("full", shape.n_layers));
  grown.InitRandom(9);
  const std::vector<int32_t> sources = GrownLayerSources(2, 4);
  EXPECT_EQ(LoadHfWeights(grown, dir, nullptr, sources), 0);
  auto values = [](const TrainModel& m, const std::string& name, const std::vector<float>& of) {
    const ParamTensor& t = m.tensor(name);
    return std::vector<float>(of.begin() + t.offset, of.begin() + t.offset + t.numel);
  };
  // Copied layers carry their source's weights; new ones keep random inputs.
  EXPECT_EQ(values(grown, "model.layers.3.mlp.up_proj.weight", grown.params()),
            values(small, "model.layers.1.mlp.up_proj.weight", small.params()));
  const std::vector<float> new_q = values(grown, "model.layers.1.self_attn.q_proj.weight", grown.params());
  EXPECT_GT(*std::max_element(new_q.begin(), new_q.end()), 0.0f);

  const int64_t batch = 2, seq = 12;
  std::vector<int32_t> tokens(size_t(batch * seq)), targets(tokens.size());
  std::uniform_int_distribution<int32_t> id(0, 31);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = id(rng), targets[i] = id(rng);
  small.ZeroGrads();
  grown.ZeroGrads();
  EXPECT_NEAR(grown.Forward(tokens.data(), targets.data(), batch, seq),
              small.Forward(tokens.data(), targets.data(), batch, seq), 1e-6);
  double worst = 0;
  for (size_t i = 0; i < small.logits().size(); ++i)
    worst = std::max(worst, double(std::abs(small.logits()[i] - grown.logits()[i])));
  EXPECT_LT(worst, 1e-6);
  grown.Backward(1.0f / float(batch * seq));
  for (const char* name : {"model.layers.1.self_attn.o_proj.weight", "model.layers.2.mlp.down_proj.weight"}) {
    const std::vector<float> g = values(grown, name, grown.grads());
    double norm = 0;
    for (float x : g) norm += double(x) * x;
    EXPECT_GT(norm, 0.0) << name;
  }
  // A source that does not fit the model is refused.
  ModelConfig wider_shape = PresetConfig("tiny", 48, 16);  // another vocabulary
  wider_shape.n_layers = 4;
  TrainModel wider(wider_shape, TinyPlan("full", 4));
  EXPECT_THROW(LoadHfWeights(wider, dir, nullptr, sources), std::runtime_error);
}

// Linearizing: a softmax model's layers become linear with new feature
// maps (the hybrid's layer a window factor too); under attention transfer the
// stream stays the full softmax model's (the hybrid's teacher is full
// attention, not its window), the loss is the layers' distance to it, and
// only the feature maps and window factors learn.
TEST(LinearCpt, AttentionTransferTrainsTheFeatureMapsOnly) {
  std::mt19937_64 rng(4);
  const std::string dir = TempDir("linearize");
  TrainModel full = ExportedFullModel(dir, rng);
  const ModelConfig shape = full.config();

  TrainModel linear(shape, TinyPlan("linear,layer1:linear:4", shape.n_layers));
  int32_t new_maps = -1;
  EXPECT_EQ(LoadHfWeights(linear, dir, &new_maps), 0);
  EXPECT_EQ(new_maps, 2);
  EXPECT_THROW(full.set_attention_transfer(true), std::invalid_argument);
  linear.set_attention_transfer(true);
  const int64_t batch = 2, seq = 12;
  std::vector<int32_t> tokens(size_t(batch * seq)), targets(tokens.size());
  std::uniform_int_distribution<int32_t> id(0, 31);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = id(rng), targets[i] = id(rng);
  full.Forward(tokens.data(), targets.data(), batch, seq);
  const double transfer = linear.Forward(tokens.data(), targets.data(), batch, seq);
  EXPECT_GT(transfer, 0.0);
  for (size_t i = 0; i < full.logits().size(); ++i)  // the softmax model's stream
    ASSERT_NEAR(linear.logits()[i], full.logits()[i], 1e-5);
  linear.ZeroGrads();
  linear.Backward(1.0f / float(linear.counted_weight()));
  for (const ParamTensor& t : linear.tensors()) {
    const bool map =
        t.name.find(".feature_map_") != std::string::npos || t.name.find(".window_factor") != std::string::npos;
    EXPECT_EQ(t.frozen, !map) << t.name;
    double norm = 0;
    for (int64_t i = 0; i < t.numel; ++i) norm += std::abs(linear.grads()[size_t(t.offset + i)]);
    if (map)
      EXPECT_GT(norm, 0.0) << t.name;
    else
      EXPECT_EQ(norm, 0.0) << t.name;
  }
  // The feature maps' gradient against differences of the float32 forward.
  std::vector<float> analytic;
  std::vector<double> numeric;
  for (const ParamTensor& t : linear.tensors()) {
    if (t.frozen) continue;
    for (int64_t i = 0; i < t.numel; i += std::max<int64_t>(1, t.numel / 6)) {
      analytic.push_back(linear.grads()[size_t(t.offset + i)]);
      const float keep = linear.params()[size_t(t.offset + i)];
      const float h = 1e-2f;
      linear.params()[size_t(t.offset + i)] = keep + h;
      const double up = linear.Forward(tokens.data(), targets.data(), batch, seq);
      linear.params()[size_t(t.offset + i)] = keep - h;
      const double down = linear.Forward(tokens.data(), targets.data(), batch, seq);
      linear.params()[size_t(t.offset + i)] = keep;
      numeric.push_back((up - down) / (2.0 * h));
    }
  }
  const double err = testing::RelativeError(analytic, numeric);
  std::printf("  attention transfer: loss %.4g, feature-map gradient rel. error %.2e\n", transfer, err);
  EXPECT_LT(err, 2e-2);
  // AdamW moves the feature maps and nothing else.
  linear.Forward(tokens.data(), targets.data(), batch, seq);
  linear.ZeroGrads();
  linear.Backward(1.0f / float(linear.counted_weight()));
  const std::vector<float> before = linear.params();
  AdamW adam(AdamWOptions{}, linear.num_params());
  adam.Step(linear, 1e-2);
  for (const ParamTensor& t : linear.tensors()) {
    bool moved = false;
    for (int64_t i = 0; i < t.numel; ++i)
      moved |= linear.params()[size_t(t.offset + i)] != before[size_t(t.offset + i)];
    EXPECT_EQ(moved, !t.frozen) << t.name;
  }
  // The export names the linear layers and the feature dimension; it loads back.
  const std::string out = TempDir("linearized");
  ExportHfDirectory(out, linear, ExportOptions{});
  const ModelConfig c = LoadModelConfig(out);
  EXPECT_EQ(c.attention_plan, "full,layer0:linear,layer1:linear:4");
  EXPECT_EQ(c.linear_feature_dim, shape.head_dim / 2);
  TrainModel back(c, TinyPlan(c.attention_plan, shape.n_layers));
  EXPECT_EQ(LoadHfWeights(back, out, &new_maps), 0);
  EXPECT_EQ(new_maps, 0);
  EXPECT_EQ(back.params(), linear.params());
}

// Export writes the routers and the plan; loading the directory back gives
// the same plan and the same parameters, routers included.
TEST(RoutedCpt, ExportKeepsRoutersAndThePlan) {
  const ModelConfig shape = PresetConfig("tiny", 32, 16);
  const AttentionPlan plan = TinyPlan("hybrid:1:1,window:4,layer1:routed:3,sinks:1", shape.n_layers);
  TrainModel model(shape, plan);
  model.InitRandom(5);
  std::mt19937_64 rng(6);
  std::normal_distribution<float> noise(0.0f, 0.5f);
  const ParamTensor& w = model.tensor("model.layers.1.self_attn.router.weight");
  for (int64_t i = 0; i < w.numel + 1; ++i) model.params()[size_t(w.offset + i)] = noise(rng);  // and the bias
  const std::string dir = TempDir("export");
  ExportHfDirectory(dir, model, ExportOptions{});

  const ModelConfig config = LoadModelConfig(dir);
  EXPECT_EQ(config.attention_plan, CanonicalPlanSpec(plan));
  EXPECT_NE(config.attention_plan.find("layer1:routed:3"), std::string::npos) << config.attention_plan;
  const AttentionPlan again = ResolvePlan(config.attention_plan, AttentionDefaultsFor(config));
  ASSERT_EQ(again.layers.size(), plan.layers.size());
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    EXPECT_EQ(again.layers[i].kind, plan.layers[i].kind) << i;
    EXPECT_EQ(again.layers[i].span, plan.layers[i].span) << i;
  }
  EXPECT_EQ(plan.layers[1].span, (Span{3, 1}));  // sinks reach the routed window branch
  std::ifstream in(dir + "/attention_plan.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["layers"][0]["kind"], "window");
  EXPECT_EQ(j["layers"][1]["kind"], "routed");
  EXPECT_EQ(j["layers"][1]["window"], 3);

  const TensorStore store = TensorStore::OpenDirectory(dir);
  EXPECT_TRUE(store.Has("model.layers.1.self_attn.router.weight"));
  EXPECT_TRUE(store.Has("model.layers.1.self_attn.router.bias"));
  EXPECT_FALSE(store.Has("model.layers.0.self_attn.router.weight"));
  TrainModel back(config, again);
  EXPECT_EQ(LoadHfWeights(back, dir), 0);
  EXPECT_EQ(back.params(), model.params());
}

}  // namespace
TEST(PerHeadExport, ThePlanRoundTripsThroughConfig) {
  ModelConfig shape = PresetConfig("tiny", 32, 16);
  shape.n_heads = 4;
  shape.n_kv_heads = 4;
  const AttentionPlan plan = TinyPlan("full,window:5,sinks:2,layer1:heads:3+1", shape.n_layers, 4);
  TrainModel model(shape, plan);
  model.InitRandom(5);
  const std::string dir = TempDir("export_per_head");
  ExportHfDirectory(dir, model, ExportOptions{});
  const ModelConfig config = LoadModelConfig(dir);
  EXPECT_NE(config.attention_plan.find("layer1:heads:1+3:5"), std::string::npos) << config.attention_plan;
  const AttentionPlan again = ResolvePlan(config.attention_plan, AttentionDefaultsFor(config));
  ASSERT_EQ(again.layers.size(), 2u);
  EXPECT_EQ(again.layers[0].kind, LayerKind::kFull);
  EXPECT_EQ(again.layers[1].kind, LayerKind::kPerHead);
  EXPECT_EQ(again.layers[1].full_heads, (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(again.layers[1].span, (Span{5, 2}));
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(dir + "/attention_plan.json"));
  EXPECT_EQ(j["layers"][1]["kind"], "per-head");
  EXPECT_EQ(j["layers"][1]["full_heads"], nlohmann::json::array({1, 3}));
}

}  // namespace swan
