// The Gemma 3 text family (Gemma3ForCausalLM, model_type gemma3_text):
// embeddings scaled by sqrt(hidden_size); per layer
//   x += post_attention_norm(attention(input_norm(x)))
//   x += post_feedforward_norm(mlp(pre_feedforward_norm(x)))
// with QK-norm (RMSNorm over each head of q and k, before RoPE), attention
// scale query_pre_attn_scalar^-0.5, a GELU-tanh gated MLP, Gemma's RMSNorm
// (x * (1 + weight)) everywhere; final norm and the tied embedding as the
// output head. Local (sliding window) and global layers alternate 5:1
// (sliding_window_pattern or layer_types); local layers use RoPE base
// rope_local_base_freq, global ones rope_theta with the config's scaling.
#pragma once

#include "model/config.h"
#include "model/decoder_spec.h"
#include "model/model.h"

namespace swan {

DecoderFamily Gemma3Family();

// The family's layers: window sliding_window on local layers, full on
// every sliding_window_pattern-th (default 6) or as layer_types says; the
// per-layer RoPE of local and global layers.
ModelAttentionDefaults Gemma3AttentionDefaults(const ModelConfig& config);

}  // namespace swan
