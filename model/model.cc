#include "model/model.h"

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>

#include "gpu/device_decoder.h"
#include "model/decoder.h"
#include "model/decoder_spec.h"
#include "model/gguf_weights.h"
#include "model/random_kv_rows.h"
#include "model/weight_source.h"
#include "ops/linear.h"

namespace swan {
Session::Session(const AttentionPlan& plan_in, const KvShape& shape, const KvCacheOptions& options)
    : plan(plan_in), cache([&] {
        std::vector<Span> spans;   // [n_layers]
        std::vector<bool> linear;  // [n_layers]
        for (const LayerPlan& l : plan_in.layers) {
          spans.push_back(l.cache_span());
          linear.push_back(l.kind == LayerKind::kLinear);
        }
        return KvCache(spans, plan_in.FullHeads(), linear, shape, options);
      }()) {
  for (const LayerPlan& l : plan.layers) ropes.emplace_back(l.rope, shape.head_dim);
}

AttentionPlan LanguageModel::ResolvePlan(const std::string& spec) const {
  // A model trained by swan stores its plan in config.json: its own plan.
  if ((spec.empty() || spec == "model") && !config().attention_plan.empty())
    return swan::ResolvePlan(config().attention_plan, AttentionDefaults());
  return swan::ResolvePlan(spec, AttentionDefaults());
}

void LanguageModel::ForwardBatch(float* logits, const std::vector<SequenceStep>& steps) const {
  CheckSteps(steps);
  for (const SequenceStep& step : steps) {
    Forward(logits, step.batch, *step.session);
    logits += (step.batch.all_logits ? step.batch.n : 1) * int64_t(config().vocab_size);
  }
}

void CheckSteps(const std::vector<SequenceStep>& steps) {
  std::vector<const Session*> sessions;  // [n_steps]
  for (size_t i = 0; i < steps.size(); ++i) {
    const SequenceStep& step = steps[i];
    const std::string which = "ForwardBatch: step " + std::to_string(i);
    if (!step.session) throw std::invalid_argument(which + " has no session");
    if (step.batch.n <= 0) throw std::invalid_argument(which + " is empty");
    sessions.push_back(step.session);
  }
  std::sort(sessions.begin(), sessions.end());
  if (std::adjacent_find(sessions.begin(), sessions.end()) != sessions.end())
    throw std::invalid_argument("ForwardBatch: a session appears in two steps of one batch");
}

KvShape LanguageModel::kv_shape() const {
  return KvShape{config().n_kv_heads, config().head_dim, LinearPhiDim(config())};
}

std::unique_ptr<Session> LanguageModel::NewSession(const AttentionPlan& plan, const KvCacheOptions& options) const {
  if (int32_t(plan.layers.size()) != config().n_layers)
    throw std::invalid_argument("attention plan has " + std::to_string(plan.layers.size()) + " layers, the model " +
                                std::to_string(config().n_layers));
  return std::make_unique<Session>(plan, kv_shape(), options);
}

ModelAttentionDefaults AttentionDefaultsFor(const ModelConfig& config) {
  ModelAttentionDefaults d = FamilyOf(config, "config.json").attention(config);
  d.n_kv_heads = config.n_kv_heads;
  d.linear_phi_dim = LinearPhiDim(config);
  return d;
}

int32_t LinearPhiDim(const ModelConfig& config) {
  return 2 * (config.linear_feature_dim > 0 ? config.linear_feature_dim : config.head_dim / 2);
}

size_t PlanLayerKvBytesAt(const LayerPlan& layer, const KvShape& shape, const KvCacheOptions& options, int64_t n_ctx) {
  if (layer.kind == LayerKind::kLinear) {
    // The state, S [KV, P, D] and z [KV, P]; with a window, its ring and the
    // φk and v of the W - 1 newest tokens, not yet in the state.
    const size_t kv = size_t(shape.n_kv_heads);
    size_t bytes = kv * size_t(shape.linear_phi_dim) * size_t(shape.head_dim + 1) * sizeof(float);
    if (!layer.span.full()) {
      const int64_t pending = std::min<int64_t>(n_ctx, layer.span.window - 1);
      bytes += LayerKvBytesAt(layer.span, shape, options, n_ctx) +
               size_t(pending) * kv * size_t(shape.linear_phi_dim + shape.head_dim) * sizeof(float);
    }
    return bytes;
  }
  if (layer.kind == LayerKind::kPerHead) return LayerKvBytesAt(layer.span, layer.full_heads, shape, options, n_ctx);
  return LayerKvBytesAt(layer.cache_span(), shape, options, n_ctx);
}

ModelAttentionDefaults LanguageModel::AttentionDefaults() const { return AttentionDefaultsFor(config()); }

size_t LanguageModel::CacheBytes(const Session& session) const { return session.cache.Bytes(); }

void LanguageModel::FillCacheRandom(Session& session, int64_t depth, int64_t chunk) const {
  const KvShape shape = kv_shape();
  for (int32_t l = 0; l < session.cache.n_layers(); ++l) {
    if (!session.cache.layer(l).linear()) continue;
    LinearState& state = session.cache.layer(l).linear_state();
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> positive(0.0f, 1.0f);
    for (float& x : state.s) x = positive(rng) * float(depth);
    for (float& x : state.z) x = positive(rng) * float(depth);
    state.tokens = depth;
    const int32_t window = session.plan.layers[size_t(l)].span.window;
    if (window > 0) {  // LoLCATs' hybrid: the newest W - 1 tokens wait outside S and z
      state.folded = std::max<int64_t>(0, depth - window + 1);
      const int64_t pending = depth - state.folded;
      state.pending_phi.resize(size_t(pending * shape.n_kv_heads * shape.linear_phi_dim));
      state.pending_v.resize(size_t(pending * shape.n_kv_heads * shape.head_dim));
      for (float& x : state.pending_phi) x = positive(rng);
      for (float& x : state.pending_v) x = positive(rng);
    }
  }
  const RandomKvRows rows(chunk, int64_t(shape.n_kv_heads) * shape.head_dim);
  std::vector<int32_t> pos(static_cast<size_t>(chunk));  // [chunk]
  for (int64_t start = 0; start < depth; start += chunk) {
    const int64_t n = std::min(chunk, depth - start);
    for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = int32_t(start + i);
    for (int32_t l = 0; l < session.cache.n_layers(); ++l)
      if (session.cache.layer(l).n_stores() > 0)
        session.cache.layer(l).Write(rows.k.data(), rows.v.data(), pos.data(), n);
  }
}

std::unique_ptr<LanguageModel> BuildModelOn(const WeightSource& weights, const ModelConfig& config,
                                            const std::string& origin, int vulkan_device) {
  if (vulkan_device >= 0) return BuildDeviceDecoder(weights, config, origin, vulkan_device);
  return BuildDecoder(weights, config, origin);
}

namespace {

// A built model from `stored`, its linear layers converted as options say.
std::unique_ptr<LanguageModel> BuildFrom(const WeightSource& stored, const ModelConfig& config,
                                         const std::string& origin, const LoadOptions& options) {
  if (!options.weights) return BuildModelOn(stored, config, origin, options.vulkan_device);
  return BuildModelOn(ConvertedWeights(stored, *options.weights), config, origin, options.vulkan_device);
}

}  // namespace

ModelConfig ModelConfigOf(const std::string& path) {
  if (IsGgufFile(path)) return GgufModelConfig(GgufFile(path));
  return LoadModelConfig(path);
}

std::unique_ptr<LanguageModel> LoadModel(const std::string& dir, const LoadOptions& options) {
  if (IsGgufFile(dir)) {
    const GgufFile file(dir);
    const ModelConfig config = GgufModelConfig(file);
    const GgufWeights stored(file, config);
    std::unique_ptr<LanguageModel> model = BuildFrom(stored, config, dir, options);
    stored.RequireAllUsed();
    return model;
  }
  const ModelConfig config = LoadModelConfig(dir);
  FamilyOf(config, dir + "/config.json");  // an unsupported architecture, named by its file
  const CheckpointWeights stored(dir);
  std::unique_ptr<LanguageModel> model = BuildFrom(stored, config, dir, options);
  stored.RequireAllUsed(config.tie_word_embeddings, dir);
  return model;
}

int64_t InvariantBatchSteps() { return kGemvMaxRows; }

}  // namespace swan
