#include "model/gguf_config.h"

#include <cmath>
#include <cstring>
#include <climits>
#include <initializer_list>
#include <optional>
#include <stdexcept>

#include "model/safetensors.h"

namespace swan {
namespace {

// An integer key that must fit a count (0 .. INT32_MAX): a larger value is
// reported as the file gives it, not cut to its low 32 bits.
std::optional<int32_t> OptionalCount(const GgufFile& file, const std::string& key) {
  const std::optional<int64_t> v = file.OptionalInt(key);
  if (v && (*v < 0 || *v > INT32_MAX))
    throw std::runtime_error(file.origin() + ": metadata '" + key + "' is " + std::to_string(*v) +
                             ", not a count (0 to " + std::to_string(INT32_MAX) + ")");
  return v ? std::optional<int32_t>(int32_t(*v)) : std::nullopt;
}

int32_t Count(const GgufFile& file, const std::string& key) {
  const std::optional<int32_t> v = OptionalCount(file, key);
  if (!v) throw std::runtime_error(file.origin() + ": no integer metadata '" + key + "'");
  return *v;
}

// The n values of a 1-D F32 tensor that holds hyperparameters; throws,
// naming it as `what`, for any other type or shape (`why`: what the n are).
std::vector<float> F32Values(const GgufTensor& t, int64_t n, const std::string& what, const std::string& why) {
  if (t.type != uint32_t(GgmlType::kF32) || t.ne != std::vector<int64_t>{n})
    throw std::runtime_error(what + " is " + GgmlTypeName(t.type) + " " + ShapeToString(t.ne) + ", expected F32 [" +
                             std::to_string(n) + "] (" + why + ")");
  std::vector<float> values(static_cast<size_t>(n));  // [n]
  std::memcpy(values.data(), t.data, values.size() * sizeof(float));
  return values;
}

// llama.cpp's rope_freqs tensor (its converter writes Llama 3.1+'s llama3
// scaling so): one F32 factor per frequency, which the frequency is divided by.
RopeScaling RopeFrequencyFactors(const GgufTensor& t, const std::string& arch, int32_t head_dim,
                                 const std::string& origin) {
  const std::string what = origin + ": rope_freqs.weight";
  if (!LlamaRowOrder(arch)) throw std::runtime_error(what + " belongs to llama files, not " + arch);
  RopeScaling s;
  s.kind = RopeScaling::Kind::kFrequencyFactors;
  const std::vector<float> factors =
      F32Values(t, head_dim / 2, what, "one factor per frequency of a " + std::to_string(head_dim) + "-wide head");
  for (size_t i = 0; i < factors.size(); ++i)
    if (!(factors[i] > 0) || !std::isfinite(factors[i]))
      throw std::runtime_error(what + " holds " + std::to_string(factors[i]) + " at " + std::to_string(i) +
                               ": a frequency's factor must be a positive number");
  s.frequency_factors.assign(factors.begin(), factors.end());
  return s;
}

// llama.cpp's granite_swa as swan writes its hybrids: Llama's network with
// a window flag per layer, and a RoPE flag for NoPE layers. What else
// granite_swa can hold (logit, residual, embedding and attention scales,
// experts, learned sink logits) is refused unless it leaves Llama's
// network as it is.
void GraniteSwaLayers(const GgufFile& file, int32_t window, ModelConfig* c) {
  const std::string p = "granite_swa.", origin = file.origin();
  // a key Llama's network has no use for, present with a value other than those that change nothing
  auto neutral = [&](const std::string& key, std::initializer_list<double> values) {
    if (!file.Find(p + key)) return;
    const double v = file.Float(p + key);
    for (double ok : values)
      if (std::fabs(v - ok) <= 1e-6 * std::fabs(ok)) return;
    throw std::runtime_error(origin + ": granite_swa " + key + " " + std::to_string(v) +
                             " is not supported (swan runs granite_swa files that are Llama's network)");
  };
  if (!file.Find(p + "logit_scale")) throw std::runtime_error(origin + ": granite_swa without logit_scale");
  neutral("logit_scale", {1.0});
  neutral("residual_scale", {0.0, 1.0});  // llama.cpp scales by a nonzero one
  neutral("embedding_scale", {0.0, 1.0});
  neutral("attention.scale", {0.0, 1.0 / std::sqrt(double(c->head_dim))});
  if (file.OptionalInt(p + "expert_count").value_or(0) > 0)
    throw std::runtime_error(origin + ": granite_swa with experts is not supported");
  const GgufValue* pattern = file.Find(p + "attention.sliding_window_pattern");
  if (!pattern || pattern->type != GgufValue::kArray || pattern->numbers.size() != size_t(c->n_layers))
    throw std::runtime_error(origin + ": granite_swa needs attention.sliding_window_pattern, one flag per layer (" +
                             std::to_string(c->n_layers) + ")");
  if (window <= 0) throw std::runtime_error(origin + ": granite_swa needs attention.sliding_window > 0");
  c->sliding_window = window;
  for (double w : pattern->numbers) c->layer_types.push_back(w != 0 ? "sliding_attention" : "full_attention");
  // NoPE layers (a 0 in rope_pattern) as the plan swan trains them under:
  // on every full layer, every window layer or all
  if (const GgufValue* rope = file.Find(p + "attention.rope_pattern")) {
    if (rope->type != GgufValue::kArray || rope->numbers.size() != pattern->numbers.size())
      throw std::runtime_error(origin + ": granite_swa's attention.rope_pattern needs one flag per layer");
    bool all_full = true, any_full = false, all_window = true, any_window = false;  // NoPE among each kind
    std::string spec = "full";
    for (size_t l = 0; l < rope->numbers.size(); ++l) {
      const bool windowed = pattern->numbers[l] != 0, nope = rope->numbers[l] == 0;
      if (windowed) spec += ",layer" + std::to_string(l) + ":swa:" + std::to_string(window);
      (windowed ? all_window : all_full) &= nope;
      (windowed ? any_window : any_full) |= nope;
    }
    if ((any_full && !all_full) || (any_window && !all_window))
      throw std::runtime_error(origin +
                               ": granite_swa's layers without RoPE are neither every full layer, every "
                               "window layer nor all; swan's plans have no other");
    if (any_full || any_window)
      c->attention_plan = spec + (any_full && any_window ? ",nope:all" : any_full ? ",nope:full" : ",nope:window");
  }
  for (int32_t l = 0; l < c->n_layers; ++l) {
    const std::string name = "blk." + std::to_string(l) + ".attn_sinks.weight";
    const GgufTensor* t = file.Tensor(name);
    if (!t) continue;  // llama.cpp requires it; swan has no use for it
    const std::vector<float> sinks = F32Values(*t, c->n_heads, origin + ": " + name, "a sink logit per head");
    for (size_t h = 0; h < sinks.size(); ++h)
      if (!(sinks[h] <= kNoSinkLogitBelow))
        throw std::runtime_error(origin + ": " + name + " holds the learned sink logit " + std::to_string(sinks[h]) +
                                 " for head " + std::to_string(h) + "; swan's models run without sink logits");
  }
}

}  // namespace

ModelConfig GgufModelConfig(const GgufFile& file) {
  const std::string arch = file.String("general.architecture");
  const std::string p = arch + ".";
  ModelConfig c;
  c.model_type = arch;
  if (arch == "llama" || arch == "granite_swa")
    c.architecture = "LlamaForCausalLM";
  else if (arch == "qwen2")
    c.architecture = "Qwen2ForCausalLM";
  else if (arch == "qwen3")
    c.architecture = "Qwen3ForCausalLM";
  else if (arch == "gemma3")
    c.architecture = "Gemma3ForCausalLM";
  else
    throw std::runtime_error(file.origin() + ": GGUF architecture '" + arch +
                             "' is not supported (llama, qwen2, qwen3, gemma3, granite_swa)");
  c.hidden_size = file.Int(p + "embedding_length");
  c.intermediate_size = file.Int(p + "feed_forward_length");
  c.n_layers = Count(file, p + "block_count");
  c.n_heads = Count(file, p + "attention.head_count");
  c.n_kv_heads = OptionalCount(file, p + "attention.head_count_kv").value_or(c.n_heads);
  if (c.hidden_size <= 0 || c.intermediate_size <= 0 || c.n_layers <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 ||
      c.n_heads % c.n_kv_heads != 0)
    throw std::runtime_error(file.origin() + ": GGUF metadata gives an impossible shape (embedding_length " +
                             std::to_string(c.hidden_size) + ", heads " + std::to_string(c.n_heads) + "/" +
                             std::to_string(c.n_kv_heads) + ")");
  c.head_dim = OptionalCount(file, p + "attention.key_length").value_or(int32_t(c.hidden_size / c.n_heads));
  if (const auto rot = file.OptionalInt(p + "rope.dimension_count"); rot && *rot != c.head_dim)
    throw std::runtime_error(file.origin() + ": RoPE over " + std::to_string(*rot) + " of " +
                             std::to_string(c.head_dim) + " head dimensions is not supported");
  const GgufTensor* embed = file.Tensor("token_embd.weight");
  if (!embed || embed->ne.size() != 2) throw std::runtime_error(file.origin() + ": no 2-D tensor token_embd.weight");
  c.vocab_size = embed->ne[1];
  c.max_position_embeddings = file.OptionalInt(p + "context_length").value_or(0);
  c.rms_norm_eps =
      file.Find(p + "attention.layer_norm_rms_epsilon") ? file.Float(p + "attention.layer_norm_rms_epsilon") : 1e-6;
  c.rope.base = file.Find(p + "rope.freq_base") ? file.Float(p + "rope.freq_base") : 10000.0;
  if (const GgufTensor* freqs = file.Tensor("rope_freqs.weight")) {
    c.rope.scaling = RopeFrequencyFactors(*freqs, arch, c.head_dim, file.origin());
    if (file.Find(p + "rope.scaling.type") && file.String(p + "rope.scaling.type") != "none")
      throw std::runtime_error(file.origin() + ": rope_freqs.weight together with RoPE scaling '" +
                               file.String(p + "rope.scaling.type") + "' is not supported");
  } else if (file.Find(p + "rope.scaling.type")) {
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
  if (const auto bos = OptionalCount(file, "tokenizer.ggml.bos_token_id")) c.bos_token_id = *bos;
  if (const auto eos = OptionalCount(file, "tokenizer.ggml.eos_token_id")) c.eos_token_ids.push_back(*eos);
  const int32_t window = OptionalCount(file, p + "attention.sliding_window").value_or(0);
  if (arch == "granite_swa") {
    GraniteSwaLayers(file, window, &c);
  } else if (arch == "llama" && window > 0) {
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
    c.sliding_window_pattern = OptionalCount(file, p + "attention.sliding_window_pattern").value_or(6);
    c.rope_local_base_freq = 10000.0;
    c.query_pre_attn_scalar = c.head_dim;
  }
  return c;
}

}  // namespace swan
