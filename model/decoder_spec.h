// A decoder family as data: what Llama, Mistral, Qwen2, Qwen3 and Gemma 3 do
// differently inside the one decoder network, and the one table of a
// model's tensors. What the inference loader reads (model/decoder.cc), what
// the trainer lays out (train/model.cc) and what an export writes
// (train/hf_io.cc) is that table.
//
// The network every spec describes, per layer:
//   xn = norm(x)                      input_layernorm
//   q, k, v = xn·Wᵀ (+ b)             q/k/v biases: qkv_bias
//   q, k = norm per head              q_norm, k_norm: qk_norm
//   q, k = rope(q), rope(k)           the plan's RoPE or NoPE per layer
//   a = attention(q, k, v)·Woᵀ        under the layer's plan, logit scale AttentionScaleOf
//   x += norm(a) or a                 post_attention_layernorm: sandwich_norms
//   m = mlp(norm(x))                  the pre-MLP norm; gate activation
//   x += norm(m) or m                 post_feedforward_layernorm: sandwich_norms
// then the final norm and the head (the embedding when tied). A norm's
// weight is applied as w, or as 1 + w under unit_offset_norms (Gemma).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/model.h"

namespace swan {

enum class MlpActivation {
  kSilu,      // SwiGLU: silu(gate) * up (HF hidden_act "silu")
  kGeluTanh,  // gelu_tanh(gate) * up (HF "gelu_pytorch_tanh")
};
const char* MlpActivationName(MlpActivation a);  // HF's name: "silu", "gelu_pytorch_tanh"

struct DecoderSpec {
  std::string architecture;  // HF "architectures"[0]: "LlamaForCausalLM"
  std::string model_type;    // HF "model_type": "llama"
  MlpActivation activation = MlpActivation::kSilu;
  bool qkv_bias = false;           // q/k/v projection biases (Qwen2)
  bool qk_norm = false;            // RMSNorm over each head of q and k before RoPE (Qwen3, Gemma 3)
  bool sandwich_norms = false;     // norms on the attention and MLP outputs too (Gemma 3)
  bool unit_offset_norms = false;  // a norm's stored w is applied as 1 + w (Gemma)
  bool scale_embeddings = false;   // the embedding times sqrt(hidden_size) enters the stream (Gemma)
  // > 0: attention logits scale by query_pre_attn_scalar^-0.5, this value
  // when the config is silent (Gemma 3: 256); 0: by head_dim^-0.5.
  double default_query_pre_attn_scalar = 0;
};

// A family: its spec, and the attention each of its layers has by default.
struct DecoderFamily {
  DecoderSpec spec;
  ModelAttentionDefaults (*attention)(const ModelConfig& config);
};

// Every family swan runs, one per architecture name.
const std::vector<DecoderFamily>& DecoderFamilies();

// The family of config's architecture. Throws std::runtime_error naming
// `origin` and the supported architectures for any other.
const DecoderFamily& FamilyOf(const ModelConfig& config, const std::string& origin);

// config's family spec, after checking that the config asks for nothing
// the family's network lacks (another activation, biases it has no place
// for, logit soft-capping, an odd head_dim). Throws std::runtime_error
// naming `origin`'s config.json and the field.
DecoderSpec DecoderSpecOf(const ModelConfig& config, const std::string& origin);

// The attention logit scale: query_pre_attn_scalar^-0.5 for a family that
// has one (Gemma 3), else 0, which the kernels read as 1/sqrt(head_dim).
float AttentionScaleOf(const ModelConfig& config, const DecoderSpec& spec);

// What a tensor is in the network.
enum class TensorRole {
  kEmbedding,          // [vocab, hidden]
  kAttnNorm,           // [hidden] input_layernorm
  kQ,                  // [heads * head_dim, hidden]
  kK,                  // [kv_heads * head_dim, hidden]
  kV,                  // [kv_heads * head_dim, hidden]
  kO,                  // [hidden, heads * head_dim]
  kQBias,              // [heads * head_dim]
  kKBias,              // [kv_heads * head_dim]
  kVBias,              // [kv_heads * head_dim]
  kQNorm,              // [head_dim]
  kKNorm,              // [head_dim]
  kPostAttnNorm,       // [hidden] on the attention output (sandwich)
  kMlpNorm,            // [hidden] the MLP's input norm
  kGate,               // [intermediate, hidden]
  kUp,                 // [intermediate, hidden]
  kDown,               // [hidden, intermediate]
  kPostMlpNorm,        // [hidden] on the MLP output (sandwich)
  kRouterWeight,       // [1, hidden] Switch Attention router
  kRouterBias,         // [1]
  kFeatureMapQWeight,  // [heads, head_dim, F] Hedgehog feature maps of a linear layer
  kFeatureMapQBias,    // [heads, F]
  kFeatureMapKWeight,  // [kv_heads, head_dim, F]
  kFeatureMapKBias,    // [kv_heads, F]
  kWindowFactor,       // [heads] θ of a linear + window layer, weight σ(θ)
  kFinalNorm,          // [hidden]
  kLmHead,             // [vocab, hidden] (absent when tied)
};

// Whether the role is a norm weight (stored as w or as 1 + w by the spec).
bool IsNormRole(TensorRole role);
// A router's weight or bias.
bool IsRouterRole(TensorRole role);
// What a linear layer adds: its feature maps and window factor.
bool IsLinearLayerRole(TensorRole role);

struct DecoderTensor {
  std::string name;  // HF name, "model.layers.0.mlp.up_proj.weight"
  std::vector<int64_t> shape;
  TensorRole role = TensorRole::kEmbedding;
  int32_t layer = -1;  // the layer it belongs to; -1 for the embedding, final norm, head
  bool decay = false;  // AdamW weight decay: matrices, but not routers or feature maps
};

// What one layer holds beyond its family's tensors.
struct LayerExtras {
  bool router = false;         // a routed layer
  bool feature_maps = false;   // a linear layer
  bool window_factor = false;  // a linear + window layer
};
// The extras a plan's layer needs. [n_layers]
std::vector<LayerExtras> PlanExtras(const AttentionPlan& plan);

// Every tensor of the model, in the one order the trainer lays them out:
// the embedding; per layer its norm, q, k, v, o, the pre-MLP or post-
// attention norm, gate, up, down, then (as the spec and extras say) the
// q/k/v biases, the QK-norms, the sandwich's other two norms, a router,
// feature maps and window factors; the final norm; lm_head unless tied.
//   extras [n_layers]
std::vector<DecoderTensor> DecoderTensors(const ModelConfig& config, const DecoderSpec& spec,
                                          const std::vector<LayerExtras>& extras);

}  // namespace swan
