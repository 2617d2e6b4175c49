#include "gpu/device_decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <vector>

#include "gpu/device_ops.h"
#include "kv/kv_cache.h"
#include "model/blocks.h"
#include "model/decoder.h"
#include "model/decoder_spec.h"
#include "model/random_kv_rows.h"
#include "model/weight_source.h"
#include "ops/linear.h"
#include "ops/packed_blocks.h"
#include "ops/router.h"
#include "util/bf16.h"

namespace swan {
namespace {

// Full layers' caches grow by this many slots at a time.
constexpr int64_t kFullSlotsStep = 256;

struct DeviceLayer {
  DeviceBuffer attn_norm, post_attn_norm, mlp_norm, post_mlp_norm;  // [hidden]; the post ones under sandwich norms
  DeviceMatrix q, k, v, o, gate, up, down;
  DeviceBuffer q_bias, k_bias, v_bias;  // [heads * head_dim], [kv_heads * head_dim] x2 (Qwen2)
  DeviceBuffer q_norm, k_norm;          // [head_dim] (QK-norm)
  bool biases = false, qk_norm = false;
  // A routed layer's router (model/blocks.h): on the host for the checks,
  // on the device for the steps.
  std::optional<RouterWeights> router;
  DeviceMatrix router_weight;  // [1, hidden]
  DeviceBuffer router_bias;    // [1]
};

// One layer's keys and values of one sequence: slots as kv/'s SlotTable
// numbers them, the position in each (-1 empty) mirrored on the host.
struct DeviceLayerKv {
  int32_t sinks = 0;
  int64_t ring_rows = 0;     // 0: a full layer, slot = position
  std::vector<int32_t> pos;  // [slots]
  DeviceBuffer k, v;         // [slots, kv_heads * head_dim] of the sequence's KV type
  DeviceBuffer slot_pos;     // [slots] int32
  int64_t SlotOf(int64_t p) const { return SlotTable(sinks, ring_rows).SlotOf(p); }
};

// A session's state on the device (Session::device_cache). It holds the
// device, destroyed after the buffers, so a session may outlive its model.
struct DeviceSequence {
  std::shared_ptr<VulkanDevice> device;
  const void* owner = nullptr;        // the decoder that made it
  std::vector<DeviceLayerKv> layers;  // [n_layers]
  KvType type = KvType::kF32;         // f32 or bf16 (the session's KvCacheOptions)
  int64_t next_pos = 0;
};

// StreamingLLM positions on a layer (pos:cache on a window layer with sinks,
// as model/blocks.cc's AttendRows): without RoPE they change nothing.
bool CachePositions(const LayerPlan& l) {
  return l.position_mode == PositionMode::kCache && l.span.sinks > 0 && l.rope.enabled;
}

DeviceBuffer Holding(VulkanDevice& device, const std::vector<float>& values) {
  DeviceBuffer b(device, values.size() * sizeof(float));
  b.Upload(values.data(), values.size() * sizeof(float));
  return b;
}

class DeviceDecoder : public LanguageModel {
 public:
  DeviceDecoder(const WeightSource& w, const ModelConfig& config, const std::string& origin, int device_index);
  const ModelConfig& config() const override { return config_; }
  size_t WeightBytes() const override { return weight_bytes_; }
  void Forward(float* logits, const Batch& batch, Session& session) const override;
  size_t CacheBytes(const Session& session) const override;
  bool CacheOnHost() const override { return false; }
  void FillCacheRandom(Session& session, int64_t depth, int64_t chunk) const override;

 private:
  void Load(const WeightSource& w, const DecoderTensor& t);
  DeviceMatrix Upload(const LinearWeight& w);
  void CheckPlan(const AttentionPlan& plan) const;
  DeviceSequence& SequenceOf(Session& session, int32_t first_pos) const;
  void Grow(DeviceLayerKv& kv, KvType type, int64_t slots) const;
  // One token through the model; logits [vocab] when not null.
  void Step(int32_t token, int32_t pos, const Session& session, DeviceSequence& seq, float* logits) const;
  // Adds the block output `branch` into the stream, through `norm` when set.
  void AddBlock(CommandBatch& batch, const DeviceBuffer& branch, const DeviceBuffer* norm) const;

