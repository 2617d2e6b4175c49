// A decoder language model for training: float32 master weights in one
// flat buffer, their gradients in another of the same layout, the
// activations of the last forward pass kept for the backward pass. The
// linear layers' products may run in bfloat16 (set_matmul) from a bf16 copy
// of the weights; everything else, the optimizer included, stays float32.
//
// The network is exactly the one model/decoder.cc runs for inference, for
// every family it runs (model/decoder_spec.h: Llama, Mistral, Qwen2's q/k/v
// biases, Gemma 3's QK-norms, sandwich norms, 1 + w norms, embedding scale,
// GELU-tanh and logit scale), and its tensors are the spec's table:
// embedding, per layer norm -> Q, K, V (+ biases) -> QK-norm -> RoPE or
// NoPE -> attention under the layer's span -> O (-> norm) -> residual ->
// norm -> gated MLP (-> norm) -> residual; final norm; tied or separate
// lm_head.
//
// A linear layer (attention/linear_attention.h) adds Hedgehog feature maps
// (self_attn.feature_map_q.{weight [H, D, F], bias [H, F]},
// self_attn.feature_map_k.{weight [KV, D, F], bias [KV, F]}) applied to Q
// and K after RoPE, and attends by linear attention; a linear + window layer
// (LoLCATs' hybrid) also the window's weight per head,
// self_attn.window_factor [H] (θ, the weight σ(θ)).
//
// A routed layer (Switch Attention, train/routed.h) adds a router
// (self_attn.router.weight [1, C], self_attn.router.bias [1]) on the normed
// attention input; each token takes full attention or the layer's window
// span, and the objective gains the router's regularizer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/decoder_spec.h"
#include "model/plan.h"
#include "ops/rope.h"
#include "train/layers.h"
#include "train/routed.h"

namespace swan {

// Named shapes for training from scratch, as the config of a model of
// `architecture` (a family of model/decoder_spec.h, with its activation;
// Gemma 3 with its 5:1 layers of window 512 and RoPE bases): "tiny"
// (tests), "mini", "small" (~7M parameters at vocab 4096: 8 layers, dim
// 256). Throws std::invalid_argument for unknown names.
ModelConfig PresetConfig(const std::string& name, int64_t vocab, int64_t context,
                         const std::string& architecture = "LlamaForCausalLM");

// One parameter tensor inside the flat buffer.
struct ParamTensor {
  std::string name;  // Hugging Face name, e.g. "model.layers.0.mlp.up_proj.weight"
  std::vector<int64_t> shape;
  int64_t offset = 0;  // into params / grads
  int64_t numel = 0;
  bool decay = false;                        // AdamW weight decay: matrices yes, norms, routers and feature maps no
  bool frozen = false;                       // AdamW leaves it as it is (attention transfer: all but the feature maps)
  TensorRole role = TensorRole::kEmbedding;  // what it is in the network (model/decoder_spec.h)
  int32_t layer = -1;                        // the layer it belongs to; -1 for the embedding, final norm, head
};

// How the routed layers routed in the last forward pass.
struct RoutingStats {
  std::vector<int64_t> full_tokens;  // [L] tokens sent to full attention (0 on other layers)
  int64_t tokens = 0;                // tokens per layer (B*T)
  double regularizer = 0;            // Σ over routed layers and counted tokens of γ_t softplus(logit_t)
};

class TrainModel {
 public:
  // Throws std::invalid_argument when the plan's layer count differs,
  // std::runtime_error when the config's sizes make no model
  // (CheckModelSizes) or its family does not cover it (DecoderSpecOf).
  TrainModel(const ModelConfig& config, const AttentionPlan& plan);

  const ModelConfig& config() const { return config_; }
  const DecoderSpec& spec() const { return spec_; }
  const AttentionPlan& plan() const { return plan_; }
  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  const ParamTensor& tensor(const std::string& name) const;  // throws if absent
  int64_t num_params() const { return int64_t(params_.size()); }

