#include "model/decoder.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <vector>

#include "attention/linear_attention.h"
#include "model/blocks.h"
#include "model/weight_source.h"
#include "ops/elementwise.h"
#include "ops/linear.h"

namespace swan {
namespace {

struct DecoderLayer {
  std::vector<float> attn_norm;       // [hidden] input_layernorm (1 + w under unit-offset norms)
  AttentionWeights attn;              // q, k, v, o; biases, QK-norms, feature maps when the spec or weights have them
  std::vector<float> post_attn_norm;  // [hidden] sandwich norms only
  std::vector<float> mlp_norm;        // [hidden]
  MlpWeights mlp;                     // gate, up, down
  std::vector<float> post_mlp_norm;   // [hidden] sandwich norms only
  // Switch Attention router; present when the weights have one (models
  // trained with routed layers), used when the plan routes this layer.
  std::optional<RouterWeights> router;
};

class Decoder : public LanguageModel {
 public:
  // `origin` names the weights in messages.
  Decoder(const WeightSource& weights, const ModelConfig& config, const std::string& origin);

  const ModelConfig& config() const override { return config_; }
  size_t WeightBytes() const override;
  std::vector<ByteSpan> WeightSpans() const override;
  void Forward(float* logits, const Batch& batch, Session& session) const override;
  void ForwardBatch(float* logits, const std::vector<SequenceStep>& steps) const override;

 private:
  // Throws when the session's plan does not fit this model or routes without routers.
  void CheckSession(const Session& session) const;
  // One pass over the steps' tokens, each step at most its cache's max_chunk.
  void ForwardSteps(float* logits, const std::vector<SequenceStep>& steps) const;
  void Load(const WeightSource& w, const DecoderTensor& t);

