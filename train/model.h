// A Llama-family language model for training: float32 master weights in one
// flat buffer, their gradients in another of the same layout, the
// activations of the last forward pass kept for the backward pass. The
// linear layers' products may run in bfloat16 (set_matmul) from a bf16 copy
// of the weights; everything else, the optimizer included, stays float32.
//
// The network is exactly the one model/llama.cc runs for inference (HF
// LlamaForCausalLM): embedding, per layer RMSNorm -> Q, K, V -> RoPE or
// NoPE -> attention under the layer's span -> O -> residual -> RMSNorm ->
// SwiGLU MLP -> residual; final RMSNorm; tied or separate lm_head.
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

#include "model/plan.h"
#include "ops/rope.h"
#include "train/layers.h"
#include "train/routed.h"

namespace swan {

struct ModelShape {
  int64_t vocab = 0;
  int64_t hidden = 0;        // C
  int64_t intermediate = 0;  // F
  int32_t n_layers = 0;      // L
  int32_t n_heads = 0;       // H
  int32_t n_kv_heads = 0;    // KV
  int32_t head_dim = 0;      // D
  float rms_eps = 1e-5f;
  bool tied_embeddings = true;
  RopeSettings rope;         // the model's RoPE; the plan may turn it off per layer
  int64_t max_position = 0;  // the training context, written as max_position_embeddings
  int32_t feature_dim = 0;   // linear layers: the Hedgehog map's F (0: head_dim / 2), φ has 2F
  bool qkv_bias = false;     // q/k/v projection biases (Qwen2; exported as Qwen2ForCausalLM)

  int64_t q_dim() const { return int64_t(n_heads) * head_dim; }
  int64_t kv_dim() const { return int64_t(n_kv_heads) * head_dim; }
  int32_t linear_features() const { return feature_dim > 0 ? feature_dim : head_dim / 2; }
  // Throws std::invalid_argument naming the bad field.
  void Validate() const;
};

// Named shapes for training from scratch: "tiny" (tests), "small" (~7M
// parameters at vocab 4096: 8 layers, dim 256). Throws for unknown names.
ModelShape PresetShape(const std::string& name, int64_t vocab, int64_t context);

// One parameter tensor inside the flat buffer.
struct ParamTensor {
  std::string name;             // Hugging Face name, e.g. "model.layers.0.mlp.up_proj.weight"
  std::vector<int64_t> shape;
  int64_t offset = 0;           // into params / grads
  int64_t numel = 0;
  bool decay = false;           // AdamW weight decay: matrices yes, norms, routers and feature maps no
  bool frozen = false;          // AdamW leaves it as it is (attention transfer: all but the feature maps)
};

// How the routed layers routed in the last forward pass.
struct RoutingStats {
  std::vector<int64_t> full_tokens;  // [L] tokens sent to full attention (0 on other layers)
  int64_t tokens = 0;                // tokens per layer (B*T)
  double regularizer = 0;            // Σ over routed layers and counted tokens of γ_t softplus(logit_t)
};

class TrainModel {
 public:
  // Throws std::invalid_argument when the plan's layer count differs.
  TrainModel(const ModelShape& shape, const AttentionPlan& plan);

  const ModelShape& shape() const { return shape_; }
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
  std::vector<float>& grads() { return grads_; }    // [num_params]

