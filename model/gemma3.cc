#include "model/gemma3.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "model/blocks.h"
#include "model/step_decoder.h"
#include "model/weight_source.h"
#include "ops/elementwise.h"
#include "ops/linear.h"

namespace swan {
namespace {

// HF Gemma3TextConfig's defaults for fields a config may omit.
constexpr int32_t kDefaultPattern = 6;
constexpr int32_t kDefaultSlidingWindow = 4096;
constexpr double kDefaultLocalBase = 10000.0;
constexpr double kDefaultQueryPreAttnScalar = 256.0;

// Whether layer `i` is a local (sliding window) layer.
bool IsLocalLayer(const ModelConfig& c, int32_t i) {
  if (!c.layer_types.empty()) {
    const std::string& t = c.layer_types[size_t(i)];
    if (t != "sliding_attention" && t != "full_attention")
      throw std::runtime_error("config.json: layer_types[" + std::to_string(i) + "] = '" + t +
                               "' (expected full_attention or sliding_attention)");
    return t == "sliding_attention";
  }
  const int32_t pattern = c.sliding_window_pattern > 0 ? c.sliding_window_pattern : kDefaultPattern;
  return (i + 1) % pattern != 0;
}

struct Gemma3Layer {
  std::vector<float> input_norm;      // [hidden] 1 + weight
  AttentionWeights attn;              // q, k, v, o projections; q_norm, k_norm
  std::vector<float> post_attn_norm;  // [hidden] 1 + weight
  std::vector<float> pre_ff_norm;     // [hidden] 1 + weight
  MlpWeights mlp;                     // gate, up, down projections
  std::vector<float> post_ff_norm;    // [hidden] 1 + weight
};

class Gemma3 : public StepDecoder {
 public:
  // `origin` names the checkpoint in messages.
  Gemma3(const WeightSource& weights, const ModelConfig& config, const std::string& origin);

  const ModelConfig& config() const override { return config_; }
  size_t WeightBytes() const override;

 private:
  // Throws when the session's plan does not fit this model.
  void CheckSession(const Session& session) const override;
  // One pass over the steps' tokens, each step at most its cache's max_chunk.
  void ForwardSteps(float* logits, const std::vector<SequenceStep>& steps) const override;

