#include "gpu/device_decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <vector>

#include "attention/head_groups.h"
#include "gpu/device_ops.h"
#include "kv/kv_cache.h"
#include "kv/ring_rows.h"
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

// Caches grow by this many slots at a time (a ring up to its size), as the
// host cache's pages do.
constexpr int64_t kSlotsStep = 256;
// The most attention partials one call writes: a long prefill's query rows
// over a long cache go in groups.
constexpr int64_t kAttendScratchBytes = int64_t(64) << 20;

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

// Keys and values of one sequence for a group of a layer's KV heads that
// see one span (every head, or a per-head layer's full heads or its window
// heads, as kv/'s stores): slots as kv/'s SlotTable numbers them, the
// position in each (-1 empty) mirrored on the host.
struct DeviceKvStore {
  std::vector<int32_t> kv_heads;  // ascending; empty: every KV head
  Span span;                      // what the heads' queries see (routed layers: the window)
  int32_t sinks = 0;
  int64_t ring_rows = 0;     // 0: every position, slot = position
  std::vector<int32_t> pos;  // [slots]
  DeviceBuffer k, v;         // [slots, stored heads, head_dim] of the sequence's KV type
  DeviceBuffer slot_pos;     // [slots] int32
  // The slots the step being recorded writes, as runs of consecutive slots
  // from step rows row ...
  struct Run {
    int64_t slot, row, count;
  };
  std::vector<Run> runs;
  int64_t SlotOf(int64_t p) const { return SlotTable(sinks, ring_rows).SlotOf(p); }
  // The slots that hold positions [0, last]: whole steps, up to a ring's
  // size (a ring wraps only once it is whole, so slot = position until then).
  int64_t SlotsFor(int64_t last) const {
    const int64_t slots = (last / kSlotsStep + 1) * kSlotsStep;
    return ring_rows ? std::min<int64_t>(slots, sinks + ring_rows) : slots;
  }
};

// A session's state on the device (Session::device_cache). It holds the
// device, destroyed after the buffers, so a session may outlive its model.
struct DeviceSequence {
  std::shared_ptr<VulkanDevice> device;
  const void* owner = nullptr;                     // the decoder that made it
  std::vector<std::vector<DeviceKvStore>> layers;  // [n_layers][stores]
  KvType type = KvType::kF32;                      // f32 or bf16 (the session's KvCacheOptions)
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
  void ForwardBatch(float* logits, const std::vector<SequenceStep>& steps) const override;
  size_t CacheBytes(const Session& session) const override;
  bool CacheOnHost() const override { return false; }
  void FillCacheRandom(Session& session, int64_t depth, int64_t chunk) const override;

 private:
  void Load(const WeightSource& w, const DecoderTensor& t);
  DeviceMatrix Upload(const LinearWeight& w);
  void CheckSession(const Session& session) const;
  DeviceSequence& SequenceOf(Session& session, int32_t first_pos) const;
  void Grow(DeviceKvStore& kv, KvType type, int64_t slots) const;
  // Sizes the step scratch for n token rows and n_logits rows of logits.
  void Reserve(int64_t n, int64_t n_logits) const;
  // One pass over the steps' tokens, each step within its cache's
  // max_chunk: the linear layers once over every row, attention per
  // sequence over its own cache. logits as ForwardBatch's.
  void RunSteps(float* logits, const std::vector<SequenceStep>& steps) const;
  // Host-side work of layer i before its dispatches: the cosines and sines
  // of every row, and the forced routes. Returns whether a row needs them.
  struct LayerNeeds {
    bool rope = false, cache_positions = false, router = false, forced = false;
  };
  LayerNeeds PrepareLayer(int32_t i, const std::vector<SequenceStep>& steps, const StepRows& rows,
                          std::vector<LayerRoutes>& routes, float* cos_sin) const;
  // One query row's attention over `slots` cache slots, and how many query
  // rows one call takes there: their partials fit kAttendScratchBytes.
  DeviceAttention OneQuery(size_t slots) const {
    DeviceAttention a;
    a.shape = AttentionShape{config_.n_heads, config_.n_kv_heads, config_.head_dim};
    a.n_q = 1, a.n_rows = int64_t(slots);
    return a;
  }
  int64_t AttendGroup(size_t slots) const {
    return std::max<int64_t>(1, kAttendScratchBytes / (AttendScratchFloats(OneQuery(slots)) * 4));
  }
  // Adds the block output `branch` [n, hidden] into the stream, through `norm` when set.
  void AddBlock(CommandBatch& batch, const DeviceBuffer& branch, const DeviceBuffer* norm, int64_t n) const;