  ModelConfig config_;
  DecoderSpec spec_;
  std::string origin_;
  std::shared_ptr<VulkanDevice> device_holder_;  // shared with the sessions' caches
  VulkanDevice& device_;
  mutable DeviceKernels kernels_;
  float embed_scale_ = 1.0f, attention_scale_ = 0.0f, eps_ = 1e-6f;
  size_t weight_bytes_ = 0;
  LinearWeight embed_;  // [vocab, hidden] on the host: a step reads one row
  std::vector<DeviceLayer> layers_;
  DeviceBuffer norm_;  // [hidden]
  DeviceMatrix head_;  // [vocab, hidden]

  mutable std::mutex mutex_;  // one step at a time: the scratch below is shared
  // Scratch: x, xn, branch, branch_normed [hidden]; q, qn [2, heads * hd]
  // (the second half: pos:cache's queries for the sinks); attn [heads * hd];
  // k, kn, v [kv_heads * hd]; gate, up, act [intermediate]; logits [vocab];
  // cos_sin [n_layers, 2, head_dim] (RoPE at the position, and at pos:cache's
  // position for the sinks); q_pos [1]; scratch: attention's partials (AttendScratchFloats)
  mutable DeviceBuffer x_, xn_, branch_, branch_normed_, q_, qn_, attn_, k_, kn_, v_, gate_, up_, act_, logits_,
      cos_sin_, q_pos_, scratch_;
  mutable std::vector<DeviceBuffer> route_logits_;  // [n_layers] of [1]: a routed layer's route this step (> 0: full)
};

DeviceDecoder::DeviceDecoder(const WeightSource& w, const ModelConfig& config, const std::string& origin,
                             int device_index)
    : config_(config),
      spec_(DecoderSpecOf(config, origin)),
      origin_(origin),
      device_holder_(std::make_shared<VulkanDevice>(device_index)),
      device_(*device_holder_),
      kernels_(device_) {
  if (spec_.scale_embeddings) embed_scale_ = float(std::sqrt(double(config.hidden_size)));
  attention_scale_ = AttentionScaleOf(config, spec_);
  eps_ = float(config.rms_norm_eps);
  layers_.resize(size_t(config.n_layers));
  for (const DecoderTensor& t : DecoderTensors(config, spec_, ExtrasInWeights(w, config.n_layers))) Load(w, t);
  head_ = Upload(HeadWeight(w, config.tie_word_embeddings, embed_, config.vocab_size, config.hidden_size));
  const int64_t hidden = config.hidden_size, hd = config.head_dim;
  const int64_t qw = int64_t(config.n_heads) * hd, kw = int64_t(config.n_kv_heads) * hd;
  auto floats = [&](int64_t n) { return DeviceBuffer(device_, size_t(n) * sizeof(float)); };
  x_ = floats(hidden), xn_ = floats(hidden), branch_ = floats(hidden), branch_normed_ = floats(hidden);
  q_ = floats(2 * qw), qn_ = floats(2 * qw), attn_ = floats(qw), k_ = floats(kw), kn_ = floats(kw), v_ = floats(kw);
  gate_ = floats(config.intermediate_size), up_ = floats(config.intermediate_size);
  act_ = floats(config.intermediate_size), logits_ = floats(config.vocab_size);
  cos_sin_ = floats(int64_t(config.n_layers) * 2 * hd), q_pos_ = floats(1), scratch_ = floats(config.n_heads);
  for (int32_t i = 0; i < config.n_layers; ++i) route_logits_.push_back(floats(1));
}

DeviceMatrix DeviceDecoder::Upload(const LinearWeight& w) {
  const WeightView view = w.view();
  weight_bytes_ += w.Bytes();
  if (!IsBlockQuantized(w.type())) return UploadMatrix(device_, w.type(), view.data, w.out(), w.in());
  // The CPU holds block rows packed for its kernels: the device reads the file's layout.
  std::vector<uint8_t> rows(size_t(w.out()) * WeightRowBytes(w.type(), w.in()));  // [out, row bytes]
  UnpackBlockRows(view.packed(), rows.data());
  return UploadMatrix(device_, w.type(), rows.data(), w.out(), w.in());
}

void DeviceDecoder::Load(const WeightSource& w, const DecoderTensor& t) {
  using R = TensorRole;
  auto f32 = [&] {
    std::vector<float> x = w.F32(t.name, t.shape);
    if (IsNormRole(t.role) && spec_.unit_offset_norms) x = GemmaNormWeight(std::move(x));
    weight_bytes_ += x.size() * sizeof(float);
    return Holding(device_, x);
  };
  auto linear = [&] { return Upload(w.Linear(t.name, t.shape[0], t.shape[1])); };
  if (t.role == R::kEmbedding) {
    embed_ = w.Linear(t.name, t.shape[0], t.shape[1]);
    return;
  }
  if (t.role == R::kFinalNorm) {
    norm_ = f32();
    return;
  }
  if (t.role == R::kLmHead) return;  // after the embedding
  DeviceLayer& l = layers_[size_t(t.layer)];
  switch (t.role) {
    case R::kAttnNorm: l.attn_norm = f32(); break;
    case R::kQ: l.q = linear(); break;
    case R::kK: l.k = linear(); break;
    case R::kV: l.v = linear(); break;
    case R::kO: l.o = linear(); break;
    case R::kQBias: l.q_bias = f32(), l.biases = true; break;
    case R::kKBias: l.k_bias = f32(); break;
    case R::kVBias: l.v_bias = f32(); break;
    case R::kQNorm: l.q_norm = f32(), l.qk_norm = true; break;
    case R::kKNorm: l.k_norm = f32(); break;
    case R::kPostAttnNorm: l.post_attn_norm = f32(); break;
    case R::kMlpNorm: l.mlp_norm = f32(); break;
    case R::kGate: l.gate = linear(); break;
    case R::kUp: l.up = linear(); break;
    case R::kDown: l.down = linear(); break;
    case R::kPostMlpNorm: l.post_mlp_norm = f32(); break;
    case R::kRouterWeight: {
      l.router.emplace().weight = w.F32(t.name, t.shape);
      l.router_weight = UploadMatrix(device_, WeightType::kF32, l.router->weight.data(), 1, config_.hidden_size);
      weight_bytes_ += l.router->weight.size() * sizeof(float);
      break;
    }
    case R::kRouterBias:  // follows its weight
      l.router->bias = w.F32(t.name, t.shape)[0];
      l.router_bias = Holding(device_, {l.router->bias});
      break;
    default:  // feature maps: read, so that the model loads, but linear layers are refused on a device
      w.F32(t.name, t.shape);
      break;
  }
}

void DeviceDecoder::CheckPlan(const AttentionPlan& plan) const {
  if (int32_t(plan.layers.size()) != config_.n_layers)
    throw std::invalid_argument("Forward: the session's plan does not fit this model");
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const LayerPlan& l = plan.layers[i];
    if (l.kind == LayerKind::kLinear)
      throw std::invalid_argument(std::string("attention plan '") + plan.spec + "': layer " + std::to_string(i) +
                                  " is " + LayerKindName(l.kind) +
                                  ", which runs on the CPU only for now (leave out --device)");
    if (l.kind == LayerKind::kPerHead && !l.full_heads.empty() && l.full_heads.back() >= 32)
      throw std::invalid_argument("attention plan '" + plan.spec + "': layer " + std::to_string(i) + " keeps KV head " +
                                  std::to_string(l.full_heads.back()) +
                                  " full; on a device, per-head layers name heads below 32 (leave out --device)");
  }
}

void DeviceDecoder::Grow(DeviceLayerKv& kv, KvType type, int64_t slots) const {
  const int64_t old = int64_t(kv.pos.size()), row = int64_t(config_.n_kv_heads) * config_.head_dim;
  if (slots <= old) return;
  const size_t row_bytes = size_t(row) * (type == KvType::kBF16 ? 2 : 4);
  DeviceBuffer k(device_, size_t(slots) * row_bytes), v(device_, size_t(slots) * row_bytes);
  DeviceBuffer slot_pos(device_, size_t(slots) * 4);
  if (old > 0) {
    CommandBatch copy(device_);
    copy.Copy(kv.k, 0, k, 0, size_t(old) * row_bytes);
    copy.Copy(kv.v, 0, v, 0, size_t(old) * row_bytes);
    copy.Run();
  }
  kv.pos.resize(size_t(slots), -1);
  slot_pos.Upload(kv.pos.data(), kv.pos.size() * 4);
  kv.k = std::move(k), kv.v = std::move(v), kv.slot_pos = std::move(slot_pos);
  DeviceAttention one_query;
  one_query.shape = AttentionShape{config_.n_heads, config_.n_kv_heads, config_.head_dim};
  one_query.n_q = 1, one_query.n_rows = slots;
  const int64_t scratch_floats = AttendScratchFloats(one_query);
  if (int64_t(scratch_.bytes()) < scratch_floats * 4) scratch_ = DeviceBuffer(device_, size_t(scratch_floats) * 4);
}

size_t DeviceDecoder::CacheBytes(const Session& session) const {
  const auto* seq = static_cast<const DeviceSequence*>(session.device_cache.get());
  if (!seq || seq->owner != this) return 0;
  size_t bytes = 0;
  for (const DeviceLayerKv& kv : seq->layers) bytes += kv.k.bytes() + kv.v.bytes();
  return bytes;
}

DeviceSequence& DeviceDecoder::SequenceOf(Session& session, int32_t first_pos) const {
  auto* seq = static_cast<DeviceSequence*>(session.device_cache.get());
  if (first_pos == 0 || !seq || seq->owner != this) {
    if (first_pos != 0)
      throw std::invalid_argument("Forward on a device: a session starts at position 0 (got " +
                                  std::to_string(first_pos) + ")");
    auto fresh = std::make_shared<DeviceSequence>();
    fresh->device = device_holder_;
    fresh->owner = this;
    fresh->type = session.cache.options().type;
    if (fresh->type != KvType::kF32 && fresh->type != KvType::kBF16)
      throw std::invalid_argument(std::string("a KV cache of ") + KvTypeName(fresh->type) +
                                  " on a device (it holds f32 or bf16: --kv f32 or bf16, or leave out --device)");
    for (const LayerPlan& l : session.plan.layers) {
      DeviceLayerKv kv;
      if (l.kind == LayerKind::kWindow) kv.sinks = l.span.sinks, kv.ring_rows = l.span.window;
      Grow(kv, fresh->type, kv.ring_rows ? kv.sinks + kv.ring_rows : kFullSlotsStep);
      fresh->layers.push_back(std::move(kv));
    }
    session.device_cache = fresh;
    seq = fresh.get();
  }
  if (first_pos != seq->next_pos)
    throw std::invalid_argument("Forward on a device: position " + std::to_string(first_pos) + " after " +
                                std::to_string(seq->next_pos) + " tokens (positions continue the sequence)");
  return *seq;
}

void DeviceDecoder::FillCacheRandom(Session& session, int64_t depth, int64_t chunk) const {
  if (depth < 0 || chunk < 1) throw std::invalid_argument("FillCacheRandom: a negative depth or an empty chunk");
  CheckPlan(session.plan);
  const std::lock_guard<std::mutex> lock(mutex_);
  DeviceSequence& seq = SequenceOf(session, 0);  // a fresh one
  // The rows the host cache's fill writes: `chunk` random rows, repeated.
  const int64_t row = int64_t(config_.n_kv_heads) * config_.head_dim;
  const RandomKvRows rows(chunk, row);
  const bool bf16 = seq.type == KvType::kBF16;
  for (DeviceLayerKv& kv : seq.layers) {
    // Each slot's last position: a ring keeps the sinks and the newest window.
    const int64_t first_kept = kv.ring_rows ? std::max<int64_t>(kv.sinks, depth - kv.ring_rows) : 0;
    int64_t slots = int64_t(kv.pos.size());
    if (!kv.ring_rows && depth > slots) slots = (depth + kFullSlotsStep - 1) / kFullSlotsStep * kFullSlotsStep;
    Grow(kv, seq.type, slots);
    std::vector<float> k_rows(size_t(slots * row)), v_rows(size_t(slots * row));  // [slots, row]
    for (int64_t p = 0; p < depth; ++p) {
      if (p >= kv.sinks && p < first_kept) continue;
      const int64_t slot = kv.SlotOf(p), from = (p % chunk) * row;
      std::copy_n(rows.k.begin() + from, row, k_rows.begin() + slot * row);
      std::copy_n(rows.v.begin() + from, row, v_rows.begin() + slot * row);
      kv.pos[size_t(slot)] = int32_t(p);
    }
    if (bf16) {
      std::vector<uint16_t> k16(k_rows.size()), v16(v_rows.size());  // [slots, row]
      for (size_t i = 0; i < k_rows.size(); ++i) k16[i] = F32ToBF16(k_rows[i]), v16[i] = F32ToBF16(v_rows[i]);
      kv.k.Upload(k16.data(), k16.size() * 2);
      kv.v.Upload(v16.data(), v16.size() * 2);
    } else {
      kv.k.Upload(k_rows.data(), k_rows.size() * 4);
      kv.v.Upload(v_rows.data(), v_rows.size() * 4);
    }
    kv.slot_pos.Upload(kv.pos.data(), kv.pos.size() * 4);
  }
  seq.next_pos = depth;
}

void DeviceDecoder::Forward(float* logits, const Batch& batch, Session& session) const {
  if (batch.n <= 0) throw std::invalid_argument("Forward: empty batch");
  CheckPlan(session.plan);
  std::vector<const RouterWeights*> routers;  // [n_layers]
  for (const DeviceLayer& l : layers_) routers.push_back(l.router ? &*l.router : nullptr);
  RequireRouters(session, routers, origin_);
  const std::lock_guard<std::mutex> lock(mutex_);
  DeviceSequence& seq = SequenceOf(session, batch.pos[0]);
  for (int64_t t = 0; t < batch.n; ++t) {
    if (batch.pos[t] != seq.next_pos)
      throw std::invalid_argument("Forward on a device: positions continue the sequence");
    const bool want = batch.all_logits || t == batch.n - 1;
    float* out = !want ? nullptr : batch.all_logits ? logits + t * config_.vocab_size : logits;
    Step(batch.tokens[t], batch.pos[t], session, seq, out);
    seq.next_pos += 1;
  }
}

void DeviceDecoder::AddBlock(CommandBatch& batch, const DeviceBuffer& branch, const DeviceBuffer* norm) const {
  const int64_t hidden = config_.hidden_size;
  if (!norm) return RecordAdd(batch, kernels_, branch, x_, hidden);
  RecordRmsNorm(batch, kernels_, branch, *norm, branch_normed_, 1, hidden, eps_, false);
  RecordAdd(batch, kernels_, branch_normed_, x_, hidden);
}

void DeviceDecoder::Step(int32_t token, int32_t pos, const Session& session, DeviceSequence& seq, float* logits) const {
  const int64_t hidden = config_.hidden_size, hd = config_.head_dim, inter = config_.intermediate_size;
  const int64_t kv_row = int64_t(config_.n_kv_heads) * hd;
  std::vector<float> x(static_cast<size_t>(hidden));  // [hidden] the token's embedding
  Embed(x.data(), embed_.view(), &token, 1);
  if (embed_scale_ != 1.0f)
    for (float& v : x) v *= embed_scale_;
  x_.Upload(x.data(), x.size() * 4);
  q_pos_.Upload(&pos, 4);
  std::vector<float> cos_sin(static_cast<size_t>(config_.n_layers * 2 * hd));  // [n_layers, 2, head_dim]
  for (int32_t i = 0; i < config_.n_layers; ++i) {
    const LayerPlan& plan = session.plan.layers[size_t(i)];
    if (!plan.rope.enabled) continue;
    const int32_t positions[2] = {pos, std::min(pos, plan.span.sinks + plan.span.window - 1)};
    session.ropes[size_t(i)].CosSin(positions, CachePositions(plan) ? 2 : 1, cos_sin.data() + i * 2 * hd);
  }
  cos_sin_.Upload(cos_sin.data(), cos_sin.size() * 4);
  // Each layer's slot for this position: full caches grow first.
  std::vector<int64_t> slots(static_cast<size_t>(config_.n_layers));  // [n_layers]
  for (int32_t i = 0; i < config_.n_layers; ++i) {
    DeviceLayerKv& kv = seq.layers[size_t(i)];
    const int64_t slot = kv.SlotOf(pos);
    if (slot >= int64_t(kv.pos.size())) Grow(kv, seq.type, (slot / kFullSlotsStep + 1) * kFullSlotsStep);
    kv.pos[size_t(slot)] = pos;
    kv.slot_pos.Upload(&pos, 4, size_t(slot) * 4);
    slots[size_t(i)] = slot;
  }

  // Routed layers: a forced ratio draws each route here, a router on the device.
  std::vector<LayerRoutes> routes(static_cast<size_t>(config_.n_layers));  // [n_layers]
  for (int32_t i = 0; i < config_.n_layers; ++i) {
    const DeviceLayer& l = layers_[size_t(i)];
    if (session.plan.layers[size_t(i)].kind != LayerKind::kRouted) continue;
    routes[size_t(i)] = SessionLayerRoutes(session, i, l.router ? &*l.router : nullptr);
    if (routes[size_t(i)].forced_full_ratio < 0) continue;
    uint8_t full = 0;
    RouteTokens(&full, nullptr, &pos, 1, hidden, routes[size_t(i)]);
    const float logit = full ? 1.0f : -1.0f;
    route_logits_[size_t(i)].Upload(&logit, sizeof(float));
  }

  CommandBatch batch(device_);
  for (int32_t i = 0; i < config_.n_layers; ++i) {
    const DeviceLayer& l = layers_[size_t(i)];
    const LayerPlan& plan = session.plan.layers[size_t(i)];
    DeviceLayerKv& kv = seq.layers[size_t(i)];
    RecordRmsNorm(batch, kernels_, x_, l.attn_norm, xn_, 1, hidden, eps_, false);
    const bool routed = plan.kind == LayerKind::kRouted;
    if (routed && routes[size_t(i)].forced_full_ratio < 0) {
      RecordMatVec(batch, kernels_, l.router_weight, xn_, route_logits_[size_t(i)], 1);
      RecordAdd(batch, kernels_, l.router_bias, route_logits_[size_t(i)], 1);
    }
    RecordMatVec(batch, kernels_, l.q, xn_, q_, 1);
    RecordMatVec(batch, kernels_, l.k, xn_, k_, 1);
    RecordMatVec(batch, kernels_, l.v, xn_, v_, 1);
    if (l.biases) {
      RecordAdd(batch, kernels_, l.q_bias, q_, config_.n_heads * hd);
      RecordAdd(batch, kernels_, l.k_bias, k_, kv_row);
      RecordAdd(batch, kernels_, l.v_bias, v_, kv_row);
    }
    DeviceBuffer* q = &q_;
    DeviceBuffer* k = &k_;
    if (l.qk_norm) {
      RecordRmsNorm(batch, kernels_, q_, l.q_norm, qn_, config_.n_heads, hd, eps_, false);
      RecordRmsNorm(batch, kernels_, k_, l.k_norm, kn_, config_.n_kv_heads, hd, eps_, false);
      q = &qn_, k = &kn_;
    }
    const bool cache_positions = CachePositions(plan);
    if (cache_positions) batch.Copy(*q, 0, *q, size_t(config_.n_heads * hd) * 4, size_t(config_.n_heads * hd) * 4);
    if (plan.rope.enabled) {
      RecordRope(batch, kernels_, *q, cos_sin_, cache_positions ? 2 : 1, config_.n_heads, hd, 2 * i);
      RecordRope(batch, kernels_, *k, cos_sin_, 1, config_.n_kv_heads, hd, 2 * i);
    }
    const int64_t slot = slots[size_t(i)];
    if (seq.type == KvType::kBF16) {
      RecordToBF16(batch, kernels_, *k, kv.k, kv_row, slot * kv_row / 2);
      RecordToBF16(batch, kernels_, v_, kv.v, kv_row, slot * kv_row / 2);
    } else {
      batch.Copy(*k, 0, kv.k, size_t(slot * kv_row) * 4, size_t(kv_row) * 4);
      batch.Copy(v_, 0, kv.v, size_t(slot * kv_row) * 4, size_t(kv_row) * 4);
    }
    // Routed and per-head layers keep every key and narrow to the window per query or head.
    const DeviceAttention a{AttentionShape{config_.n_heads, config_.n_kv_heads, config_.head_dim},
                            1,
                            int64_t(kv.pos.size()),
                            0,
                            seq.type,
                            plan.kind == LayerKind::kFull ? Span{} : plan.span,
                            attention_scale_,
                            plan.kind == LayerKind::kPerHead ? plan.full_heads : std::vector<int32_t>{},
                            routed ? &route_logits_[size_t(i)] : nullptr,
                            cache_positions};
    RecordAttend(batch, kernels_, a, *q, kv.k, kv.v, kv.slot_pos, q_pos_, nullptr, scratch_, attn_);
    RecordMatVec(batch, kernels_, l.o, attn_, branch_, 1);
    AddBlock(batch, branch_, spec_.sandwich_norms ? &l.post_attn_norm : nullptr);
    RecordRmsNorm(batch, kernels_, x_, l.mlp_norm, xn_, 1, hidden, eps_, false);
    RecordMatVec(batch, kernels_, l.gate, xn_, gate_, 1);
    RecordMatVec(batch, kernels_, l.up, xn_, up_, 1);
    RecordGated(batch, kernels_, gate_, up_, act_, inter, spec_.activation == MlpActivation::kGeluTanh);
    RecordMatVec(batch, kernels_, l.down, act_, branch_, 1);
    AddBlock(batch, branch_, spec_.sandwich_norms ? &l.post_mlp_norm : nullptr);
  }
  if (logits) {
    RecordRmsNorm(batch, kernels_, x_, norm_, xn_, 1, hidden, eps_, false);
    RecordMatVec(batch, kernels_, head_, xn_, logits_, 1);
  }
  batch.Run();
  if (logits) logits_.Download(logits, size_t(config_.vocab_size) * 4);
  for (int32_t i = 0; i < config_.n_layers; ++i) {
    const LayerRoutes& r = routes[size_t(i)];
    if (!r.record || r.forced_full_ratio >= 0) continue;  // a forced draw recorded itself
    float logit = 0.0f;
    route_logits_[size_t(i)].Download(&logit, sizeof(float));
    r.record->push_back(RoutesFull(logit) ? 1 : 0);
  }
}

}  // namespace

std::unique_ptr<LanguageModel> BuildDeviceDecoder(const WeightSource& weights, const ModelConfig& config,
                                                  const std::string& origin, int device_index) {
  return std::make_unique<DeviceDecoder>(weights, config, origin, device_index);
}

}  // namespace swan
