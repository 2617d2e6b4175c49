// A loaded language model and the per-sequence state it runs with.
//
// Every architecture family is data (model/decoder_spec.h) that the one
// decoder (model/decoder.cc) runs; LoadModel() picks the family from
// config.json's "architectures" in one table (DecoderFamilies()).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "model/config.h"
#include "model/plan.h"
#include "ops/rope.h"
#include "ops/weight_type.h"
#include "util/byte_span.h"

namespace swan {

// Tokens fed in one call.
struct Batch {
  const int32_t* tokens = nullptr;  // [n]
  const int32_t* pos = nullptr;     // [n] absolute positions
  int64_t n = 0;
  // true: logits for every token ([n, vocab]); false: for the last ([1, vocab]).
  bool all_logits = true;
};

// How the routed layers of a plan (Switch Attention, docs/design.md §4) pick
// each token's branch, and who sees the routes.
struct RouteOptions {
  // In [0, 1]: routed layers ignore their routers and send each token to
  // full attention with this probability, drawn per layer and position from
  // `seed` (so chunking does not change the draw). It measures what a full
  // ratio costs on a model without routers. < 0: the learned routers decide.
  double forced_full_ratio = -1;
  uint64_t seed = 1;
  // [n_layers] or empty. When record[l] is set, every Forward appends the
  // route of each token it processes on routed layer l, in batch order
  // (1 = full attention, 0 = the window); other layers record nothing.
  std::vector<std::vector<uint8_t>*> record;
};

// One sequence: the attention plan it runs under and its KV cache.
struct Session {
  Session(const AttentionPlan& plan, const KvShape& shape, const KvCacheOptions& options);

  AttentionPlan plan;
  KvCache cache;
  std::vector<Rope> ropes;  // [n_layers] from plan.layers[i].rope
  RouteOptions routing;
  // A model that runs on a device keeps the sequence's keys and values
  // there, in state it puts here: freed with the session.
  std::shared_ptr<void> device_cache;
};

// One sequence's part of a batched forward step (LanguageModel::ForwardBatch):
// its tokens and positions, and the session whose cache they extend.
struct SequenceStep {
  Batch batch;
  Session* session = nullptr;
};

class LanguageModel {
 public:
  virtual ~LanguageModel() = default;

  virtual const ModelConfig& config() const = 0;
  // Bytes of the weights a forward step reads (projections and the output
  // head; not the embedding table, of which a step reads one row a token).
  virtual size_t WeightBytes() const = 0;
  // Where the projections and the output head lie in host memory, as a
  // decode step reads them (swan bench times a plain read of them beside
  // its decode); none for a model whose weights live on a device.
  virtual std::vector<ByteSpan> WeightSpans() const { return {}; }
  // The model's own attention (its default plan) as the config gives it.
  ModelAttentionDefaults AttentionDefaults() const;

  // Runs the batch through the model, writing its keys and values into the
  // session's cache; inputs longer than the cache's max_chunk are processed
  // in chunks. logits: [n, vocab] or [1, vocab] (see Batch::all_logits).
  virtual void Forward(float* logits, const Batch& batch, Session& session) const = 0;

  // One forward step over several sequences, each with its own session
  // (plan, cache, routing): the same logits and cache contents as a Forward
  // per step, up to float rounding. Families that override it run every
  // linear layer once over all the steps' tokens, so a decode step reads
  // the weights once for all sequences, and attention per sequence over
  // its own cache; this default calls Forward for each step in turn.
  // logits: each step's rows in step order, n of them with
  // batch.all_logits, else 1 ([n_steps, vocab] for one decode token each).
  // Throws std::invalid_argument for an empty step or a session that
  // appears twice.
  virtual void ForwardBatch(float* logits, const std::vector<SequenceStep>& steps) const;

  // The bytes the session's keys and values take where they live: its
  // host cache, or a device's memory for a model that runs on one.
  virtual size_t CacheBytes(const Session& session) const;
  // False when the keys and values live on a device: the host cache's
  // snapshots (the server's prompt cache) would hold none of them.
  virtual bool CacheOnHost() const { return true; }
  // Puts random K/V rows at positions [0, depth) into every layer of a
  // fresh session's cache, as if a prefill had run (swan bench --fill
  // random), wherever the cache lives; a linear layer's state gets random
  // positive sums of `depth` tokens.   chunk: rows written per call
  virtual void FillCacheRandom(Session& session, int64_t depth, int64_t chunk) const;

  // The plan `spec` (see model/plan.h) resolved for this model.
  AttentionPlan ResolvePlan(const std::string& spec) const;
  std::unique_ptr<Session> NewSession(const AttentionPlan& plan, const KvCacheOptions& options = {}) const;
  KvShape kv_shape() const;
};

// The most one-token steps a ForwardBatch computes each exactly as it would
// alone: the rows its linear layers' GEMV takes (ops/linear.h); more go to
// a GEMM whose rounding depends on the number of rows. A caller that needs
// each sequence's logits not to depend on the others (the server) calls
// ForwardBatch on groups of this many.
int64_t InvariantBatchSteps();

// Throws std::invalid_argument unless every step has a session and tokens,
// and no session appears twice (its cache would be written out of order).
void CheckSteps(const std::vector<SequenceStep>& steps);

// The attention a config describes (layer spans, RoPE), by the config's
// architecture, without loading weights. Throws for unsupported architectures.
ModelAttentionDefaults AttentionDefaultsFor(const ModelConfig& config);

// P, the size of φ in the model's linear layers: 2 · its Hedgehog F
// (swan_linear_feature_dim, or head_dim / 2).
int32_t LinearPhiDim(const ModelConfig& config);

// The bytes the KV cache of a layer under `layer` holds after n_ctx tokens
// (LayerKvBytesAt; a per-head layer's full heads and ring together; a
// linear layer's state, the same at any n_ctx).
size_t PlanLayerKvBytesAt(const LayerPlan& layer, const KvShape& shape, const KvCacheOptions& options, int64_t n_ctx);

// The hyperparameters of a model directory or a GGUF file.
ModelConfig ModelConfigOf(const std::string& path);

struct LoadOptions {
  // The type to hold the linear layers and the embedding table in (f16,
  // q8_0, ...), converted when loaded; unset: as the checkpoint stores
  // them. Rows that a block format cannot hold (not a multiple of 32
  // values) stay as stored.
  std::optional<WeightType> weights;
  // >= 0: the forward runs on that Vulkan device (gpu/device_decoder.h);
  // -1: on the CPU.
  int vulkan_device = -1;
};

class WeightSource;
// The model of these weights on the CPU (model/decoder.h's BuildDecoder) or,
// for vulkan_device >= 0, on that Vulkan device (gpu/device_decoder.h).
std::unique_ptr<LanguageModel> BuildModelOn(const WeightSource& weights, const ModelConfig& config,
                                            const std::string& origin, int vulkan_device);

// Loads a Hugging Face model directory (config.json, *.safetensors), or a
// GGUF file (model/gguf_weights.h; weights and hyperparameters, not yet its
// tokenizer). Throws std::runtime_error for unsupported architectures and
// bad files.
std::unique_ptr<LanguageModel> LoadModel(const std::string& dir, const LoadOptions& options = {});

}  // namespace swan
