#include "model/config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "util/json_integer.h"

namespace swan {
namespace {

using nlohmann::json;

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Field readers that name the file and field in every error.
class Fields {
 public:
  Fields(const json& j, const std::string& origin) : j_(j), origin_(origin) {}

  bool Has(const char* name) const { return j_.contains(name) && !j_[name].is_null(); }

  template <typename T>
  T Required(const char* name) const {
    if (!Has(name)) throw std::runtime_error(origin_ + ": missing field \"" + name + "\"");
    return Get<T>(name);
  }
  template <typename T>
  T Optional(const char* name, T fallback) const {
    return Has(name) ? Get<T>(name) : fallback;
  }
  // An id or a list of ids (eos_token_id may be either).
  std::vector<int32_t> Ids(const char* name) const {
    if (!Has(name)) return {};
    if (j_[name].is_array()) return Get<std::vector<int32_t>>(name);
    return {Get<int32_t>(name)};
  }
  const json& Raw(const char* name) const { return j_[name]; }
  const std::string& origin() const { return origin_; }

 private:
  template <typename T>
  T Get(const char* name) const {
    const json& v = j_[name];
    auto wrong = [&](const char* what) {
      return std::runtime_error(origin_ + ": field \"" + name + "\" " + what + " (" + v.dump() + ")");
    };
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (!v.is_number()) throw wrong("has the wrong type");
      const std::optional<T> i = JsonInteger<T>(v);
      if (!i) throw wrong("is not a whole number in range");
      return *i;
    } else if constexpr (std::is_same_v<T, std::vector<int32_t>>) {
      if (!v.is_array()) throw wrong("has the wrong type");
      T out;
      for (const json& e : v) {
        const std::optional<int32_t> i = JsonInteger<int32_t>(e);
        if (!i) throw wrong("holds an entry that is not a whole number in range");
        out.push_back(*i);
      }
      return out;
    } else {
      try {
        return v.get<T>();
      } catch (const json::exception&) {
        throw wrong("has the wrong type");
      }
    }
  }
  const json& j_;
  std::string origin_;
};

json ParseJson(const std::string& text, const std::string& origin) {
  try {
    json j = json::parse(text);
    if (!j.is_object()) throw std::runtime_error(origin + ": not a JSON object");
    return j;
  } catch (const json::exception& e) {
    throw std::runtime_error(origin + ": not valid JSON (" + e.what() + ")");
  }
}

RopeScaling ParseRopeScaling(const json& j, const std::string& origin, int64_t max_pos) {
  RopeScaling s;
  if (j.is_null()) return s;
  if (!j.is_object()) throw std::runtime_error(origin + ": rope_scaling must be an object or null");
  const Fields f(j, origin + " rope_scaling");
  std::string type = f.Optional<std::string>("rope_type", "");
  if (type.empty()) type = f.Optional<std::string>("type", "default");
  if (type == "default") return s;
  if (type == "linear") {
    s.kind = RopeScaling::Kind::kLinear;
  } else if (type == "yarn") {
    s.kind = RopeScaling::Kind::kYarn;
    s.beta_fast = f.Optional<double>("beta_fast", 32.0);
    s.beta_slow = f.Optional<double>("beta_slow", 1.0);
    s.attention_factor = f.Optional<double>("attention_factor", 0.0);
  } else if (type == "llama3") {
    s.kind = RopeScaling::Kind::kLlama3;
    s.low_freq_factor = f.Required<double>("low_freq_factor");
    s.high_freq_factor = f.Required<double>("high_freq_factor");
  } else if (type == "longrope") {
    // each frequency divided by a factor of its own (how swan writes the
    // rope_freqs of a GGUF file): one set of factors, cos and sin unscaled
    s.kind = RopeScaling::Kind::kFrequencyFactors;
    s.frequency_factors = f.Required<std::vector<double>>("short_factor");
    const double attention = f.Optional<double>("attention_factor", f.Optional<double>("factor", 1.0) > 1 ? 0.0 : 1.0);
    if (f.Required<std::vector<double>>("long_factor") != s.frequency_factors || attention != 1.0)
      throw std::runtime_error(origin +
                               ": longrope scaling is supported with long_factor equal to short_factor and "
                               "attention_factor 1");
    s.original_max_position_embeddings = f.Optional<int64_t>("original_max_position_embeddings", max_pos);
    return s;
  } else {
    throw std::runtime_error(origin + ": rope_scaling type '" + type +
                             "' is not supported (default, linear, yarn, llama3, longrope)");
  }
  s.factor = f.Required<double>("factor");
  s.original_max_position_embeddings = f.Optional<int64_t>("original_max_position_embeddings", max_pos);
  return s;
}

}  // namespace

