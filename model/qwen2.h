// The Qwen2 family (Qwen2ForCausalLM: Qwen2, Qwen2.5): the Llama compute
// with biases on the q, k and v projections (none on o_proj). Its sliding
// window is off unless use_sliding_window, and then covers only the layers
// with index >= max_window_layers.
#pragma once

#include <memory>
#include <string>

#include "model/config.h"
#include "model/model.h"

namespace swan {

class WeightSource;
// A Qwen2 model (the Llama compute with q/k/v biases) from its weights.
// Throws std::runtime_error for unsupported settings and missing or
// misshapen tensors (naming the origin and the tensor).
std::unique_ptr<LanguageModel> BuildQwen2(const WeightSource& weights, const ModelConfig& config,
                                          const std::string& origin);

// The family's layer spans: layer_types when the config lists them, else
// the window on layers >= max_window_layers when use_sliding_window (HF
// Qwen2Config), else full attention everywhere.
ModelAttentionDefaults Qwen2AttentionDefaults(const ModelConfig& config);

}  // namespace swan
