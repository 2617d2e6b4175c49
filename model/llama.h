// The Llama family (LlamaForCausalLM), and Mistral (MistralForCausalLM: the
// same weights, a sliding window on every layer): embedding, per layer
// RMSNorm -> self-attention (RoPE, GQA) -> residual -> RMSNorm -> SwiGLU MLP
// -> residual, final RMSNorm, tied or separate lm_head. model/decoder.cc
// runs it; a checkpoint may add a Switch Attention router per layer
// (model.layers.{l}.self_attn.router.weight [1, hidden] and .bias [1]),
// which routed layers of a plan use.
#pragma once

#include "model/config.h"
#include "model/decoder_spec.h"
#include "model/model.h"

namespace swan {

DecoderFamily LlamaFamily();
DecoderFamily MistralFamily();

// The family's layer spans: HF sliding_window on every layer (Mistral), or
// per layer from layer_types; none (full attention) for Llama.
ModelAttentionDefaults LlamaAttentionDefaults(const ModelConfig& config);

}  // namespace swan