  ModelConfig config_;
  DecoderSpec spec_;
  std::string origin_;
  std::shared_ptr<VulkanDevice> device_holder_;  // shared with the sessions' caches
  VulkanDevice& device_;
  mutable DeviceKernels kernels_;
  float embed_scale_ = 1.0f, attention_scale_ = 0.0f, eps_ = 1e-6f;
  size_t weight_bytes_ = 0;
  LinearWeight embed_;  // [vocab, hidden] on the host: a step reads one row a token
  std::vector<DeviceLayer> layers_;
  DeviceBuffer norm_;  // [hidden]
  DeviceMatrix head_;  // [vocab, hidden]

  mutable std::mutex mutex_;  // one step at a time: the scratch below is shared
  // Scratch for rows_ token rows (n of a step): x, xn, branch,
  // branch_normed [n, hidden]; q, qn [2, n, heads * hd] (the second half:
  // pos:cache's queries for the sinks); attn [n, heads * hd]; k, kn, v
  // [n, kv_heads * hd]; gate, up, act [n, intermediate]; cos_sin
  // [n_layers, 2, n, head_dim] (RoPE at each row's position, and at
  // pos:cache's position for the sinks); q_pos [n] int32; head_in
  // [n_logits, hidden] the rows whose logits are wanted; logits
  // [n_logits, vocab]; scratch: attention's partials (AttendScratchFloats).
  mutable int64_t rows_ = 0, logit_rows_ = 0;
  mutable DeviceBuffer x_, xn_, branch_, branch_normed_, q_, qn_, attn_, k_, kn_, v_, gate_, up_, act_, cos_sin_,
      q_pos_, head_in_, logits_, scratch_;
  // [n_layers] of [n]: routed layers' route logits (> 0: full), from the
  // device's router, and those a forced ratio drew on the host.
  mutable std::vector<DeviceBuffer> route_logits_, forced_logits_;
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
  Reserve(1, 1);
}

