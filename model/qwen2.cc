#include "model/qwen2.h"

#include <stdexcept>

#include "model/llama.h"

namespace swan {

// HF Qwen2Config's default when the config omits max_window_layers.
constexpr int32_t kDefaultMaxWindowLayers = 28;

ModelAttentionDefaults Qwen2AttentionDefaults(const ModelConfig& config) {
  if (!config.layer_types.empty()) return LlamaAttentionDefaults(config);
  ModelAttentionDefaults d;
  d.n_layers = config.n_layers;
  d.rope = config.rope;
  d.spans.assign(size_t(config.n_layers), Span{});
  if (!config.use_sliding_window) return d;
  const Span window = SpanFromHfSlidingWindow(config.sliding_window);
  if (window.full()) return d;
  const int32_t first = config.max_window_layers >= 0 ? config.max_window_layers : kDefaultMaxWindowLayers;
  for (int32_t i = first; i < config.n_layers; ++i) d.spans[size_t(i)] = window;
  d.default_window = window.window;
  return d;
}

DecoderFamily Qwen2Family() {
  DecoderSpec spec;
  spec.architecture = "Qwen2ForCausalLM";
  spec.model_type = "qwen2";
  spec.qkv_bias = true;
  return {spec, Qwen2AttentionDefaults};
}

DecoderFamily Qwen3Family() {
  DecoderSpec spec;
  spec.architecture = "Qwen3ForCausalLM";
  spec.model_type = "qwen3";
  spec.qk_norm = true;
  return {spec, Qwen2AttentionDefaults};
}

}  // namespace swan