  // [num_params]. The non-const access marks the bf16 copy stale: the next
  // Forward rebuilds it (once per optimizer step, not per micro-batch).
  // Take it afresh after each Forward rather than keeping the reference.
  std::vector<float>& params() {
    params16_stale_ = true;
    return params_;
  }
  const std::vector<float>& params() const { return params_; }
  std::vector<float>& grads() { return grads_; }  // [num_params]

  // Normal(0, 0.02) matrices, output projections scaled by 1/sqrt(2L),
  // norms 1 (stored as 0 under 1 + w norms), biases 0, routers as InitRouters. Deterministic in `seed`; the draws do
  // not depend on which layers are routed.
  void InitRandom(uint64_t seed);
  // Every router to weight 0, bias +2: every token starts on full attention.
  void InitRouters();
  int32_t num_routed_layers() const { return n_routed_; }
  int32_t num_linear_layers() const { return n_linear_; }
  // Every linear layer's feature maps to the identity start (InitHedgehog).
  void InitFeatureMaps();
  // LoLCATs' attention transfer: each linear layer passes softmax attention
  // (full, causal) downstream, so every layer sees the softmax model's
  // inputs, and Forward returns Σ over linear layers of the mean squared
  // distance between the layer's linear and softmax outputs (per element).
  // Backward then trains the feature maps only: every other tensor is
  // frozen. Throws std::invalid_argument without linear layers.
  void set_attention_transfer(bool on);
  bool attention_transfer() const { return transfer_; }
  // The router's regularizer weights (defaults: docs/design.md §4).
  void set_router_regularizer(const RouterRegularizer& r) { router_reg_ = r; }
  void ZeroGrads();

  // The linear layers' products (lm_head and the tied embedding's included)
  // in float32 (default) or bfloat16 with float32 accumulation.
  void set_matmul(MatmulPrecision p) { matmul_ = p; }
  MatmulPrecision matmul() const { return matmul_; }

  // Runs B sequences of T tokens (token t at position t) and returns the
  // mean cross-entropy against `targets` (< 0: not counted), weighted by
  // `weights` when given (answer-only losses: tokens/token_labels.h). Keeps
  // the activations for Backward. With routed layers the objective also
  // holds the router regularizer: router_loss() per counted token.
  //   tokens, targets [B, T], weights [B, T] or null (all 1)
  double Forward(const int32_t* tokens, const int32_t* targets, int64_t batch, int64_t seq,
                 const float* weights = nullptr);
  // Adds d(loss_scale * (sum of counted tokens' weighted losses + the
  // router regularizer's sum))/d(params) into grads(); the hard gates
  // backpropagate by the straight-through estimator. The usual loss_scale
  // is 1 / (the weight of the counted tokens of all micro-batches).
  void Backward(float loss_scale);
  // Called by Backward as soon as a range [offset, offset + count) of
  // grads() is final: each layer's (the last layer first), then the
  // embedding's and the final norm's with lm_head's. A data-parallel step
  // sums each range across ranks while the backward goes on. Null: none.
  using GradsReady = std::function<void(int64_t offset, int64_t count)>;
  void set_grads_ready(GradsReady hook) { grads_ready_ = std::move(hook); }

  // DuoAttention's head gates (train/head_gates.h): one gate α per layer
  // and KV head, [L * KV]; a layer's attention of query head h is then
  // α·(full attention) + (1 − α)·(attention under the layer's window span)
  // for h's KV head. While gates are set the weights are frozen: Backward
  // and BackwardHidden add only into head_gate_grads(). Empty turns them
  // off. Throws std::invalid_argument with routed or per-head layers, a
  // layer without a window, or a size other than L * KV.
  void set_head_gates(const std::vector<float>& gates);
  const std::vector<float>& head_gates() const { return head_gates_; }
  const std::vector<float>& head_gate_grads() const { return head_gate_grads_; }  // [L * KV]

