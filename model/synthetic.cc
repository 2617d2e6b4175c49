#include "model/synthetic.h"

#include <stdexcept>

#include "model/model.h"
#include "model/weight_source.h"

namespace swan {
namespace {

struct Shape {
  const char* name;
  int64_t hidden, intermediate;
  int32_t layers, heads, kv_heads, head_dim;
  int64_t vocab;
  double rope_theta;
  bool tied;
  int32_t sliding_window;    // 0 = none
  int32_t local_per_global;  // window layers per full layer; 0 = every layer alike
};

// Sizes from each model's published config.json.
const Shape kShapes[] = {
    {"llama3.2-1b", 2048, 8192, 16, 32, 8, 64, 128256, 500000.0, true, 0, 0},
    {"qwen2.5-0.5b", 896, 4864, 24, 14, 2, 64, 151936, 1000000.0, true, 0, 0},
    {"gemma3-1b", 1152, 6912, 26, 4, 1, 256, 262144, 1000000.0, true, 512, 5},
    {"mistral-7b", 4096, 14336, 32, 32, 8, 128, 32000, 10000.0, false, 4096, 0},
};

}  // namespace

std::vector<std::string> SyntheticShapeNames() {
  std::vector<std::string> names;
  for (const Shape& s : kShapes) names.push_back(s.name);
  return names;
}

ModelConfig SyntheticConfig(const std::string& name) {
  for (const Shape& s : kShapes) {
    if (name != s.name) continue;
    ModelConfig c;
    c.architecture = "LlamaForCausalLM";
    c.model_type = "llama";
    c.hidden_size = s.hidden;
    c.intermediate_size = s.intermediate;
    c.n_layers = s.layers;
    c.n_heads = s.heads;
    c.n_kv_heads = s.kv_heads;
    c.head_dim = s.head_dim;
    c.vocab_size = s.vocab;
    c.max_position_embeddings = 1 << 20;
    c.rms_norm_eps = 1e-6;
    c.rope.base = s.rope_theta;
    c.tie_word_embeddings = s.tied;
    c.sliding_window = s.sliding_window;
    if (s.local_per_global > 0)
      for (int32_t i = 0; i < s.layers; ++i)
        c.layer_types.push_back((i + 1) % (s.local_per_global + 1) == 0 ? "full_attention" : "sliding_attention");
    c.bos_token_id = 1;
    return c;
  }
  std::string known;
  for (const Shape& s : kShapes) known += std::string(known.empty() ? "" : ", ") + s.name;
  throw std::invalid_argument("unknown synthetic shape '" + name + "' (known: " + known + ")");
}

std::unique_ptr<LanguageModel> LoadSyntheticModel(const std::string& name, WeightType weight_type, uint64_t seed,
                                                  int vulkan_device) {
  return BuildModelOn(RandomWeights(seed, weight_type), SyntheticConfig(name), "synthetic " + name, vulkan_device);
}

}  // namespace swan