void CheckModelSizes(const ModelConfig& c, const std::string& origin) {
  auto positive = [&](const char* name, int64_t v) {
    if (v <= 0) throw std::runtime_error(origin + ": \"" + name + "\" must be positive, got " + std::to_string(v));
  };
  positive("hidden_size", c.hidden_size);
  positive("intermediate_size", c.intermediate_size);
  positive("num_hidden_layers", c.n_layers);
  positive("num_attention_heads", c.n_heads);
  positive("num_key_value_heads", c.n_kv_heads);
  positive("vocab_size", c.vocab_size);
  positive("head_dim", c.head_dim);
  if (!(c.rms_norm_eps > 0))
    throw std::runtime_error(origin + ": \"rms_norm_eps\" must be positive, got " + std::to_string(c.rms_norm_eps));
  if (c.n_heads % c.n_kv_heads != 0)
    throw std::runtime_error(origin + ": num_attention_heads (" + std::to_string(c.n_heads) +
                             ") is not a multiple of num_key_value_heads (" + std::to_string(c.n_kv_heads) + ")");
}

ModelConfig ParseModelConfig(const std::string& config_json, const std::string& generation_json,
                             const std::string& origin) {
  const json j = ParseJson(config_json, origin);
  const Fields f(j, origin);
  ModelConfig c;
  if (f.Has("architectures")) {
    const auto archs = f.Optional<std::vector<std::string>>("architectures", {});
    if (!archs.empty()) c.architecture = archs[0];
  }
  c.model_type = f.Optional<std::string>("model_type", "");
  c.hidden_size = f.Required<int64_t>("hidden_size");
  c.intermediate_size = f.Required<int64_t>("intermediate_size");
  c.n_layers = f.Required<int32_t>("num_hidden_layers");
  c.n_heads = f.Required<int32_t>("num_attention_heads");
  c.n_kv_heads = f.Optional<int32_t>("num_key_value_heads", c.n_heads);
  c.vocab_size = f.Required<int64_t>("vocab_size");
  c.max_position_embeddings = f.Optional<int64_t>("max_position_embeddings", 0);
  c.rms_norm_eps = f.Optional<double>("rms_norm_eps", 1e-6);
  c.rope.base = f.Optional<double>("rope_theta", 10000.0);
  if (f.Has("rope_scaling"))
    c.rope.scaling = ParseRopeScaling(f.Raw("rope_scaling"), origin, c.max_position_embeddings);
  // HF's default: Gemma ties its head to the embedding, the others do not.
  const bool gemma = c.architecture == "Gemma3ForCausalLM" || c.model_type == "gemma3_text";
  c.tie_word_embeddings = f.Optional<bool>("tie_word_embeddings", gemma);
  c.hidden_act = f.Optional<std::string>("hidden_act", "silu");
  // Gemma configs name the MLP activation hidden_activation.
  c.hidden_act = f.Optional<std::string>("hidden_activation", c.hidden_act);
  c.attention_bias = f.Optional<bool>("attention_bias", false);
  c.mlp_bias = f.Optional<bool>("mlp_bias", false);
  c.sliding_window = f.Optional<int32_t>("sliding_window", 0);
  c.layer_types = f.Optional<std::vector<std::string>>("layer_types", {});
  c.use_sliding_window = f.Optional<bool>("use_sliding_window", false);
  c.max_window_layers = f.Optional<int32_t>("max_window_layers", -1);
  c.sliding_window_pattern = f.Optional<int32_t>("sliding_window_pattern", 0);
  c.rope_local_base_freq = f.Optional<double>("rope_local_base_freq", 0.0);
  c.query_pre_attn_scalar = f.Optional<double>("query_pre_attn_scalar", 0.0);
  c.attn_logit_softcapping = f.Optional<double>("attn_logit_softcapping", 0.0);
  c.final_logit_softcapping = f.Optional<double>("final_logit_softcapping", 0.0);
  c.attention_plan = f.Optional<std::string>("swan_attention_plan", "");
  c.linear_feature_dim = f.Optional<int32_t>("swan_linear_feature_dim", 0);
  if (c.linear_feature_dim < 0) throw std::runtime_error(origin + ": swan_linear_feature_dim must be >= 0");
  c.bos_token_id = f.Optional<int32_t>("bos_token_id", -1);
  c.eos_token_ids = f.Ids("eos_token_id");

  if (f.Has("max_position_embeddings") && c.max_position_embeddings <= 0)
    throw std::runtime_error(origin + ": \"max_position_embeddings\" must be positive, got " +
                             std::to_string(c.max_position_embeddings));
  // A window of 0 or less is no window; null says "none" (HF's spelling).
  // A window longer than the context is kept: Qwen2.5's configs carry
  // sliding_window 131072 beside a context of 32768, unused.
  if (f.Has("sliding_window") && c.sliding_window <= 0)
    throw std::runtime_error(origin + ": \"sliding_window\" must be positive (null for none), got " +
                             std::to_string(c.sliding_window));
  if (f.Has("head_dim")) {
    c.head_dim = f.Required<int32_t>("head_dim");
  } else {
    if (c.n_heads <= 0 || c.hidden_size % c.n_heads != 0)
      throw std::runtime_error(origin + ": hidden_size is not a multiple of num_attention_heads " +
                               "and there is no head_dim");
    c.head_dim = int32_t(c.hidden_size / c.n_heads);
  }
  CheckModelSizes(c, origin);
  if (!c.layer_types.empty() && int32_t(c.layer_types.size()) != c.n_layers)
    throw std::runtime_error(origin + ": layer_types has " + std::to_string(c.layer_types.size()) + " entries for " +
                             std::to_string(c.n_layers) + " layers");

  if (!generation_json.empty()) {
    const std::string gen_origin = origin + " (generation_config.json)";
    const json g = ParseJson(generation_json, gen_origin);
    const Fields gf(g, gen_origin);
    GenerationDefaults& d = c.generation;
    d.temperature = gf.Optional<double>("temperature", d.temperature);
    d.top_k = gf.Optional<int32_t>("top_k", d.top_k);
    d.top_p = gf.Optional<double>("top_p", d.top_p);
    d.min_p = gf.Optional<double>("min_p", d.min_p);
    d.do_sample = gf.Optional<bool>("do_sample", d.do_sample);
    if (c.bos_token_id < 0) c.bos_token_id = gf.Optional<int32_t>("bos_token_id", -1);
    for (int32_t id : gf.Ids("eos_token_id"))
      if (std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), id) == c.eos_token_ids.end())
        c.eos_token_ids.push_back(id);
  }
  return c;
}