  // The forward pass without lm_head: the final normed hidden states of B
  // sequences of T tokens, [B*T, C], valid until the next forward pass.
  const float* ForwardHidden(const int32_t* tokens, int64_t batch, int64_t seq);
  // The backward pass from d(loss)/d(ForwardHidden's output) [B*T, C].
  void BackwardHidden(const float* d_hidden);

  // Routing of the last Forward.
  const RoutingStats& routing() const { return routing_; }
  // The regularizer per counted token, as Forward's loss is (0 without routed layers).
  double router_loss() const;
  // Fraction of (token, routed layer) pairs on full attention; -1 without routed layers.
  double full_ratio() const;

  // After a non-finite loss: where the forward first produced a non-finite
  // value ("embedding", "layer 3 attention", "layer 3 mlp", "final norm /
  // lm_head"), or "" when every activation is finite.
  std::string FirstNonFinite() const;
  // The logits of the last Forward, (B*T, V); overwritten by Backward.
  const std::vector<float>& logits() const { return acts_.logits; }
  // The attention weights of query `query` of the last Forward's first
  // sequence over its keys 0..query, for head `head` of `layer`, under the
  // layer's span (a routed layer's full branch): softmax(q · k / sqrt(D))
  // in float64 from the kept activations, 0 where the span hides a key.
  // For analysis (eval/retrieval_heads.h).   -> [query + 1]
  std::vector<double> AttentionWeights(int32_t layer, int32_t head, int64_t query) const;
  // Number of counted tokens in the last Forward, and their summed weight.
  int64_t counted_tokens() const { return counted_; }
  double counted_weight() const { return counted_weight_; }

