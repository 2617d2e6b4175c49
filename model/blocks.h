// The shared pieces that architecture families assemble: a self-attention
// block (QKV projections, RoPE, KV cache, attention, output projection) and
// a gated MLP block (SwiGLU, GELU-tanh). Both add their result into the
// residual stream.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attention/attention.h"
#include "kv/kv_cache.h"
#include "model/decoder_spec.h"
#include "model/model.h"
#include "model/plan.h"
#include "ops/linear.h"
#include "ops/rope.h"

namespace swan {

// Linear weights in nn.Linear layout [out, in], f32 or bf16.
struct AttentionWeights {
  LinearWeight q;  // [n_heads * head_dim, hidden]
  LinearWeight k;  // [n_kv_heads * head_dim, hidden]
  LinearWeight v;  // [n_kv_heads * head_dim, hidden]
  LinearWeight o;  // [hidden, n_heads * head_dim]
  // Optional (empty = none): q/k/v projection biases (Qwen2) and QK-norm
  // weights, an RMSNorm over each head of q and k before RoPE (Gemma 3;
  // store them as GemmaNormWeight() for Gemma's (1 + weight)).
  std::vector<float> q_bias;  // [n_heads * head_dim]
  std::vector<float> k_bias;  // [n_kv_heads * head_dim]
  std::vector<float> v_bias;  // [n_kv_heads * head_dim]
  std::vector<float> q_norm;  // [head_dim]
  std::vector<float> k_norm;  // [head_dim]
  // A linear layer's Hedgehog feature maps, applied to q and k after RoPE
  // (attention/hedgehog.h; empty = the layer has none).
  int32_t feature_dim = 0;  // F
  std::vector<float> fq_w;  // [n_heads, head_dim, F]
  std::vector<float> fq_b;  // [n_heads, F]
  std::vector<float> fk_w;  // [n_kv_heads, head_dim, F]
  std::vector<float> fk_b;  // [n_kv_heads, F]
  // LoLCATs' hybrid (linear:W): each head's window weight γ = σ(θ) of
  // self_attn.window_factor (attention/linear_attention.h; empty = none).
  std::vector<float> window_factor;  // [n_heads]
};

// A routed layer's router (Switch Attention, docs/design.md §4): a token goes to
// full attention iff weight · xn + bias > 0 (sigmoid > 0.5), xn being the
// layer's normed attention input (what Q, K and V see); one route per token,
// shared by all heads. Stored as model.layers.{l}.self_attn.router.weight
// [1, hidden] and model.layers.{l}.self_attn.router.bias [1].
struct RouterWeights {
  std::vector<float> weight;  // [hidden]
  float bias = 0.0f;
};

// Where a routed layer's routes come from, and where they are recorded.
struct LayerRoutes {
  const RouterWeights* router = nullptr;  // the learned router; unused when forced
  double forced_full_ratio = -1;          // >= 0: a seeded draw instead (RouteOptions)
  uint64_t seed = 1;
  int32_t layer = 0;                       // so that layers draw differently
  std::vector<uint8_t>* record = nullptr;  // appends each token's route; may be null
};

// Each token's route: 1 = full attention, 0 = the window.
//   route_full [n]; xn [n, hidden]; pos [n] (what the forced draw depends on)
void RouteTokens(uint8_t* route_full, const float* xn, const int32_t* pos, int64_t n, int64_t hidden,
                 const LayerRoutes& routes);

// Layer `layer`'s routes under the session's RouteOptions, with its router
// (null when the model has none; then the ratio must be forced).
LayerRoutes SessionLayerRoutes(const Session& session, int32_t layer, const RouterWeights* router);

// Checks before a forward pass that every routed layer of the session's
// plan can route: it has a router, or the session forces a ratio. Throws
// std::runtime_error naming the weights file and the missing tensor, and
// how to train a router; std::invalid_argument for a forced ratio above 1.
//   routers [n_layers], null = the layer has none; `origin` the model
//   directory (or another name for the weights)
void RequireRouters(const Session& session, const std::vector<const RouterWeights*>& routers,
                    const std::string& origin);

struct MlpWeights {
  LinearWeight gate;  // [intermediate, hidden]
  LinearWeight up;    // [intermediate, hidden]
  LinearWeight down;  // [hidden, intermediate]
};

struct BlockSizes {
  int64_t hidden = 0;
  int64_t intermediate = 0;
  AttentionShape heads;
};
// A model's block sizes, from its config.
inline BlockSizes BlockSizesOf(const ModelConfig& c) {
  return BlockSizes{c.hidden_size, c.intermediate_size, AttentionShape{c.n_heads, c.n_kv_heads, c.head_dim}};
}

// What the attention block of one layer runs with.
struct AttentionLayer {
  const AttentionWeights* weights = nullptr;
  const Rope* rope = nullptr;
  Span span;
  LayerKvCache* cache = nullptr;
  PositionMode position_mode = PositionMode::kAbsolute;
  float scale = 0.0f;         // attention logit scale; 0 = 1/sqrt(head_dim)
  float qk_norm_eps = 1e-6f;  // eps of the QK-norm, when the weights have one
  // Set on routed layers (their cache keeps every key): each token runs full
  // attention or `span`, as its route says. A layer whose cache keeps every
  // key but whose span is a window must have it (see AttentionBlock).
  const LayerRoutes* routes = nullptr;
};

// residual += o_proj(attention(rope(q_proj(xn)), cache ∪ rope(k_proj(xn)), v_proj(xn)))
// (HF LlamaAttention; keys and values of the n tokens are written into the
// cache first, so the chunk's queries see each other causally). With biases
// and QK-norm: q = rope(norm(q_proj(xn) + q_bias)), the same for k. On a
// routed layer each query runs full causal attention or the window span as
// its route says (attention/routed.h: no work for the other branch). On a
// linear layer (its cache is a state) the keys and values join the state,
// and each query reads it through the feature maps.
//   residual, xn [n, hidden]; pos [n]
void AttentionBlock(float* residual, const float* xn, const int32_t* pos, int64_t n, const AttentionLayer& layer,
                    const BlockSizes& sizes);

// One sequence's rows in a batched attention block: rows [first, first + n)
// of the batch, at positions pos, with the sequence's own RoPE, span,
// cache, position mode and routes in `layer`.
struct AttentionRows {
  int64_t first = 0;
  int64_t n = 0;
  const int32_t* pos = nullptr;  // [n]
  AttentionLayer layer;
};

// AttentionBlock over several sequences at once: the q/k/v and output
// projections run once over all n rows (one read of the weights for every
// sequence), RoPE, the cache write and attention per sequence on its rows.
// Every part has the same weights, scale and QK-norm eps; the parts cover
// rows 0..n in order.   residual, xn [n, hidden]
void AttentionBlockBatch(float* residual, const float* xn, int64_t n, const std::vector<AttentionRows>& parts,
                         const BlockSizes& sizes);

// The blocks keep their temporaries ([n, width] activations) per thread
// from layer to layer and call to call (util/scratch.h). A forward pass
// over many rows lets them go when its layers are done, so that a
// prefill's buffers do not stay beside the weights for the decode after it.
void ReleaseBlockScratch();

// residual += down(act(gate(xn)) * up(xn)), act silu (HF LlamaMLP) or
// gelu_tanh (HF GemmaMLP, gelu_pytorch_tanh).
//   residual, xn [n, hidden]
void MlpBlock(float* residual, const float* xn, int64_t n, const MlpWeights& w, const BlockSizes& sizes,
              MlpActivation activation);

// Gemma's RMSNorm multiplies by (1 + weight), in float32 (HF Gemma3RMSNorm):
// RmsNorm() with the returned weight is that norm.
std::vector<float> GemmaNormWeight(std::vector<float> weight);

// The tokens of a batched step (LanguageModel::ForwardBatch), concatenated
// in step order.
struct StepRows {
  std::vector<int32_t> tokens;      // [n]
  std::vector<int64_t> first;       // [n_steps + 1] each step's first row, then n
  std::vector<int64_t> logit_rows;  // [n_logits] rows whose logits are wanted, in order
  int64_t n() const { return int64_t(tokens.size()); }
};
StepRows ConcatSteps(const std::vector<SequenceStep>& steps);

// Whether every step fits its session's max_chunk (so one pass can write it).
bool StepsFitChunks(const std::vector<SequenceStep>& steps);

// Layer `layer`'s attention for each sequence of a step, under the
// sequence's own plan, RoPE and cache. routes: [n_steps] storage that the
// parts of routed layers point into, each sequence routed by `router` under
// its session's RouteOptions; null for a family that does not route (a
// routed plan then fails in the block).
std::vector<AttentionRows> StepAttention(const std::vector<SequenceStep>& steps, const StepRows& rows, int32_t layer,
                                         const AttentionWeights& weights, const RouterWeights* router,
                                         std::vector<LayerRoutes>* routes);

// logits = head(rms_norm(x[r]) * norm) for each wanted row r.
//   logits [rows.size(), vocab]; x [n, hidden]; norm [hidden]
void OutputLogits(float* logits, const float* x, const std::vector<int64_t>& rows, const float* norm, float eps,
                  const LinearWeight& head, int64_t hidden);

// A family's Forward and ForwardBatch from one pass over several
// sequences' steps, each within its cache's max_chunk (`pass`, which fills
// logits as ForwardBatch does): a batch longer than its chunk goes in
// pieces, and steps that do not fit their chunks one by one (the model's
// LanguageModel::ForwardBatch). Checks come first, in the caller.
using StepsPass = std::function<void(float* logits, const std::vector<SequenceStep>& steps)>;
void ForwardByPasses(float* logits, const Batch& batch, Session& session, int64_t vocab, const StepsPass& pass);
void ForwardBatchByPasses(const LanguageModel& model, float* logits, const std::vector<SequenceStep>& steps,
                          const StepsPass& pass);

// Runs `chunk_forward` on pieces of at most `max_chunk` tokens of `batch`,
// in order, writing logits as Forward() promises (every row, or the last
// row only); pieces before the last get a scratch row when only the last
// row is wanted. logits [n, vocab] or [1, vocab].
void ForwardInChunks(float* logits, const Batch& batch, int64_t max_chunk, int64_t vocab,
                     const std::function<void(float* logits, const Batch& part)>& chunk_forward);

}  // namespace swan
