#include "model/gemma3.h"

#include <stdexcept>
#include <string>

namespace swan {
namespace {

// HF Gemma3TextConfig's defaults for fields a config may omit.
constexpr int32_t kDefaultPattern = 6;
constexpr int32_t kDefaultSlidingWindow = 4096;
constexpr double kDefaultLocalBase = 10000.0;
constexpr double kDefaultQueryPreAttnScalar = 256.0;

// Whether layer `i` is a local (sliding window) layer.
bool IsLocalLayer(const ModelConfig& c, int32_t i) {
  if (!c.layer_types.empty()) {
    const std::string& t = c.layer_types[size_t(i)];
    if (t != "sliding_attention" && t != "full_attention")
      throw std::runtime_error("config.json: layer_types[" + std::to_string(i) + "] = '" + t +
                               "' (expected full_attention or sliding_attention)");
    return t == "sliding_attention";
  }
  const int32_t pattern = c.sliding_window_pattern > 0 ? c.sliding_window_pattern : kDefaultPattern;
  return (i + 1) % pattern != 0;
}

}  // namespace

DecoderFamily Gemma3Family() {
  DecoderSpec spec;
  spec.architecture = "Gemma3ForCausalLM";
  spec.model_type = "gemma3_text";
  spec.activation = MlpActivation::kGeluTanh;
  spec.qk_norm = true;
  spec.sandwich_norms = true;
  spec.unit_offset_norms = true;
  spec.scale_embeddings = true;
  spec.default_query_pre_attn_scalar = kDefaultQueryPreAttnScalar;
  return {spec, Gemma3AttentionDefaults};
}

ModelAttentionDefaults Gemma3AttentionDefaults(const ModelConfig& config) {
  ModelAttentionDefaults d;
  d.n_layers = config.n_layers;
  d.rope = config.rope;  // global layers
  RopeSettings local;
  local.base = config.rope_local_base_freq > 0 ? config.rope_local_base_freq : kDefaultLocalBase;
  const Span window =
      SpanFromHfSlidingWindow(config.sliding_window > 0 ? config.sliding_window : kDefaultSlidingWindow);
  d.default_window = window.window;
  for (int32_t i = 0; i < config.n_layers; ++i) {
    const bool is_local = IsLocalLayer(config, i);
    d.spans.push_back(is_local ? window : Span{});
    d.layer_ropes.push_back(is_local ? local : config.rope);
  }
  return d;
}

}  // namespace swan