  ModelConfig config_;
  BlockSizes sizes_;
  float embed_scale_ = 1.0f;   // sqrt(hidden_size)
  float attention_scale_ = 0;  // query_pre_attn_scalar^-0.5
  LinearWeight embed_;         // [vocab, hidden] (in place in the checkpoint when its type is kept)
  std::vector<Gemma3Layer> layers_;
  std::vector<float> norm_;  // [hidden] 1 + weight
  LinearWeight lm_head_;     // [vocab, hidden] (the embedding table when tied)
};

void CheckSupported(const ModelConfig& c, const std::string& dir) {
  const std::string where = dir + "/config.json: ";
  if (c.hidden_act != "gelu_pytorch_tanh")
    throw std::runtime_error(where + "hidden_activation '" + c.hidden_act +
                             "' is not supported (gelu_pytorch_tanh)");
  if (c.attention_bias) throw std::runtime_error(where + "attention_bias = true is not supported");
  if (c.attn_logit_softcapping != 0 || c.final_logit_softcapping != 0)
    throw std::runtime_error(where + "logit soft-capping is not supported (Gemma 3 has none)");
  if (c.head_dim % 2 != 0) throw std::runtime_error(where + "head_dim must be even for RoPE");
}

Gemma3::Gemma3(const WeightSource& w, const ModelConfig& config, const std::string& origin)
    : config_(config) {
  CheckSupported(config, origin);
  sizes_ = BlockSizesOf(config);
  const int64_t hidden = config.hidden_size, inter = config.intermediate_size;
  const int64_t head_dim = config.head_dim;
  const int64_t q_dim = int64_t(config.n_heads) * head_dim;
  const int64_t kv_dim = int64_t(config.n_kv_heads) * head_dim;
  // HF Gemma3TextScaledWordEmbedding: the scale in the activation dtype (float32 here).
  embed_scale_ = float(std::sqrt(double(hidden)));
  const double scalar =
      config.query_pre_attn_scalar > 0 ? config.query_pre_attn_scalar : kDefaultQueryPreAttnScalar;
  attention_scale_ = float(1.0 / std::sqrt(scalar));

  embed_ = w.Linear("model.embed_tokens.weight", config.vocab_size, hidden);
  norm_ = GemmaNormWeight(w.F32("model.norm.weight", {hidden}));
  // Gemma 3 ties the head to the embedding (its default when the config is silent).
  const bool tied = config.tie_word_embeddings || !w.Has("lm_head.weight");
  lm_head_ = HeadWeight(w, tied, embed_, config.vocab_size, hidden);
  layers_.resize(size_t(config.n_layers));
  for (int32_t i = 0; i < config.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    Gemma3Layer& l = layers_[size_t(i)];
    l.input_norm = GemmaNormWeight(w.F32(p + "input_layernorm.weight", {hidden}));
    l.attn.q = w.Linear(p + "self_attn.q_proj.weight", q_dim, hidden);
    l.attn.k = w.Linear(p + "self_attn.k_proj.weight", kv_dim, hidden);
    l.attn.v = w.Linear(p + "self_attn.v_proj.weight", kv_dim, hidden);
    l.attn.o = w.Linear(p + "self_attn.o_proj.weight", hidden, q_dim);
    l.attn.q_norm = GemmaNormWeight(w.F32(p + "self_attn.q_norm.weight", {head_dim}));
    l.attn.k_norm = GemmaNormWeight(w.F32(p + "self_attn.k_norm.weight", {head_dim}));
    l.post_attn_norm = GemmaNormWeight(w.F32(p + "post_attention_layernorm.weight", {hidden}));
    l.pre_ff_norm = GemmaNormWeight(w.F32(p + "pre_feedforward_layernorm.weight", {hidden}));
    l.mlp.gate = w.Linear(p + "mlp.gate_proj.weight", inter, hidden);
    l.mlp.up = w.Linear(p + "mlp.up_proj.weight", inter, hidden);
    l.mlp.down = w.Linear(p + "mlp.down_proj.weight", hidden, inter);
    l.post_ff_norm = GemmaNormWeight(w.F32(p + "post_feedforward_layernorm.weight", {hidden}));
  }
}

size_t Gemma3::WeightBytes() const {
  size_t bytes = lm_head_.Bytes() + norm_.size() * sizeof(float);
  for (const Gemma3Layer& l : layers_)
    bytes += l.attn.q.Bytes() + l.attn.k.Bytes() + l.attn.v.Bytes() + l.attn.o.Bytes() +
             l.mlp.gate.Bytes() + l.mlp.up.Bytes() + l.mlp.down.Bytes() +
             (l.input_norm.size() + l.post_attn_norm.size() + l.pre_ff_norm.size() +
              l.post_ff_norm.size() + l.attn.q_norm.size() + l.attn.k_norm.size()) *
                 sizeof(float);
  return bytes;
}

void Gemma3::CheckSession(const Session& session) const {
  if (session.plan.HasLinearLayers())
    throw std::invalid_argument("attention plan '" + session.plan.spec +
                                "': linear layers run on Llama-family models (swan train linearizes those)");
}

// x += y, elementwise.  x, y [n]
void AddInto(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void Gemma3::ForwardSteps(float* logits, const std::vector<SequenceStep>& steps) const {
  const StepRows rows = ConcatSteps(steps);
  const int64_t n = rows.n(), hidden = sizes_.hidden;
  const float eps = float(config_.rms_norm_eps);
  std::vector<float> x(size_t(n * hidden));       // [n, hidden] residual stream
  std::vector<float> xn(size_t(n * hidden));      // [n, hidden] normed block input
  std::vector<float> branch(size_t(n * hidden));  // [n, hidden] a block's output
  Embed(x.data(), embed_.view(), rows.tokens.data(), n);
  for (float& v : x) v *= embed_scale_;

  for (int32_t i = 0; i < config_.n_layers; ++i) {
    const Gemma3Layer& l = layers_[size_t(i)];
    // No routes: Gemma 3 has no routers, so a routed plan fails in the block.
    std::vector<AttentionRows> attn = StepAttention(steps, rows, i, l.attn, nullptr, nullptr);
    for (AttentionRows& part : attn) {
      part.layer.scale = attention_scale_;
      part.layer.qk_norm_eps = eps;
    }
    // The blocks add into their first argument: give them a zeroed buffer
    // so that the post-norm sees the block's own output.
    RmsNorm(xn.data(), x.data(), l.input_norm.data(), eps, n, hidden);
    std::fill(branch.begin(), branch.end(), 0.0f);
    AttentionBlockBatch(branch.data(), xn.data(), n, attn, sizes_);
    RmsNorm(branch.data(), branch.data(), l.post_attn_norm.data(), eps, n, hidden);
    AddInto(x.data(), branch.data(), n * hidden);

    RmsNorm(xn.data(), x.data(), l.pre_ff_norm.data(), eps, n, hidden);
    std::fill(branch.begin(), branch.end(), 0.0f);
    GeluTanhMlpBlock(branch.data(), xn.data(), n, l.mlp, sizes_);
    RmsNorm(branch.data(), branch.data(), l.post_ff_norm.data(), eps, n, hidden);
    AddInto(x.data(), branch.data(), n * hidden);
  }

  // Only the rows whose logits are wanted go through the final norm and head.
  OutputLogits(logits, x.data(), rows.logit_rows, norm_.data(), eps, lm_head_, hidden);
}

}  // namespace

ModelAttentionDefaults Gemma3AttentionDefaults(const ModelConfig& config) {
  ModelAttentionDefaults d;
  d.n_layers = config.n_layers;
  d.rope = config.rope;  // global layers
  RopeSettings local;
  local.base = config.rope_local_base_freq > 0 ? config.rope_local_base_freq : kDefaultLocalBase;
  const Span window = SpanFromHfSlidingWindow(config.sliding_window > 0 ? config.sliding_window
                                                                        : kDefaultSlidingWindow);
  d.default_window = window.window;
  for (int32_t i = 0; i < config.n_layers; ++i) {
    const bool is_local = IsLocalLayer(config, i);
    d.spans.push_back(is_local ? window : Span{});
    d.layer_ropes.push_back(is_local ? local : config.rope);
  }
  return d;
}

std::unique_ptr<LanguageModel> BuildGemma3(const WeightSource& weights, const ModelConfig& config,
                                           const std::string& origin) {
  return std::make_unique<Gemma3>(weights, config, origin);
}

}  // namespace swan
