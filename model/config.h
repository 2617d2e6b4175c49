// A model's hyperparameters from a Hugging Face directory: config.json and,
// when present, generation_config.json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/rope.h"

namespace swan {

// Sampling defaults a checkpoint ships in generation_config.json.
struct GenerationDefaults {
  double temperature = 1.0;
  int32_t top_k = 0;   // 0 = off
  double top_p = 1.0;  // 1 = off
  double min_p = 0.0;  // 0 = off
  bool do_sample = false;
};

struct ModelConfig {
  std::string architecture;  // "LlamaForCausalLM" (first of "architectures")
  std::string model_type;    // "llama"
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int32_t n_layers = 0;    // num_hidden_layers
  int32_t n_heads = 0;     // num_attention_heads
  int32_t n_kv_heads = 0;  // num_key_value_heads (default n_heads)
  int32_t head_dim = 0;    // default hidden_size / n_heads
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  RopeSettings rope;  // rope_theta and rope_scaling
  bool tie_word_embeddings = false;
  std::string hidden_act = "silu";
  bool attention_bias = false;
  bool mlp_bias = false;
  // HF sliding_window (0 = none) and, when the config lists them,
  // layer_types ("sliding_attention" / "full_attention" per layer).
  int32_t sliding_window = 0;
  std::vector<std::string> layer_types;
  // Qwen2: the window applies only when use_sliding_window, and then only
  // to layers with index >= max_window_layers.
  bool use_sliding_window = false;
  int32_t max_window_layers = -1;  // -1 = not given
  // Gemma 3: every sliding_window_pattern-th layer is global (0 = not
  // given), local layers use RoPE base rope_local_base_freq (0 = not given),
  // attention logits scale by query_pre_attn_scalar^-0.5 (0 = not given).
  int32_t sliding_window_pattern = 0;
  double rope_local_base_freq = 0;
  double query_pre_attn_scalar = 0;
  // Soft-capping of attention and final logits (Gemma 2); 0 = none.
  double attn_logit_softcapping = 0;
  double final_logit_softcapping = 0;
  // The attention plan spec a model trained by swan was trained with
  // ("swan_attention_plan"; "" = none). It is the model's own plan.
  std::string attention_plan;
  // The Hedgehog feature dimension F of linear layers ("swan_linear_feature_dim"; 0 = head_dim / 2).
  int32_t linear_feature_dim = 0;
  int32_t bos_token_id = -1;           // -1 = none
  std::vector<int32_t> eos_token_ids;  // config and generation_config together
  GenerationDefaults generation;
};

// Reads DIR/config.json and DIR/generation_config.json (optional). Throws
// std::runtime_error naming the file and field on missing or bad values.
ModelConfig LoadModelConfig(const std::string& dir);

// Throws std::runtime_error naming `origin` and the HF field unless the
// sizes make a model: positive sizes and eps, heads a multiple of KV heads.
void CheckModelSizes(const ModelConfig& config, const std::string& origin);

// The text of a config.json that ParseModelConfig reads back as `config`
// (the inverse of the parser; generation defaults are not part of it).
// Fields at their "not given" value are left out; "torch_dtype" is
// float32.
std::string ModelConfigJson(const ModelConfig& config);

// Parses the text of a config.json (and of a generation_config.json, or ""),
// `origin` names the source in messages.
ModelConfig ParseModelConfig(const std::string& config_json, const std::string& generation_json,
                             const std::string& origin);

}  // namespace swan