  // Normal(0, 0.02) matrices, output projections scaled by 1/sqrt(2L),
  // norms 1, routers as InitRouters. Deterministic in `seed`; the draws do
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
  // The router's regularizer weights (defaults: DESIGN.md §4).
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
  struct LayerParams {
    float* attn_norm;  // (C)
    float* wq;         // (H*D, C)
    float* wk;         // (KV*D, C)
    float* wv;         // (KV*D, C)
    float* wo;         // (C, H*D)
    float* mlp_norm;   // (C)
    float* w_gate;     // (F, C)
    float* w_up;       // (F, C)
    float* w_down;     // (C, F)
    float* bq;         // (H*D) q/k/v biases when qkv_bias; null otherwise
    float* bk;         // (KV*D)
    float* bv;         // (KV*D)
    float* router_w;   // (1, C) routed layers; null on others
    float* router_b;   // (1)
    float* fq_w;       // (H, D, F) linear layers; null on others
    float* fq_b;       // (H, F)
    float* fk_w;       // (KV, D, F)
    float* fk_b;       // (KV, F)
    float* window_factor;  // (H) θ, γ = σ(θ): linear + window layers; null on others
  };
  // Every activation of one forward pass; N = B * T tokens.
  struct Activations {
    int64_t batch = 0, seq = 0;
    std::vector<int32_t> tokens, targets;  // (N)
    std::vector<float> weights;      // (N) loss weight of each target; empty: all 1
    std::vector<int32_t> pos;        // (T) 0..T-1
    std::vector<float> residual;     // (L+1, N, C) the stream entering each layer; [L] leaves the last
    std::vector<float> attn_xn;      // (L, N, C)
    std::vector<float> attn_rstd;    // (L, N)
    std::vector<float> q;            // (L, N, H*D) after RoPE
    std::vector<float> k;            // (L, N, KV*D) after RoPE
    std::vector<float> v;            // (L, N, KV*D)
    std::vector<float> att;          // (L, N, H*D) attention output
    std::vector<float> lse;          // (L, N, H)
    std::vector<float> attn_mid;     // (L, N, C) stream after the attention residual
    std::vector<float> mlp_xn;       // (L, N, C)
    std::vector<float> mlp_rstd;     // (L, N)
    std::vector<float> gate;         // (L, N, F)
    std::vector<float> up;           // (L, N, F)
    std::vector<float> act;          // (L, N, F) silu(gate) * up
    std::vector<float> final_xn;     // (N, C)
    std::vector<float> final_rstd;   // (N)
    std::vector<float> logits;       // (N, V); d_logits in place during Backward
    std::vector<float> losses;       // (N)
    // Routed layers only, at r = routed_index_[l] of R:
    std::vector<float> router_logit; // (R, N)
    std::vector<float> gamma;        // (R, N) regularizer weights γ_t
    // Linear layers only, at i = linear_index_[l] of Lin; P = 2F:
    std::vector<float> phi_q;        // (Lin, N, H, P)
    std::vector<float> phi_k;        // (Lin, N, KV, P)
    std::vector<float> lin_norm;     // (Lin, N, H) denominators
    std::vector<float> lin_out;      // (Lin, N, H*D) attention transfer: the linear output (att holds softmax)
    // Both branches of the R routed layers, or of every layer (R = L) under head gates:
    std::vector<float> att_full;     // (R, N, H*D) full branch
    std::vector<float> lse_full;     // (R, N, H)
    std::vector<float> att_window;   // (R, N, H*D) window branch
    std::vector<float> lse_window;   // (R, N, H)
  };
  // Gradient scratch of one layer, reused across layers.
  struct Scratch {
    std::vector<float> d_res;   // (N, C) gradient of the residual stream
    std::vector<float> d_xn;    // (N, C)
    std::vector<float> d_att;   // (N, H*D)
    std::vector<float> dq;      // (N, H*D)
    std::vector<float> dk;      // (N, KV*D)
    std::vector<float> dv;      // (N, KV*D)
    std::vector<float> d_act;   // (N, F)
    std::vector<float> d_gate;  // (N, F)
    std::vector<float> d_up;    // (N, F)
    std::vector<float> d_logit; // (N) router logits
    std::vector<float> d_phi_q; // (N, H, P) linear layers
    std::vector<float> d_phi_k; // (N, KV, P)
  };

  void Layout();
  LayerParams Layer(std::vector<float>& buffer, int32_t l);
  // y (+)= x · wᵀ and its backward (train/layers.h) in the model's
  // precision, for a weight w [out, in] inside params_.
  void Project(float* y, const float* x, const float* w, int64_t n, int64_t in, int64_t out,
               bool accumulate_y = false) const;
  void ProjectBackward(float* dx, float* d_w, const float* dy, const float* x, const float* w,
                       int64_t n, int64_t in, int64_t out, bool accumulate_dx) const;
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

  ModelShape shape_;
  AttentionPlan plan_;
  std::vector<Rope> ropes_;  // [L]
  std::vector<int32_t> routed_index_;  // [L] among the routed layers; -1 on others
  int32_t n_routed_ = 0;               // R
  std::vector<int32_t> linear_index_;  // [L] among the linear layers; -1 on others
  int32_t n_linear_ = 0;               // Lin
  bool transfer_ = false;              // attention transfer (set_attention_transfer)
  double transfer_loss_ = 0;           // of the last forward pass
  std::vector<float> head_gates_;      // [L * KV] or empty: train/head_gates.h
  std::vector<float> head_gate_grads_; // [L * KV]
  std::vector<size_t> layer_first_;    // [L] index into tensors_ of the layer's first tensor
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