 private:
  // Layer l's attention over the batch's sequences: its span, or a span per
  // KV head on a per-head layer.
  SequenceAttention LayerAttention(int32_t l, int64_t batch, int64_t seq, const int32_t* pos) const;
  // One layer's tensors inside a buffer (params_ or grads_); null where
  // the spec or the plan gives the layer none. Norms hold the stored w.
  struct LayerParams {
    float* attn_norm = nullptr;       // (C)
    float* wq = nullptr;              // (H*D, C)
    float* wk = nullptr;              // (KV*D, C)
    float* wv = nullptr;              // (KV*D, C)
    float* wo = nullptr;              // (C, H*D)
    float* mlp_norm = nullptr;        // (C) the MLP's input norm
    float* w_gate = nullptr;          // (F, C)
    float* w_up = nullptr;            // (F, C)
    float* w_down = nullptr;          // (C, F)
    float* bq = nullptr;              // (H*D) q/k/v biases (qkv_bias)
    float* bk = nullptr;              // (KV*D)
    float* bv = nullptr;              // (KV*D)
    float* q_norm = nullptr;          // (D) QK-norms (qk_norm)
    float* k_norm = nullptr;          // (D)
    float* post_attn_norm = nullptr;  // (C) sandwich norms
    float* post_mlp_norm = nullptr;   // (C)
    float* router_w = nullptr;        // (1, C) routed layers
    float* router_b = nullptr;        // (1)
    float* fq_w = nullptr;            // (H, D, F) linear layers
    float* fq_b = nullptr;            // (H, F)
    float* fk_w = nullptr;            // (KV, D, F)
    float* fk_b = nullptr;            // (KV, F)
    float* window_factor = nullptr;   // (H) θ, γ = σ(θ): linear + window layers
  };
  // Every activation of one forward pass; N = B * T tokens.
  struct Activations {
    int64_t batch = 0, seq = 0;
    std::vector<int32_t> tokens, targets;  // (N)
    std::vector<float> weights;            // (N) loss weight of each target; empty: all 1
    std::vector<int32_t> pos;              // (T) 0..T-1
    std::vector<float> residual;           // (L+1, N, C) the stream entering each layer; [L] leaves the last
    std::vector<float> attn_xn;            // (L, N, C)
    std::vector<float> attn_rstd;          // (L, N)
    std::vector<float> q;                  // (L, N, H*D) after RoPE
    std::vector<float> k;                  // (L, N, KV*D) after RoPE
    // QK-norm only (else empty): q and k before it, and its 1/rms per head row.
    std::vector<float> q_raw;     // (L, N, H*D)
    std::vector<float> k_raw;     // (L, N, KV*D)
    std::vector<float> q_rstd;    // (L, N, H)
    std::vector<float> k_rstd;    // (L, N, KV)
    std::vector<float> v;         // (L, N, KV*D)
    std::vector<float> att;       // (L, N, H*D) attention output
    std::vector<float> lse;       // (L, N, H)
    std::vector<float> attn_mid;  // (L, N, C) stream after the attention residual
    // Sandwich norms only (else empty): the attention's and the MLP's
    // outputs before their norms, and those norms' 1/rms.
    std::vector<float> attn_out;       // (L, N, C)
    std::vector<float> attn_out_rstd;  // (L, N)
    std::vector<float> mlp_out;        // (L, N, C)
    std::vector<float> mlp_out_rstd;   // (L, N)
    std::vector<float> mlp_xn;         // (L, N, C)
    std::vector<float> mlp_rstd;       // (L, N)
    std::vector<float> gate;           // (L, N, F)
    std::vector<float> up;             // (L, N, F)
    std::vector<float> act;            // (L, N, F) act(gate) * up
    std::vector<float> final_xn;       // (N, C)
    std::vector<float> final_rstd;     // (N)
    std::vector<float> logits;         // (N, V); d_logits in place during Backward
    std::vector<float> losses;         // (N)
    // Routed layers only, at r = routed_index_[l] of R:
    std::vector<float> router_logit;  // (R, N)
    std::vector<float> gamma;         // (R, N) regularizer weights γ_t
    // Linear layers only, at i = linear_index_[l] of Lin; P = 2F:
    std::vector<float> phi_q;     // (Lin, N, H, P)
    std::vector<float> phi_k;     // (Lin, N, KV, P)
    std::vector<float> lin_norm;  // (Lin, N, H) denominators
    std::vector<float> lin_out;   // (Lin, N, H*D) attention transfer: the linear output (att holds softmax)
    // Both branches of the R routed layers, or of every layer (R = L) under head gates:
    std::vector<float> att_full;    // (R, N, H*D) full branch
    std::vector<float> lse_full;    // (R, N, H)
    std::vector<float> att_window;  // (R, N, H*D) window branch
    std::vector<float> lse_window;  // (R, N, H)
  };
  // Gradient scratch of one layer, reused across layers.
  struct Scratch {
    std::vector<float> d_res;    // (N, C) gradient of the residual stream
    std::vector<float> d_xn;     // (N, C)
    std::vector<float> d_out;    // (N, C) at a branch's output before its norm (sandwich norms);
                                 //        in the forward, the normed branch output
    std::vector<float> d_raw;    // (N, H*D) q or k before its QK-norm
    std::vector<float> d_att;    // (N, H*D)
    std::vector<float> dq;       // (N, H*D)
    std::vector<float> dk;       // (N, KV*D)
    std::vector<float> dv;       // (N, KV*D)
    std::vector<float> d_act;    // (N, F)
    std::vector<float> d_gate;   // (N, F)
    std::vector<float> d_up;     // (N, F)
    std::vector<float> d_logit;  // (N) router logits
    std::vector<float> d_phi_q;  // (N, H, P) linear layers
    std::vector<float> d_phi_k;  // (N, KV, P)
  };

