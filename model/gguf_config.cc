#include "model/gguf_config.h"

#include <stdexcept>

namespace swan {

ModelConfig GgufModelConfig(const GgufFile& file) {
  const std::string arch = file.String("general.architecture");
  const std::string p = arch + ".";
  ModelConfig c;
  c.model_type = arch;
  if (arch == "llama")
    c.architecture = "LlamaForCausalLM";
  else if (arch == "qwen2")
    c.architecture = "Qwen2ForCausalLM";
  else if (arch == "gemma3")
    c.architecture = "Gemma3ForCausalLM";
  else
    throw std::runtime_error(file.origin() + ": GGUF architecture '" + arch +
                             "' is not supported (llama, qwen2, gemma3)");
  c.hidden_size = file.Int(p + "embedding_length");
  c.intermediate_size = file.Int(p + "feed_forward_length");
  c.n_layers = int32_t(file.Int(p + "block_count"));
  c.n_heads = int32_t(file.Int(p + "attention.head_count"));
  c.n_kv_heads = int32_t(file.OptionalInt(p + "attention.head_count_kv").value_or(c.n_heads));
  if (c.hidden_size <= 0 || c.intermediate_size <= 0 || c.n_layers <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 ||
      c.n_heads % c.n_kv_heads != 0)
    throw std::runtime_error(file.origin() + ": GGUF metadata gives an impossible shape (embedding_length " +
                             std::to_string(c.hidden_size) + ", heads " + std::to_string(c.n_heads) + "/" +
                             std::to_string(c.n_kv_heads) + ")");
  c.head_dim = int32_t(file.OptionalInt(p + "attention.key_length").value_or(c.hidden_size / c.n_heads));
  if (const auto rot = file.OptionalInt(p + "rope.dimension_count"); rot && *rot != c.head_dim)
    throw std::runtime_error(file.origin() + ": RoPE over " + std::to_string(*rot) + " of " +
                             std::to_string(c.head_dim) + " head dimensions is not supported");
  const GgufTensor* embed = file.Tensor("token_embd.weight");
  if (!embed || embed->ne.size() != 2) throw std::runtime_error(file.origin() + ": no 2-D tensor token_embd.weight");
  c.vocab_size = embed->ne[1];
  c.max_position_embeddings = file.OptionalInt(p + "context_length").value_or(0);
  c.rms_norm_eps = file.Find(p + "attention.layer_norm_rms_epsilon") ? file.Float(p + "attention.layer_norm_rms_epsilon")
                                                                      : 1e-6;
  c.rope.base = file.Find(p + "rope.freq_base") ? file.Float(p + "rope.freq_base") : 10000.0;
  if (file.Tensor("rope_freqs.weight"))
    throw std::runtime_error(file.origin() +
                             ": per-frequency RoPE factors (rope_freqs.weight, Llama 3.1+ scaling) are not supported yet");
  if (file.Find(p + "rope.scaling.type")) {
    const std::string type = file.String(p + "rope.scaling.type");
    if (type == "linear" || type == "yarn") {
      c.rope.scaling.kind = type == "linear" ? RopeScaling::Kind::kLinear : RopeScaling::Kind::kYarn;
      c.rope.scaling.factor = file.Float(p + "rope.scaling.factor");
      c.rope.scaling.original_max_position_embeddings =
          file.OptionalInt(p + "rope.scaling.original_context_length").value_or(c.max_position_embeddings);
    } else if (type != "none") {
      throw std::runtime_error(file.origin() + ": RoPE scaling '" + type + "' is not supported (linear, yarn)");
    }
  }
  c.tie_word_embeddings = file.Tensor("output.weight") == nullptr;
  if (const auto bos = file.OptionalInt("tokenizer.ggml.bos_token_id")) c.bos_token_id = int32_t(*bos);
  if (const auto eos = file.OptionalInt("tokenizer.ggml.eos_token_id")) c.eos_token_ids.push_back(int32_t(*eos));
  const int32_t window = int32_t(file.OptionalInt(p + "attention.sliding_window").value_or(0));
  if (arch == "llama" && window > 0) {
    c.architecture = "MistralForCausalLM";
    c.sliding_window = window;
  } else if (arch == "qwen2") {
    c.attention_bias = file.Tensor("blk.0.attn_q.bias") != nullptr;
  } else if (arch == "gemma3") {
    // llama.cpp's Gemma 3: every 6th layer global (unless the file says),
    // local RoPE base 10000,
    // attention scaled by head_dim^-0.5, GELU-tanh
    c.hidden_act = "gelu_pytorch_tanh";
    c.sliding_window = window;
    c.sliding_window_pattern = int32_t(file.OptionalInt(p + "attention.sliding_window_pattern").value_or(6));
    c.rope_local_base_freq = 10000.0;
    c.query_pre_attn_scalar = c.head_dim;
  }
  return c;
}

}  // namespace swan