  ModelConfig config_;
  DecoderSpec spec_;
  std::string origin_;
  BlockSizes sizes_;
  float embed_scale_ = 1.0f;      // sqrt(hidden_size) under scale_embeddings
  float attention_scale_ = 0.0f;  // 0 = 1/sqrt(head_dim)
  LinearWeight embed_;            // [vocab, hidden] (in place in the checkpoint when its type is kept)
  std::vector<DecoderLayer> layers_;
  std::vector<float> norm_;  // [hidden]
  LinearWeight lm_head_;     // [vocab, hidden] (the embedding table when tied)
};

Decoder::Decoder(const WeightSource& w, const ModelConfig& config, const std::string& origin)
    : config_(config), spec_(DecoderSpecOf(config, origin)), origin_(origin) {
  sizes_ = BlockSizesOf(config);
  // HF Gemma3TextScaledWordEmbedding: the scale in the activation dtype (float32 here).
  if (spec_.scale_embeddings) embed_scale_ = float(std::sqrt(double(config.hidden_size)));
  attention_scale_ = AttentionScaleOf(config, spec_);
  layers_.resize(size_t(config.n_layers));
  for (const DecoderTensor& t : DecoderTensors(config, spec_, ExtrasInWeights(w, config.n_layers))) Load(w, t);
  lm_head_ = HeadWeight(w, config.tie_word_embeddings, embed_, config.vocab_size, config.hidden_size);
}

void Decoder::Load(const WeightSource& w, const DecoderTensor& t) {
  using R = TensorRole;
  auto f32 = [&] {
    std::vector<float> x = w.F32(t.name, t.shape);
    return IsNormRole(t.role) && spec_.unit_offset_norms ? GemmaNormWeight(std::move(x)) : x;
  };
  auto linear = [&] { return w.Linear(t.name, t.shape[0], t.shape[1]); };
  if (t.role == R::kEmbedding) {
    embed_ = linear();
    return;
  }
  if (t.role == R::kFinalNorm) {
    norm_ = f32();
    return;
  }
  if (t.role == R::kLmHead) return;  // HeadWeight, after the embedding
  DecoderLayer& l = layers_[size_t(t.layer)];
  switch (t.role) {
    case R::kAttnNorm: l.attn_norm = f32(); break;
    case R::kQ: l.attn.q = linear(); break;
    case R::kK: l.attn.k = linear(); break;
    case R::kV: l.attn.v = linear(); break;
    case R::kO: l.attn.o = linear(); break;
    case R::kQBias: l.attn.q_bias = f32(); break;
    case R::kKBias: l.attn.k_bias = f32(); break;
    case R::kVBias: l.attn.v_bias = f32(); break;
    case R::kQNorm: l.attn.q_norm = f32(); break;
    case R::kKNorm: l.attn.k_norm = f32(); break;
    case R::kPostAttnNorm: l.post_attn_norm = f32(); break;
    case R::kMlpNorm: l.mlp_norm = f32(); break;
    case R::kGate: l.mlp.gate = linear(); break;
    case R::kUp: l.mlp.up = linear(); break;
    case R::kDown: l.mlp.down = linear(); break;
    case R::kPostMlpNorm: l.post_mlp_norm = f32(); break;
    case R::kRouterWeight: l.router.emplace().weight = f32(); break;
    case R::kRouterBias: l.router->bias = f32()[0]; break;  // follows its weight
    case R::kFeatureMapQWeight:
      l.attn.feature_dim = int32_t(t.shape[2]);
      l.attn.fq_w = f32();
      break;
    case R::kFeatureMapQBias: l.attn.fq_b = f32(); break;
    case R::kFeatureMapKWeight: l.attn.fk_w = f32(); break;
    case R::kFeatureMapKBias: l.attn.fk_b = f32(); break;
    case R::kWindowFactor:
      l.attn.window_factor = f32();
      for (float& f : l.attn.window_factor) f = WindowFactor(f);  // stored as θ, used as σ(θ)
      break;
    case R::kEmbedding:
    case R::kFinalNorm:
    case R::kLmHead: break;
  }
}

size_t Decoder::WeightBytes() const {
  size_t floats = norm_.size(), bytes = 0;
  for (const ByteSpan& span : WeightSpans()) bytes += span.bytes;  // the projections and the head
  for (const DecoderLayer& l : layers_) {
    const AttentionWeights& a = l.attn;
    floats += l.attn_norm.size() + l.post_attn_norm.size() + l.mlp_norm.size() + l.post_mlp_norm.size() +
              a.q_bias.size() + a.k_bias.size() + a.v_bias.size() + a.q_norm.size() + a.k_norm.size() +
              (l.router ? l.router->weight.size() + 1 : 0) + a.fq_w.size() + a.fq_b.size() + a.fk_w.size() +
              a.fk_b.size() + a.window_factor.size();
  }
  return bytes + floats * sizeof(float);
}

std::vector<ByteSpan> Decoder::WeightSpans() const {
  std::vector<ByteSpan> spans;  // in the order a decode step reads them
  auto add = [&](const LinearWeight& w) {
    if (w.Bytes() > 0) spans.push_back(ByteSpan{w.view().data, w.Bytes()});
  };
  for (const DecoderLayer& l : layers_)
    for (const LinearWeight* w : {&l.attn.q, &l.attn.k, &l.attn.v, &l.attn.o, &l.mlp.gate, &l.mlp.up, &l.mlp.down})
      add(*w);
  add(lm_head_);
  return spans;
}

void Decoder::CheckSession(const Session& session) const {
  if (int32_t(session.plan.layers.size()) != config_.n_layers)
    throw std::invalid_argument("Forward: the session's plan does not fit this model");
  CheckLinearLayersFit(config_, spec_, session.plan);
  for (size_t i = 0; i < session.plan.layers.size(); ++i) {
    const LayerPlan& l = session.plan.layers[i];
    if (l.kind != LayerKind::kLinear) continue;
    if (layers_[i].attn.feature_dim == 0)
      throw std::runtime_error(origin_ + " has no feature maps for layer " + std::to_string(i) + " (model.layers." +
                               std::to_string(i) + ".self_attn.feature_map_q.weight), which the plan '" +
                               session.plan.spec + "' makes linear: linearize it with `swan train --init " + origin_ +
                               " --attn linear --attention-transfer ...`");
    if (!l.span.full() && layers_[i].attn.window_factor.empty())
      throw std::runtime_error(origin_ + " has no window factors for layer " + std::to_string(i) + " (model.layers." +
                               std::to_string(i) + ".self_attn.window_factor), which the plan '" + session.plan.spec +
                               "' makes linear + window: train it under that plan with `swan "
                               "train --init " +
                               origin_ + " --attn " + session.plan.spec + " ...`");
  }
  if (session.plan.HasRoutedLayers()) {
    std::vector<const RouterWeights*> routers;  // [n_layers]
    for (const DecoderLayer& l : layers_) routers.push_back(l.router ? &*l.router : nullptr);
    RequireRouters(session, routers, origin_);
  }
}

void Decoder::Forward(float* logits, const Batch& batch, Session& session) const {
  if (batch.n <= 0) throw std::invalid_argument("Forward: empty batch");
  CheckSession(session);
  ForwardByPasses(
      logits, batch, session, config_.vocab_size,
      [&](float* part_logits, const std::vector<SequenceStep>& steps) { ForwardSteps(part_logits, steps); });
}

void Decoder::ForwardBatch(float* logits, const std::vector<SequenceStep>& steps) const {
  CheckSteps(steps);
  for (const SequenceStep& step : steps) CheckSession(*step.session);
  ForwardBatchByPasses(*this, logits, steps, [&](float* part_logits, const std::vector<SequenceStep>& part) {
    ForwardSteps(part_logits, part);
  });
}

// x += y, elementwise.  x, y [n]
void AddInto(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void Decoder::ForwardSteps(float* logits, const std::vector<SequenceStep>& steps) const {
  const StepRows rows = ConcatSteps(steps);
  const int64_t n = rows.n(), hidden = sizes_.hidden;
  const float eps = float(config_.rms_norm_eps);
  std::vector<float> x(size_t(n * hidden));   // [n, hidden] residual stream
  std::vector<float> xn(size_t(n * hidden));  // [n, hidden] normed block input
  // [n, hidden] a block's own output, normed before it joins the stream (sandwich norms only)
  std::vector<float> branch(spec_.sandwich_norms ? size_t(n * hidden) : 0);
  Embed(x.data(), embed_.view(), rows.tokens.data(), n);
  if (embed_scale_ != 1.0f)
    for (float& v : x) v *= embed_scale_;

  // Adds block(xn) into the stream, through the block's output norm when it has one.
  auto add_block = [&](const std::vector<float>& out_norm, const auto& block) {
    if (out_norm.empty()) return block(x.data());
    std::fill(branch.begin(), branch.end(), 0.0f);
    block(branch.data());
    RmsNorm(branch.data(), branch.data(), out_norm.data(), eps, n, hidden);
    AddInto(x.data(), branch.data(), n * hidden);
  };
  std::vector<LayerRoutes> routes;  // [n_steps] this layer's, for routed layers
  for (int32_t i = 0; i < config_.n_layers; ++i) {
    const DecoderLayer& l = layers_[size_t(i)];
    std::vector<AttentionRows> attn = StepAttention(steps, rows, i, l.attn, l.router ? &*l.router : nullptr, &routes);
    for (AttentionRows& part : attn) {
      part.layer.scale = attention_scale_;
      part.layer.qk_norm_eps = eps;
    }
    RmsNorm(xn.data(), x.data(), l.attn_norm.data(), eps, n, hidden);
    add_block(l.post_attn_norm, [&](float* out) { AttentionBlockBatch(out, xn.data(), n, attn, sizes_); });
    RmsNorm(xn.data(), x.data(), l.mlp_norm.data(), eps, n, hidden);
    add_block(l.post_mlp_norm, [&](float* out) { MlpBlock(out, xn.data(), n, l.mlp, sizes_, spec_.activation); });
  }
  // A prefill's temporaries go before the head's weights are read (decode-sized steps keep theirs).
  if (n > kGemvMaxRows) {
    ReleaseBlockScratch();
    std::vector<float>().swap(xn);
    std::vector<float>().swap(branch);
  }
  // Only the rows whose logits are wanted go through the final norm and head.
  OutputLogits(logits, x.data(), rows.logit_rows, norm_.data(), eps, lm_head_, hidden);
}

}  // namespace

std::vector<LayerExtras> ExtrasInWeights(const WeightSource& w, int32_t n_layers) {
  std::vector<LayerExtras> extras;  // [n_layers]
  for (int32_t i = 0; i < n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".self_attn.";
    const bool maps = w.Has(p + "feature_map_q.weight");
    extras.push_back({w.Has(p + "router.weight"), maps, maps && w.Has(p + "window_factor")});
  }
  return extras;
}

void CheckLinearLayersFit(const ModelConfig& config, const DecoderSpec& spec, const AttentionPlan& plan) {
  const float scale = AttentionScaleOf(config, spec);
  const float usual = float(1.0 / std::sqrt(double(config.head_dim)));
  if (!plan.HasLinearLayers() || scale == 0.0f || std::abs(scale - usual) <= 1e-6f * usual) return;
  throw std::invalid_argument("attention plan '" + plan.spec +
                              "': linear layers use the logit scale 1/sqrt(head_dim), and " + spec.architecture +
                              " with query_pre_attn_scalar " +
                              std::to_string(int64_t(std::lround(1.0 / (double(scale) * scale)))) + " has another");
}

std::unique_ptr<LanguageModel> BuildDecoder(const WeightSource& weights, const ModelConfig& config,
                                            const std::string& origin) {
  return std::make_unique<Decoder>(weights, config, origin);
}

}  // namespace swan