void DeviceDecoder::Reserve(int64_t n, int64_t n_logits) const {
  auto floats = [&](int64_t count) { return DeviceBuffer(device_, size_t(count) * sizeof(float)); };
  if (n > rows_) {
    const int64_t hidden = config_.hidden_size, hd = config_.head_dim, inter = config_.intermediate_size;
    const int64_t qw = int64_t(config_.n_heads) * hd, kw = int64_t(config_.n_kv_heads) * hd;
    x_ = floats(n * hidden), xn_ = floats(n * hidden), branch_ = floats(n * hidden);
    branch_normed_ = floats(n * hidden), q_ = floats(2 * n * qw), qn_ = floats(2 * n * qw), attn_ = floats(n * qw);
    k_ = floats(n * kw), kn_ = floats(n * kw), v_ = floats(n * kw);
    gate_ = floats(n * inter), up_ = floats(n * inter), act_ = floats(n * inter);
    cos_sin_ = floats(int64_t(config_.n_layers) * 2 * n * hd), q_pos_ = floats(n);
    route_logits_.clear(), forced_logits_.clear();
    for (int32_t i = 0; i < config_.n_layers; ++i)
      route_logits_.push_back(floats(n)), forced_logits_.push_back(floats(n));
    rows_ = n;
  }
  if (n_logits > logit_rows_) {
    head_in_ = floats(n_logits * config_.hidden_size), logits_ = floats(n_logits * config_.vocab_size);
    logit_rows_ = n_logits;
  }
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

void DeviceDecoder::CheckSession(const Session& session) const {
  const AttentionPlan& plan = session.plan;
  if (int32_t(plan.layers.size()) != config_.n_layers)
    throw std::invalid_argument("Forward: the session's plan does not fit this model");
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const LayerPlan& l = plan.layers[i];
    if (l.kind == LayerKind::kLinear)
      throw std::invalid_argument(std::string("attention plan '") + plan.spec + "': layer " + std::to_string(i) +
                                  " is " + LayerKindName(l.kind) +
                                  ", which runs on the CPU only for now (leave out --device)");
    const bool split =
        l.kind == LayerKind::kPerHead && !l.full_heads.empty() && int32_t(l.full_heads.size()) < config_.n_kv_heads;
    if (split && config_.n_kv_heads > 32)
      throw std::invalid_argument("attention plan '" + plan.spec + "': layer " + std::to_string(i) +
                                  " splits its KV heads; on a device, per-head layers of models with at most 32 KV "
                                  "heads (this one has " +
                                  std::to_string(config_.n_kv_heads) + "; leave out --device)");
  }
  std::vector<const RouterWeights*> routers;  // [n_layers]
  for (const DeviceLayer& l : layers_) routers.push_back(l.router ? &*l.router : nullptr);
  RequireRouters(session, routers, origin_);
}

void DeviceDecoder::Grow(DeviceKvStore& kv, KvType type, int64_t slots) const {
  const int64_t heads = kv.kv_heads.empty() ? config_.n_kv_heads : int64_t(kv.kv_heads.size());
  const int64_t old = int64_t(kv.pos.size()), row = heads * config_.head_dim;
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
}

