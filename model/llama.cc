#include "model/llama.h"

#include <stdexcept>
#include <string>

namespace swan {

DecoderFamily LlamaFamily() {
  DecoderSpec spec;  // the plain network of model/decoder_spec.h
  spec.architecture = "LlamaForCausalLM";
  spec.model_type = "llama";
  return {spec, LlamaAttentionDefaults};
}

DecoderFamily MistralFamily() {
  DecoderFamily f = LlamaFamily();
  f.spec.architecture = "MistralForCausalLM";
  f.spec.model_type = "mistral";
  return f;
}

ModelAttentionDefaults LlamaAttentionDefaults(const ModelConfig& config) {
  ModelAttentionDefaults d;
  d.n_layers = config.n_layers;
  d.rope = config.rope;
  const Span window = SpanFromHfSlidingWindow(config.sliding_window);
  d.spans.assign(size_t(config.n_layers), window);
  // Newer configs name each layer's kind.
  for (size_t i = 0; i < config.layer_types.size(); ++i) {
    const std::string& t = config.layer_types[i];
    if (t == "full_attention") {
      d.spans[i] = Span{};
    } else if (t != "sliding_attention") {
      throw std::runtime_error("config.json: layer_types[" + std::to_string(i) + "] = '" + t +
                               "' (expected full_attention or sliding_attention)");
    }
  }
  if (window.window > 0) d.default_window = window.window;
  return d;
}

}  // namespace swan