namespace {

json RopeScalingJson(const RopeScaling& s) {
  if (s.kind == RopeScaling::Kind::kNone) return nullptr;
  json j;
  j["factor"] = s.factor;
  if (s.original_max_position_embeddings > 0)
    j["original_max_position_embeddings"] = s.original_max_position_embeddings;
  switch (s.kind) {
    case RopeScaling::Kind::kLinear: j["rope_type"] = "linear"; break;
    case RopeScaling::Kind::kYarn:
      j["rope_type"] = "yarn";
      j["beta_fast"] = s.beta_fast;
      j["beta_slow"] = s.beta_slow;
      if (s.attention_factor > 0) j["attention_factor"] = s.attention_factor;
      break;
    case RopeScaling::Kind::kLlama3:
      j["rope_type"] = "llama3";
      j["low_freq_factor"] = s.low_freq_factor;
      j["high_freq_factor"] = s.high_freq_factor;
      break;
    case RopeScaling::Kind::kFrequencyFactors:  // transformers' longrope with one set of factors
      j["rope_type"] = "longrope";
      j["short_factor"] = s.frequency_factors;
      j["long_factor"] = s.frequency_factors;
      j["attention_factor"] = 1.0;
      break;
    case RopeScaling::Kind::kNone: break;
  }
  return j;
}

}  // namespace