size_t DeviceDecoder::CacheBytes(const Session& session) const {
  const auto* seq = static_cast<const DeviceSequence*>(session.device_cache.get());
  if (!seq || seq->owner != this) return 0;
  size_t bytes = 0;
  for (const std::vector<DeviceKvStore>& stores : seq->layers)
    for (const DeviceKvStore& kv : stores) bytes += kv.k.bytes() + kv.v.bytes();
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
      // A per-head layer's full heads and window heads apart, as kv/ keeps them.
      std::vector<HeadGroup> groups = {HeadGroup{{}, l.kind == LayerKind::kFull ? Span{} : l.span, {}}};
      if (l.kind == LayerKind::kPerHead) groups = SplitHeads(l.full_heads, config_.n_kv_heads, l.span);
      std::vector<DeviceKvStore> stores;
      for (HeadGroup& group : groups) {
        DeviceKvStore kv;
        if (int32_t(group.kv_heads.size()) < config_.n_kv_heads) kv.kv_heads = std::move(group.kv_heads);
        kv.span = group.span;
        // The host cache's ring; a routed layer keeps every key, for its rows routed full.
        if (l.kind != LayerKind::kRouted) kv.ring_rows = RingRows(kv.span, session.cache.options());
        if (kv.ring_rows) kv.sinks = kv.span.sinks;
        Grow(kv, fresh->type, kv.SlotsFor(0));
        stores.push_back(std::move(kv));
      }
      fresh->layers.push_back(std::move(stores));
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
  CheckSession(session);
  const std::lock_guard<std::mutex> lock(mutex_);
  DeviceSequence& seq = SequenceOf(session, 0);  // a fresh one
  // The rows the host cache's fill writes: `chunk` random rows, repeated.
  const int64_t row = int64_t(config_.n_kv_heads) * config_.head_dim;
  const RandomKvRows rows(chunk, row);
  const bool bf16 = seq.type == KvType::kBF16;
  for (std::vector<DeviceKvStore>& stores : seq.layers)
    for (DeviceKvStore& kv : stores) {
      // Each slot's last position: a ring keeps the sinks and the newest window.
      const int64_t first_kept = kv.ring_rows ? std::max<int64_t>(kv.sinks, depth - kv.ring_rows) : 0;
      Grow(kv, seq.type, kv.SlotsFor(std::max<int64_t>(depth - 1, 0)));
      const int64_t slots = int64_t(kv.pos.size());
      const int64_t width = kv.kv_heads.empty() ? row : int64_t(kv.kv_heads.size()) * config_.head_dim;
      std::vector<float> k_rows(size_t(slots * width)), v_rows(size_t(slots * width));  // [slots, width]
      for (int64_t p = 0; p < depth; ++p) {
        if (p >= kv.sinks && p < first_kept) continue;
        const int64_t slot = kv.SlotOf(p), from = (p % chunk) * row;
        if (kv.kv_heads.empty()) {
          std::copy_n(rows.k.begin() + from, row, k_rows.begin() + slot * width);
          std::copy_n(rows.v.begin() + from, row, v_rows.begin() + slot * width);
        } else {
          GatherHeads(k_rows.data() + slot * width, rows.k.data() + from, 1, config_.n_kv_heads, config_.head_dim,
                      kv.kv_heads);
          GatherHeads(v_rows.data() + slot * width, rows.v.data() + from, 1, config_.n_kv_heads, config_.head_dim,
                      kv.kv_heads);
        }
        kv.pos[size_t(slot)] = int32_t(p);
      }
      if (bf16) {
        std::vector<uint16_t> k16(k_rows.size()), v16(v_rows.size());  // [slots, width]
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
  CheckSession(session);
  ForwardByPasses(logits, batch, session, config_.vocab_size,
                  [&](float* part_logits, const std::vector<SequenceStep>& steps) { RunSteps(part_logits, steps); });
}

void DeviceDecoder::ForwardBatch(float* logits, const std::vector<SequenceStep>& steps) const {
  CheckSteps(steps);
  for (const SequenceStep& step : steps) CheckSession(*step.session);
  ForwardBatchByPasses(*this, logits, steps,
                       [&](float* part_logits, const std::vector<SequenceStep>& part) { RunSteps(part_logits, part); });
}

void DeviceDecoder::AddBlock(CommandBatch& batch, const DeviceBuffer& branch, const DeviceBuffer* norm,
                             int64_t n) const {
  const int64_t hidden = config_.hidden_size;
  if (!norm) return RecordAdd(batch, kernels_, branch, x_, n * hidden);
  RecordRmsNorm(batch, kernels_, branch, *norm, branch_normed_, n, hidden, eps_, false);
  RecordAdd(batch, kernels_, branch_normed_, x_, n * hidden);
}

DeviceDecoder::LayerNeeds DeviceDecoder::PrepareLayer(int32_t i, const std::vector<SequenceStep>& steps,
                                                      const StepRows& rows, std::vector<LayerRoutes>& routes,
                                                      float* cos_sin) const {
  const int64_t n = rows.n(), hd = config_.head_dim;
  const DeviceLayer& l = layers_[size_t(i)];
  LayerNeeds needs;
  std::vector<float> forced;  // [n] a forced draw's route logits, made at the first one
  for (size_t s = 0; s < steps.size(); ++s) {
    const Session& session = *steps[s].session;
    const LayerPlan& plan = session.plan.layers[size_t(i)];
    const Batch& b = steps[s].batch;
    const int64_t first = rows.first[s];
    // Rows at their positions, then at pos:cache's; rows without RoPE here turn by 0.
    float* at_pos = cos_sin + first * hd;
    float* at_cache = cos_sin + (n + first) * hd;
    if (plan.rope.enabled) {
      needs.rope = true;
      session.ropes[size_t(i)].CosSin(b.pos, b.n, at_pos);
      if (CachePositions(plan)) {
        needs.cache_positions = true;
        std::vector<int32_t> cache_pos(b.pos, b.pos + b.n);  // [b.n]
        for (int32_t& p : cache_pos) p = std::min(p, plan.span.sinks + plan.span.window - 1);
        session.ropes[size_t(i)].CosSin(cache_pos.data(), b.n, at_cache);
      } else {  // unread: the second half's rows of another sequence's queries
        std::copy_n(at_pos, b.n * hd, at_cache);
      }
    } else {
      for (int64_t t = 0; t < b.n; ++t)
        for (float* row : {at_pos + t * hd, at_cache + t * hd})
          std::fill_n(row, hd / 2, 1.0f), std::fill_n(row + hd / 2, hd / 2, 0.0f);
    }
    if (plan.kind != LayerKind::kRouted) continue;
    routes[s] = SessionLayerRoutes(session, i, l.router ? &*l.router : nullptr);
    if (routes[s].forced_full_ratio < 0) {
      needs.router = true;
      continue;
    }
    needs.forced = true;
    forced.resize(size_t(n), -1.0f);
    std::vector<uint8_t> full(static_cast<size_t>(b.n));  // [b.n]
    RouteTokens(full.data(), nullptr, b.pos, b.n, config_.hidden_size, routes[s]);
    for (int64_t t = 0; t < b.n; ++t) forced[size_t(first + t)] = full[size_t(t)] ? 1.0f : -1.0f;
  }
  if (needs.forced) forced_logits_[size_t(i)].Upload(forced.data(), forced.size() * sizeof(float));
  return needs;
}

void DeviceDecoder::RunSteps(float* logits, const std::vector<SequenceStep>& steps) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  const StepRows rows = ConcatSteps(steps);
  const int64_t n = rows.n(), n_logits = int64_t(rows.logit_rows.size());
  const int64_t hidden = config_.hidden_size, hd = config_.head_dim, inter = config_.intermediate_size;
  const int64_t qw = int64_t(config_.n_heads) * hd, kv_row = int64_t(config_.n_kv_heads) * hd;
  std::vector<DeviceSequence*> seqs;  // [n_steps]
  for (const SequenceStep& step : steps) {
    DeviceSequence& seq = SequenceOf(*step.session, step.batch.pos[0]);
    for (int64_t t = 0; t < step.batch.n; ++t)
      if (step.batch.pos[t] != seq.next_pos + t)
        throw std::invalid_argument("Forward on a device: positions continue the sequence");
    seqs.push_back(&seq);
  }
  Reserve(n, n_logits);

  std::vector<float> x(static_cast<size_t>(n * hidden));  // [n, hidden] the tokens' embeddings
  Embed(x.data(), embed_.view(), rows.tokens.data(), n);
  if (embed_scale_ != 1.0f)
    for (float& v : x) v *= embed_scale_;
  x_.Upload(x.data(), x.size() * 4);
  std::vector<int32_t> positions(static_cast<size_t>(n));  // [n]
  for (size_t s = 0; s < steps.size(); ++s)
    std::copy_n(steps[s].batch.pos, steps[s].batch.n, positions.begin() + rows.first[s]);
  q_pos_.Upload(positions.data(), positions.size() * 4);

  // Each store's slots for its sequence's rows; stores grow first.
  for (size_t s = 0; s < steps.size(); ++s)
    for (std::vector<DeviceKvStore>& stores : seqs[s]->layers)
      for (DeviceKvStore& kv : stores) {
        const Batch& b = steps[s].batch;
        Grow(kv, seqs[s]->type, kv.SlotsFor(b.pos[b.n - 1]));
        kv.runs.clear();
        for (int64_t t = 0; t < b.n; ++t) {
          const int64_t slot = kv.SlotOf(b.pos[t]);
          kv.pos[size_t(slot)] = b.pos[t];
          if (!kv.runs.empty() && kv.runs.back().slot + kv.runs.back().count == slot)
            kv.runs.back().count += 1;
          else
            kv.runs.push_back({slot, rows.first[s] + t, 1});
        }
        for (const DeviceKvStore::Run& run : kv.runs)
          kv.slot_pos.Upload(kv.pos.data() + run.slot, size_t(run.count) * 4, size_t(run.slot) * 4);
      }

  std::vector<std::vector<LayerRoutes>> routes(size_t(config_.n_layers),
                                               std::vector<LayerRoutes>(steps.size()));  // [n_layers, n_steps]
  std::vector<float> cos_sin(static_cast<size_t>(config_.n_layers * 2 * n * hd));        // [n_layers, 2, n, hd]
  std::vector<LayerNeeds> needs;                                                         // [n_layers]
  for (int32_t i = 0; i < config_.n_layers; ++i)
    needs.push_back(PrepareLayer(i, steps, rows, routes[size_t(i)], cos_sin.data() + i * 2 * n * hd));
  cos_sin_.Upload(cos_sin.data(), cos_sin.size() * 4);

  // Attention's partials for the largest group of query rows, sized before
  // any dispatch binds them.
  int64_t partial_bytes = 0;
  for (size_t s = 0; s < steps.size(); ++s)
    for (const std::vector<DeviceKvStore>& stores : seqs[s]->layers)
      for (const DeviceKvStore& kv : stores)
        partial_bytes = std::max(partial_bytes, std::min(AttendGroup(kv.pos.size()), steps[s].batch.n) *
                                                    AttendScratchFloats(OneQuery(kv.pos.size())) * 4);
  if (int64_t(scratch_.bytes()) < partial_bytes) scratch_ = DeviceBuffer(device_, size_t(partial_bytes));

  CommandBatch batch(device_);
  for (int32_t i = 0; i < config_.n_layers; ++i) {
    const DeviceLayer& l = layers_[size_t(i)];
    const LayerNeeds& need = needs[size_t(i)];
    RecordRmsNorm(batch, kernels_, x_, l.attn_norm, xn_, n, hidden, eps_, false);
    if (need.router) {
      RecordMatVec(batch, kernels_, l.router_weight, xn_, route_logits_[size_t(i)], n);
      RecordAdd(batch, kernels_, l.router_bias, route_logits_[size_t(i)], n, 1.0f, 1);
    }
    RecordMatVec(batch, kernels_, l.q, xn_, q_, n);
    RecordMatVec(batch, kernels_, l.k, xn_, k_, n);
    RecordMatVec(batch, kernels_, l.v, xn_, v_, n);
    if (l.biases) {
      RecordAdd(batch, kernels_, l.q_bias, q_, n * qw, 1.0f, qw);
      RecordAdd(batch, kernels_, l.k_bias, k_, n * kv_row, 1.0f, kv_row);
      RecordAdd(batch, kernels_, l.v_bias, v_, n * kv_row, 1.0f, kv_row);
    }
    DeviceBuffer* q = &q_;
    DeviceBuffer* k = &k_;
    if (l.qk_norm) {
      RecordRmsNorm(batch, kernels_, q_, l.q_norm, qn_, n * config_.n_heads, hd, eps_, false);
      RecordRmsNorm(batch, kernels_, k_, l.k_norm, kn_, n * config_.n_kv_heads, hd, eps_, false);
      q = &qn_, k = &kn_;
    }
    if (need.cache_positions) batch.Copy(*q, 0, *q, size_t(n * qw) * 4, size_t(n * qw) * 4);
    if (need.rope) {
      RecordRope(batch, kernels_, *q, cos_sin_, need.cache_positions ? 2 * n : n, config_.n_heads, hd, 2 * i * n);
      RecordRope(batch, kernels_, *k, cos_sin_, n, config_.n_kv_heads, hd, 2 * i * n);
    }
    for (size_t s = 0; s < steps.size(); ++s) {
      DeviceSequence& seq = *seqs[s];
      const LayerPlan& plan = steps[s].session->plan.layers[size_t(i)];
      const bool routed = plan.kind == LayerKind::kRouted;
      const bool forced = routed && routes[size_t(i)][s].forced_full_ratio >= 0;
      // A store per group of KV heads that see one span (a per-head layer's two).
      for (DeviceKvStore& kv : seq.layers[size_t(i)]) {
        for (const DeviceKvStore::Run& run : kv.runs) {
          RecordStoreKv(batch, kernels_, seq.type, *k, kv.k, run.count, config_.n_kv_heads, hd, run.row, run.slot,
                        kv.kv_heads);
          RecordStoreKv(batch, kernels_, seq.type, v_, kv.v, run.count, config_.n_kv_heads, hd, run.row, run.slot,
                        kv.kv_heads);
        }
        // Routed layers keep every key and narrow to the window per query.
        DeviceAttention a{AttentionShape{config_.n_heads, config_.n_kv_heads, config_.head_dim},
                          0,
                          int64_t(kv.pos.size()),
                          0,
                          seq.type,
                          kv.span,
                          attention_scale_,
                          kv.kv_heads,
                          !routed  ? nullptr
                          : forced ? &forced_logits_[size_t(i)]
                                   : &route_logits_[size_t(i)],
                          CachePositions(plan) && !kv.span.full()};
        a.q_rows = n;
        const int64_t group = AttendGroup(kv.pos.size()), first = rows.first[s], count = steps[s].batch.n;
        for (int64_t r = 0; r < count; r += group) {
          a.first_q = first + r, a.n_q = std::min(group, count - r);
          RecordAttend(batch, kernels_, a, *q, kv.k, kv.v, kv.slot_pos, q_pos_, nullptr, scratch_, attn_);
        }
      }
    }
    RecordMatVec(batch, kernels_, l.o, attn_, branch_, n);
    AddBlock(batch, branch_, spec_.sandwich_norms ? &l.post_attn_norm : nullptr, n);
    RecordRmsNorm(batch, kernels_, x_, l.mlp_norm, xn_, n, hidden, eps_, false);
    RecordMatVec(batch, kernels_, l.gate, xn_, gate_, n);
    RecordMatVec(batch, kernels_, l.up, xn_, up_, n);
    RecordGated(batch, kernels_, gate_, up_, act_, n * inter, spec_.activation == MlpActivation::kGeluTanh);
    RecordMatVec(batch, kernels_, l.down, act_, branch_, n);
    AddBlock(batch, branch_, spec_.sandwich_norms ? &l.post_mlp_norm : nullptr, n);
  }
  if (n_logits > 0) {
    for (int64_t j = 0; j < n_logits; ++j)
      batch.Copy(x_, size_t(rows.logit_rows[size_t(j)] * hidden) * 4, head_in_, size_t(j * hidden) * 4,
                 size_t(hidden) * 4);
    RecordRmsNorm(batch, kernels_, head_in_, norm_, xn_, n_logits, hidden, eps_, false);
    RecordMatVec(batch, kernels_, head_, xn_, logits_, n_logits);
  }
  batch.Run();
  if (n_logits > 0) logits_.Download(logits, size_t(n_logits * config_.vocab_size) * 4);
  for (size_t s = 0; s < steps.size(); ++s) {
    seqs[s]->next_pos += steps[s].batch.n;
    for (int32_t i = 0; i < config_.n_layers; ++i) {
      const LayerRoutes& r = routes[size_t(i)][s];
      if (!r.record || r.forced_full_ratio >= 0) continue;              // a forced draw recorded itself
      std::vector<float> logit(static_cast<size_t>(steps[s].batch.n));  // [b.n]
      route_logits_[size_t(i)].Download(logit.data(), logit.size() * sizeof(float), size_t(rows.first[s]) * 4);
      for (float v : logit) r.record->push_back(RoutesFull(v) ? 1 : 0);
    }
  }
}

}  // namespace

std::unique_ptr<LanguageModel> BuildDeviceDecoder(const WeightSource& weights, const ModelConfig& config,
                                                  const std::string& origin, int device_index) {
  return std::make_unique<DeviceDecoder>(weights, config, origin, device_index);
}

}  // namespace swan
