#include "model/llama.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <vector>

#include "attention/linear_attention.h"
#include "model/blocks.h"
#include "model/step_decoder.h"
#include "model/weight_source.h"
#include "ops/elementwise.h"
#include "ops/linear.h"

namespace swan {
namespace {

struct LlamaLayer {
  std::vector<float> input_norm;  // [hidden]
  AttentionWeights attn;          // q, k, v, o projections
  std::vector<float> post_norm;   // [hidden]
  MlpWeights mlp;                 // gate, up, down projections
  // Switch Attention router; present when the checkpoint has one (models
  // trained with routed layers), used when the plan routes this layer.
  std::optional<RouterWeights> router;
};

class Llama : public StepDecoder {
 public:
  // `origin` names the checkpoint in messages.
  Llama(const WeightSource& weights, const ModelConfig& config, const std::string& origin,
        const LlamaVariant& variant);

  const ModelConfig& config() const override { return config_; }
  size_t WeightBytes() const override;

 private:
  // Throws when the session's plan does not fit or routes without routers.
  void CheckSession(const Session& session) const override;
  // One pass over the steps' tokens, each step at most its cache's max_chunk.
  void ForwardSteps(float* logits, const std::vector<SequenceStep>& steps) const override;

  ModelConfig config_;
  std::string origin_;          // the checkpoint directory, for messages
  BlockSizes sizes_;
  LinearWeight embed_;          // [vocab, hidden] (in place in the checkpoint when its type is kept)
  std::vector<LlamaLayer> layers_;
  std::vector<float> norm_;     // [hidden]
  LinearWeight lm_head_;        // [vocab, hidden] (the embedding table when tied)
};

void CheckSupported(const ModelConfig& c, const std::string& dir, const LlamaVariant& variant) {
  const std::string where = dir + "/config.json: ";
  if (c.hidden_act != "silu")
    throw std::runtime_error(where + "hidden_act '" + c.hidden_act + "' is not supported (silu)");
  if (c.attention_bias && !variant.qkv_bias)
    throw std::runtime_error(where + "attention_bias = true is not supported");
  if (c.mlp_bias) throw std::runtime_error(where + "mlp_bias = true is not supported");
  if (c.head_dim % 2 != 0) throw std::runtime_error(where + "head_dim must be even for RoPE");
}

Llama::Llama(const WeightSource& w, const ModelConfig& config, const std::string& origin,
             const LlamaVariant& variant)
    : config_(config), origin_(origin) {
  CheckSupported(config, origin, variant);
  sizes_ = BlockSizesOf(config);
  const int64_t hidden = config.hidden_size, inter = config.intermediate_size;
  const int64_t q_dim = int64_t(config.n_heads) * config.head_dim;
  const int64_t kv_dim = int64_t(config.n_kv_heads) * config.head_dim;

  embed_ = w.Linear("model.embed_tokens.weight", config.vocab_size, hidden);
  norm_ = w.F32("model.norm.weight", {hidden});
  lm_head_ = HeadWeight(w, config.tie_word_embeddings, embed_, config.vocab_size, hidden);
  layers_.resize(size_t(config.n_layers));
  for (int32_t i = 0; i < config.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LlamaLayer& l = layers_[size_t(i)];
    l.input_norm = w.F32(p + "input_layernorm.weight", {hidden});
    l.attn.q = w.Linear(p + "self_attn.q_proj.weight", q_dim, hidden);
    l.attn.k = w.Linear(p + "self_attn.k_proj.weight", kv_dim, hidden);
    l.attn.v = w.Linear(p + "self_attn.v_proj.weight", kv_dim, hidden);
    l.attn.o = w.Linear(p + "self_attn.o_proj.weight", hidden, q_dim);
    if (variant.qkv_bias) {
      l.attn.q_bias = w.F32(p + "self_attn.q_proj.bias", {q_dim});
      l.attn.k_bias = w.F32(p + "self_attn.k_proj.bias", {kv_dim});
      l.attn.v_bias = w.F32(p + "self_attn.v_proj.bias", {kv_dim});
    }
    l.post_norm = w.F32(p + "post_attention_layernorm.weight", {hidden});
    l.mlp.gate = w.Linear(p + "mlp.gate_proj.weight", inter, hidden);
    l.mlp.up = w.Linear(p + "mlp.up_proj.weight", inter, hidden);
    l.mlp.down = w.Linear(p + "mlp.down_proj.weight", hidden, inter);
    if (w.Has(p + "self_attn.feature_map_q.weight")) {  // a linear layer (swan train --attn linear)
      const int64_t D = config.head_dim, F = LinearPhiDim(config) / 2;
      l.attn.feature_dim = int32_t(F);
      l.attn.fq_w = w.F32(p + "self_attn.feature_map_q.weight", {config.n_heads, D, F});
      l.attn.fq_b = w.F32(p + "self_attn.feature_map_q.bias", {config.n_heads, F});
      l.attn.fk_w = w.F32(p + "self_attn.feature_map_k.weight", {config.n_kv_heads, D, F});
      l.attn.fk_b = w.F32(p + "self_attn.feature_map_k.bias", {config.n_kv_heads, F});
      if (w.Has(p + "self_attn.window_factor")) {
        l.attn.window_factor = w.F32(p + "self_attn.window_factor", {config.n_heads});
        for (float& f : l.attn.window_factor) f = WindowFactor(f);
      }
    }
    if (w.Has(p + "self_attn.router.weight")) {
      RouterWeights r;
      r.weight = w.F32(p + "self_attn.router.weight", {1, hidden});
      r.bias = w.F32(p + "self_attn.router.bias", {1})[0];
      l.router = std::move(r);
    }
  }
}

size_t Llama::WeightBytes() const {
  size_t bytes = lm_head_.Bytes() + norm_.size() * sizeof(float);
  for (const LlamaLayer& l : layers_)
    bytes += l.attn.q.Bytes() + l.attn.k.Bytes() + l.attn.v.Bytes() + l.attn.o.Bytes() +
             l.mlp.gate.Bytes() + l.mlp.up.Bytes() + l.mlp.down.Bytes() +
             (l.input_norm.size() + l.post_norm.size() + l.attn.q_bias.size() +
              l.attn.k_bias.size() + l.attn.v_bias.size() +
              (l.router ? l.router->weight.size() + 1 : 0) + l.attn.fq_w.size() + l.attn.fq_b.size() +
              l.attn.fk_w.size() + l.attn.fk_b.size()) * sizeof(float);
  return bytes;
}

}  // namespace

ModelAttentionDefaults LlamaAttentionDefaults(const ModelConfig& config) {
  ModelAttentionDefaults d;
  d.n_layers = config.n_layers;
  d.rope = config.rope;
  const Span window = SpanFromHfSlidingWindow(config.sliding_window);
  d.spans.assign(size_t(config.n_layers), window);
  // Newer configs name each layer's kind.
  for (size_t i = 0; i < config.layer_types.size(); ++i) {
    const std::string& t = config.layer_types[i];
    if (t == "full_attention") {
      d.spans[i] = Span{};
    } else if (t != "sliding_attention") {
      throw std::runtime_error("config.json: layer_types[" + std::to_string(i) + "] = '" + t +
                               "' (expected full_attention or sliding_attention)");
    }
  }
  if (window.window > 0) d.default_window = window.window;
  return d;
}

namespace {

void Llama::CheckSession(const Session& session) const {
  for (size_t i = 0; i < session.plan.layers.size(); ++i) {
    const LayerPlan& l = session.plan.layers[i];
    if (l.kind != LayerKind::kLinear) continue;
    if (layers_[i].attn.feature_dim == 0)
      throw std::runtime_error(origin_ + " has no feature maps for layer " + std::to_string(i) +
                               " (model.layers." + std::to_string(i) +
                               ".self_attn.feature_map_q.weight), which the plan '" + session.plan.spec +
                               "' makes linear: linearize it with `swan train --init " + origin_ +
                               " --attn linear --attention-transfer ...`");
    if (!l.span.full() && layers_[i].attn.window_factor.empty())
      throw std::runtime_error(origin_ + " has no window factors for layer " + std::to_string(i) +
                               " (model.layers." + std::to_string(i) + ".self_attn.window_factor), which the plan '" +
                               session.plan.spec + "' makes linear + window: train it under that plan with `swan "
                               "train --init " + origin_ + " --attn " + session.plan.spec + " ...`");
  }
  if (session.plan.HasRoutedLayers()) {
    std::vector<const RouterWeights*> routers;  // [n_layers]
    for (const LlamaLayer& l : layers_) routers.push_back(l.router ? &*l.router : nullptr);
    RequireRouters(session, routers, origin_);
  }
}

void Llama::ForwardSteps(float* logits, const std::vector<SequenceStep>& steps) const {
  const StepRows rows = ConcatSteps(steps);
  const int64_t n = rows.n(), hidden = sizes_.hidden;
  const float eps = float(config_.rms_norm_eps);
  std::vector<float> x(size_t(n * hidden));   // [n, hidden] residual stream
  std::vector<float> xn(size_t(n * hidden));  // [n, hidden] normed
  Embed(x.data(), embed_.view(), rows.tokens.data(), n);

  std::vector<LayerRoutes> routes;  // [n_steps] this layer's, for routed layers
  for (int32_t i = 0; i < config_.n_layers; ++i) {
    const LlamaLayer& l = layers_[size_t(i)];
    const std::vector<AttentionRows> attn =
        StepAttention(steps, rows, i, l.attn, l.router ? &*l.router : nullptr, &routes);
    RmsNorm(xn.data(), x.data(), l.input_norm.data(), eps, n, hidden);
    AttentionBlockBatch(x.data(), xn.data(), n, attn, sizes_);
    RmsNorm(xn.data(), x.data(), l.post_norm.data(), eps, n, hidden);
    SwiGluBlock(x.data(), xn.data(), n, l.mlp, sizes_);
  }
  // Only the rows whose logits are wanted go through the final norm and head.
  OutputLogits(logits, x.data(), rows.logit_rows, norm_.data(), eps, lm_head_, hidden);
}

}  // namespace

std::unique_ptr<LanguageModel> BuildLlama(const WeightSource& weights, const ModelConfig& config,
                                          const std::string& origin, const LlamaVariant& variant) {
  return std::make_unique<Llama>(weights, config, origin, variant);
}

}  // namespace swan