std::string ModelConfigJson(const ModelConfig& c) {
  json j;
  if (!c.architecture.empty()) j["architectures"] = json::array({c.architecture});
  if (!c.model_type.empty()) j["model_type"] = c.model_type;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.n_layers;
  j["num_attention_heads"] = c.n_heads;
  j["num_key_value_heads"] = c.n_kv_heads;
  j["head_dim"] = c.head_dim;
  j["vocab_size"] = c.vocab_size;
  if (c.max_position_embeddings > 0) j["max_position_embeddings"] = c.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope.base;
  j["rope_scaling"] = RopeScalingJson(c.rope.scaling);
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["hidden_act"] = c.hidden_act;
  // Gemma's configs name it so, and the parser lets that name win.
  if (c.hidden_act != "silu") j["hidden_activation"] = c.hidden_act;
  j["attention_bias"] = c.attention_bias;
  j["mlp_bias"] = c.mlp_bias;
  if (c.sliding_window > 0) j["sliding_window"] = c.sliding_window;
  if (!c.layer_types.empty()) j["layer_types"] = c.layer_types;
  if (c.use_sliding_window) j["use_sliding_window"] = true;
  if (c.max_window_layers >= 0) j["max_window_layers"] = c.max_window_layers;
  if (c.sliding_window_pattern > 0) j["sliding_window_pattern"] = c.sliding_window_pattern;
  if (c.rope_local_base_freq > 0) j["rope_local_base_freq"] = c.rope_local_base_freq;
  if (c.query_pre_attn_scalar > 0) j["query_pre_attn_scalar"] = c.query_pre_attn_scalar;
  if (c.attn_logit_softcapping != 0) j["attn_logit_softcapping"] = c.attn_logit_softcapping;
  if (c.final_logit_softcapping != 0) j["final_logit_softcapping"] = c.final_logit_softcapping;
  if (!c.attention_plan.empty()) j["swan_attention_plan"] = c.attention_plan;
  if (c.linear_feature_dim > 0) j["swan_linear_feature_dim"] = c.linear_feature_dim;
  if (c.bos_token_id >= 0) j["bos_token_id"] = c.bos_token_id;
  if (c.eos_token_ids.size() == 1) j["eos_token_id"] = c.eos_token_ids[0];
  if (c.eos_token_ids.size() > 1) j["eos_token_id"] = c.eos_token_ids;
  j["torch_dtype"] = "float32";
  return j.dump(2) + "\n";
}

ModelConfig LoadModelConfig(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path config = fs::path(dir) / "config.json";
  // A model is a GGUF file or a directory; say which the path is not.
  if (!fs::exists(dir)) throw std::runtime_error(dir + ": no such file or directory");
  if (!fs::is_directory(dir))
    throw std::runtime_error(dir +
                             ": not a model: a GGUF file begins with \"GGUF\", and a model directory holds "
                             "config.json and model.safetensors");
  if (!fs::exists(config)) throw std::runtime_error(dir + ": no config.json (is this a model directory?)");
  const fs::path gen = fs::path(dir) / "generation_config.json";
  const std::string gen_text = fs::exists(gen) ? ReadText(gen.string()) : "";
  return ParseModelConfig(ReadText(config.string()), gen_text, config.string());
}

}  // namespace swan
