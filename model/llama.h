// The Llama family (LlamaForCausalLM, and MistralForCausalLM, which has the
// same weights plus a sliding window): embedding, per layer RMSNorm ->
// self-attention (RoPE, GQA) -> residual -> RMSNorm -> SwiGLU MLP ->
// residual, final RMSNorm, tied or separate lm_head. A checkpoint may add a
// Switch Attention router per layer (model.layers.{l}.self_attn.router.weight
// [1, hidden] and .bias [1]), which routed layers of a plan use.
#pragma once

#include <memory>
#include <string>

#include "model/config.h"
#include "model/model.h"

namespace swan {

// What a family built on the Llama compute adds to it.
struct LlamaVariant {
  bool qkv_bias = false;  // q/k/v projection biases (Qwen2)
};

class WeightSource;
// A Llama-family model (Llama, Mistral) from its weights (a checkpoint, or
// random weights in a real shape). Throws std::runtime_error for settings
// the family does not cover (biases, activations other than silu) and for
// missing or misshapen tensors.
std::unique_ptr<LanguageModel> BuildLlama(const WeightSource& weights, const ModelConfig& config,
                                          const std::string& origin,
                                          const LlamaVariant& variant = {});

// The family's layer spans: HF sliding_window on every layer (Mistral), or
// per layer from layer_types; none (full attention) for Llama.
ModelAttentionDefaults LlamaAttentionDefaults(const ModelConfig& config);

}  // namespace swan
