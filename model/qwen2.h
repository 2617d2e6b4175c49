// The Qwen2 family (Qwen2ForCausalLM: Qwen2, Qwen2.5): the Llama network
// with biases on the q, k and v projections (none on o_proj), whatever the
// config says of attention_bias. Its sliding window is off unless
// use_sliding_window, and then covers only the layers with index >=
// max_window_layers.
// Qwen3 (Qwen3ForCausalLM): the Llama network with an RMSNorm over each
// head of q and k before RoPE (q_norm, k_norm, applied as w) and no
// biases; head_dim from the config (128 where heads x head_dim is not the
// hidden size); its window as Qwen2's.
#pragma once

#include "model/config.h"
#include "model/decoder_spec.h"
#include "model/model.h"

namespace swan {

DecoderFamily Qwen2Family();
DecoderFamily Qwen3Family();

// The family's layer spans: layer_types when the config lists them, else
// the window on layers >= max_window_layers when use_sliding_window (HF
// Qwen2Config), else full attention everywhere.
ModelAttentionDefaults Qwen2AttentionDefaults(const ModelConfig& config);

}  // namespace swan