  void Layout();
  LayerParams Layer(std::vector<float>& buffer, int32_t l);
  // The weight a norm multiplies by: w itself, or 1 + w (in `applied`)
  // under unit-offset norms.   w, applied [n]
  const float* NormWeight(const float* w, int64_t n, std::vector<float>& applied) const;
  // next = prev + x · wᵀ, or prev + norm(x · wᵀ) when the branch has an
  // output norm (sandwich norms; x · wᵀ and the norm's 1/rms saved in out
  // and rstd).   next, prev, out [N, C]; x [N, in]; w [C, in]; rstd [N]
  void BranchForward(float* next, const float* prev, const float* x, const float* w, int64_t in, const float* out_norm,
                     float* out, float* rstd);
  // The gradient at x · wᵀ from the stream's (scratch_.d_res): itself, or
  // back through the output norm (its weight's gradient into d_out_norm).
  // [N, C], valid until the next call.
  const float* BranchBackward(const float* out_norm, float* d_out_norm, const float* out, const float* rstd);
  // The gated MLP's activation and its backward, as the spec says.   [n]
  void GateForward(float* act, const float* gate, const float* up, int64_t n) const;
  void GateBackward(float* d_gate, float* d_up, const float* d_act, const float* gate, const float* up,
                    int64_t n) const;
  // y (+)= x · wᵀ and its backward (train/layers.h) in the model's
  // precision, for a weight w [out, in] inside params_.
  void Project(float* y, const float* x, const float* w, int64_t n, int64_t in, int64_t out,
               bool accumulate_y = false) const;
  void ProjectBackward(float* dx, float* d_w, const float* dy, const float* x, const float* w, int64_t n, int64_t in,
                       int64_t out, bool accumulate_dx) const;
  void RefreshBF16Params();
  void Allocate(int64_t batch, int64_t seq);
  // Forward and Backward without the loss: tokens in acts_ -> final_xn,
  // and d_res (the final norm's input gradient) -> grads.
  void ForwardLayers();
  void BackwardLayers(float loss_scale);
  void BackwardTransfer(float loss_scale);  // attention transfer: the feature maps' gradients only
  RoutedBranches Branches(int32_t r);
  // A linear layer's forward into `out` (att, or lin_out under transfer), and its backward.
  void LinearAttentionForward(int32_t l, float* out, const float* q, const float* k, const float* v);
  void LinearAttentionBackward(int32_t l, const float* d_out, const float* out, const float* q, const float* k,
                               const float* v, float* dq, float* dk, float* dv, const LayerParams& g);

  ModelConfig config_;
  DecoderSpec spec_;
  AttentionPlan plan_;
  float attention_scale_ = 0;           // AttentionScaleOf; 0 = 1/sqrt(D)
  float embed_scale_ = 1;               // sqrt(C) under scale_embeddings
  std::vector<Rope> ropes_;             // [L]
  std::vector<int32_t> routed_index_;   // [L] among the routed layers; -1 on others
  int32_t n_routed_ = 0;                // R
  std::vector<int32_t> linear_index_;   // [L] among the linear layers; -1 on others
  int32_t n_linear_ = 0;                // Lin
  bool transfer_ = false;               // attention transfer (set_attention_transfer)
  double transfer_loss_ = 0;            // of the last forward pass
  std::vector<float> head_gates_;       // [L * KV] or empty: train/head_gates.h
  std::vector<float> head_gate_grads_;  // [L * KV]
  std::vector<size_t> layer_first_;     // [L] index into tensors_ of the layer's first tensor
  std::vector<size_t> layer_end_;       // [L] one past its last
  RouterRegularizer router_reg_;
  RoutingStats routing_;
  std::vector<ParamTensor> tensors_;
  std::vector<float> params_;
  std::vector<float> grads_;
  MatmulPrecision matmul_ = MatmulPrecision::kF32;
  GradsReady grads_ready_;
  std::vector<uint16_t> params16_;  // [num_params] bf16 copy of params_ (bf16 products only)
  bool params16_stale_ = true;      // params_ may have changed since params16_ was made
  Activations acts_;
  Scratch scratch_;
  int64_t counted_ = 0;
  double counted_weight_ = 0;
};

}  // namespace swan
