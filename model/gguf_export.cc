#include "model/gguf_export.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "model/gguf.h"
#include "model/gguf_tokenizer.h"
#include "model/gguf_weights.h"
#include "model/model.h"
#include "model/plan.h"
#include "model/safetensors.h"
#include "ops/quant_blocks.h"
#include "util/bf16.h"
#include "util/f16.h"

namespace swan {
namespace {

uint32_t GgmlTypeFor(WeightType type) {
  switch (type) {
    case WeightType::kF32: return uint32_t(GgmlType::kF32);
    case WeightType::kF16: return uint32_t(GgmlType::kF16);
    case WeightType::kBF16: return uint32_t(GgmlType::kBF16);
    case WeightType::kQ8_0: return uint32_t(GgmlType::kQ8_0);
    case WeightType::kQ4_0: return uint32_t(GgmlType::kQ4_0);
    case WeightType::kQ4_1: return uint32_t(GgmlType::kQ4_1);
    case WeightType::kQ5_0: return uint32_t(GgmlType::kQ5_0);
    case WeightType::kQ5_1: return uint32_t(GgmlType::kQ5_1);
    case WeightType::kQ4_K: return uint32_t(GgmlType::kQ4_K);
    case WeightType::kQ5_K: return uint32_t(GgmlType::kQ5_K);
    case WeightType::kQ6_K: return uint32_t(GgmlType::kQ6_K);
  }
  return 0;
}

// w [out, in] as `type`'s bytes.
std::string Encode(const std::vector<float>& w, int64_t out, int64_t in, WeightType type) {
  std::string bytes;
  if (IsBlockQuantized(type)) {
    const std::vector<uint8_t> q = QuantizeRows(type, w.data(), out, in);
    bytes.assign(q.begin(), q.end());
  } else if (type == WeightType::kF32) {
    bytes.assign(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float));
  } else {
    std::vector<uint16_t> half(w.size());  // [out, in]
    for (size_t i = 0; i < w.size(); ++i) half[i] = type == WeightType::kF16 ? F32ToF16(w[i]) : F32ToBF16(w[i]);
    bytes.assign(reinterpret_cast<const char*>(half.data()), half.size() * sizeof(uint16_t));
  }
  return bytes;
}

// Each layer's window under the plan swan runs `dir` under by default (its
// trained plan, else its config's layer types), and whether it rotates by
// RoPE (`rope`, [layers]): what granite_swa holds. Throws for layers it
// cannot hold; `notes` gets what the file leaves out.
std::vector<int32_t> WindowPerLayer(const ModelConfig& c, const std::string& dir, std::vector<bool>* rope,
                                    std::vector<std::string>* notes) {
  const AttentionPlan plan =
      ResolvePlan(c.attention_plan.empty() ? "model" : c.attention_plan, AttentionDefaultsFor(c));
  std::vector<int32_t> windows;  // [layers]
  int32_t window = 0, sinks = 0;
  for (size_t l = 0; l < plan.layers.size(); ++l) {
    const LayerPlan& layer = plan.layers[l];
    const std::string which = dir + ": layer " + std::to_string(l) + " ";
    if (layer.kind != LayerKind::kFull && layer.kind != LayerKind::kWindow)
      throw std::runtime_error(which + "attends as a " + LayerKindName(layer.kind) +
                               " layer; GGUF files hold full and sliding-window layers");
    RopeSettings rotated = layer.rope;  // NoPE layers are flagged apart
    rotated.enabled = true;
    if (rotated.ToString() != c.rope.ToString())
      throw std::runtime_error(which + "has " + layer.rope.ToString() + " where the model has " + c.rope.ToString() +
                               "; GGUF files hold one RoPE, on or off per layer");
    rope->push_back(layer.rope.enabled);
    if (layer.span.blocks)
      throw std::runtime_error(which + "attends in " + layer.span.ToString() +
                               "; GGUF files hold sliding windows only (keep the HF directory)");
    if (layer.position_mode != PositionMode::kAbsolute)
      throw std::runtime_error(which + "counts positions in the cache; GGUF files hold absolute positions");
    windows.push_back(layer.span.window);
    if (layer.span.window > 0 && window > 0 && layer.span.window != window)
      throw std::runtime_error(dir + ": window layers of " + std::to_string(window) + " and " +
                               std::to_string(layer.span.window) + " keys; granite_swa holds one window");
    window = std::max(window, layer.span.window);
    sinks = std::max(sinks, layer.span.sinks);
  }
  if (sinks > 0 && notes)
    notes->push_back("the plan's " + std::to_string(sinks) + " sink tokens have no place in a GGUF file (llama.cpp " +
                     "keeps none): the file's window layers see their last " + std::to_string(window) +
                     " keys; swan runs it as trained with --attn '" + plan.spec + "'");
  return windows;
}

}  // namespace

std::string HfToGgufBytes(const std::string& dir, WeightType type, std::vector<std::string>* notes) {
  const ModelConfig c = LoadModelConfig(dir);
  std::string arch;
  if (c.architecture == "LlamaForCausalLM" || c.architecture == "MistralForCausalLM")
    arch = "llama";
  else if (c.architecture == "Qwen2ForCausalLM")
    arch = "qwen2";
  else if (c.architecture == "Qwen3ForCausalLM")
    arch = "qwen3";
  else if (c.architecture == "Gemma3ForCausalLM")
    arch = "gemma3";
  else
    throw std::runtime_error(dir + ": " + c.architecture +
                             " has no GGUF layout here (Llama, Mistral, Qwen2, Qwen3, Gemma 3)");
  // A Llama with window layers beside full ones (swan's hybrids), or
  // trained by swan under a window plan, is llama.cpp's granite_swa:
  // Llama's network with a window flag per layer (and a logit scale and
  // learned sink logits: 1, none). A Mistral (one window on every layer,
  // named by sliding_window alone) stays llama, as llama.cpp's converter
  // writes it.
  std::vector<int32_t> windows;  // [layers] per layer its window, 0 = full
  std::vector<bool> rope;        // [layers] false: a NoPE layer
  if (arch == "llama" && (!c.layer_types.empty() || !c.attention_plan.empty()))
    windows = WindowPerLayer(c, dir, &rope, notes);
  const bool nope = std::count(rope.begin(), rope.end(), false) > 0;
  const bool hybrid = std::count_if(windows.begin(), windows.end(), [](int32_t w) { return w > 0; }) > 0;
  if (hybrid) arch = "granite_swa";
  if (nope && !hybrid)
    throw std::runtime_error(dir + ": NoPE layers go into GGUF files beside window layers only (as granite_swa)");
  const int32_t window = hybrid ? *std::max_element(windows.begin(), windows.end()) : c.sliding_window;
  const bool llama_rows = LlamaRowOrder(arch);  // q/k rows in interleaved RoPE order
  // llama3 scaling (and factors read from a GGUF file) go into the file as
  // llama.cpp's converter writes them: a rope_freqs tensor, which its
  // Llama-like architectures read
  const bool frequency_factors =
      c.rope.scaling.kind == RopeScaling::Kind::kLlama3 || c.rope.scaling.kind == RopeScaling::Kind::kFrequencyFactors;
  if (frequency_factors && !llama_rows)
    throw std::runtime_error(dir + ": " + c.rope.scaling.ToString() + " RoPE scaling has no GGUF form for " + arch +
                             " (llama.cpp reads rope_freqs.weight in llama files)");
  const bool window_types = std::count(c.layer_types.begin(), c.layer_types.end(), "sliding_attention") > 0;
  if ((window_types && !llama_rows) || ((arch == "qwen2" || arch == "qwen3") && c.use_sliding_window))
    throw std::runtime_error(dir + ": per-layer attention types of " + arch + " have no GGUF metadata here");
  const std::string p = arch + ".";
  using V = GgufValue;
  std::vector<std::pair<std::string, GgufValue>> meta = {
      {"general.architecture", GgufString(arch)},
      {p + "embedding_length", GgufNumber(V::kU32, double(c.hidden_size))},
      {p + "feed_forward_length", GgufNumber(V::kU32, double(c.intermediate_size))},
      {p + "block_count", GgufNumber(V::kU32, c.n_layers)},
      {p + "attention.head_count", GgufNumber(V::kU32, c.n_heads)},
      {p + "attention.head_count_kv", GgufNumber(V::kU32, c.n_kv_heads)},
      {p + "attention.key_length", GgufNumber(V::kU32, c.head_dim)},
      {p + "attention.value_length", GgufNumber(V::kU32, c.head_dim)},
      {p + "rope.dimension_count", GgufNumber(V::kU32, c.head_dim)},
      {p + "attention.layer_norm_rms_epsilon", GgufNumber(V::kF32, c.rms_norm_eps)},
      {p + "rope.freq_base", GgufNumber(V::kF32, c.rope.base)},
  };
  if (c.max_position_embeddings > 0)
    meta.push_back({p + "context_length", GgufNumber(V::kU32, double(c.max_position_embeddings))});
  if (c.rope.scaling.kind == RopeScaling::Kind::kLinear || c.rope.scaling.kind == RopeScaling::Kind::kYarn) {
    meta.push_back(
        {p + "rope.scaling.type", GgufString(c.rope.scaling.kind == RopeScaling::Kind::kLinear ? "linear" : "yarn")});
    meta.push_back({p + "rope.scaling.factor", GgufNumber(V::kF32, c.rope.scaling.factor)});
    meta.push_back({p + "rope.scaling.original_context_length",
                    GgufNumber(V::kU32, double(c.rope.scaling.original_max_position_embeddings))});
  }
  if (window > 0) meta.push_back({p + "attention.sliding_window", GgufNumber(V::kU32, window)});
  if (hybrid) {
    GgufValue window_layers;  // [layers] true: a window layer
    window_layers.type = V::kArray;
    window_layers.element = V::kBool;
    for (int32_t w : windows) window_layers.numbers.push_back(w > 0);
    meta.push_back({p + "attention.sliding_window_pattern", window_layers});
    if (nope) {
      GgufValue rotated = window_layers;  // [layers] true: the layer rotates q and k by RoPE
      rotated.numbers.assign(rope.begin(), rope.end());
      meta.push_back({p + "attention.rope_pattern", rotated});
    }
    meta.push_back({p + "logit_scale", GgufNumber(V::kF32, 1.0)});
  }
  if (arch == "gemma3") {
    meta.push_back({p + "attention.sliding_window_pattern",
                    GgufNumber(V::kU32, c.sliding_window_pattern > 0 ? c.sliding_window_pattern : 6)});
    if ((c.rope_local_base_freq > 0 && c.rope_local_base_freq != 10000.0) ||
        (c.query_pre_attn_scalar > 0 && c.query_pre_attn_scalar != c.head_dim))
      throw std::runtime_error(dir +
                               ": a Gemma 3 with a local RoPE base other than 10000 or query_pre_attn_scalar "
                               "other than head_dim has no GGUF metadata here");
  }
  if (std::filesystem::is_regular_file(std::filesystem::path(dir) / "tokenizer.json")) {
    for (auto& entry : GgufTokenizerMetadata(dir, c.vocab_size)) meta.push_back(std::move(entry));
  } else {  // no tokenizer: llama.cpp's "none" (its vocabulary size from the key), and the special ids
    meta.push_back({"tokenizer.ggml.model", GgufString("none")});
    meta.push_back({p + "vocab_size", GgufNumber(V::kU32, double(c.vocab_size))});
    if (c.bos_token_id >= 0) meta.push_back({"tokenizer.ggml.bos_token_id", GgufNumber(V::kU32, c.bos_token_id)});
    if (!c.eos_token_ids.empty())
      meta.push_back({"tokenizer.ggml.eos_token_id", GgufNumber(V::kU32, c.eos_token_ids[0])});
  }

  const TensorStore store = TensorStore::OpenDirectory(dir);
  std::vector<GgufTensorBytes> tensors;
  for (const std::string& hf : store.Names()) {
    if (std::string_view(hf).ends_with("rotary_emb.inv_freq")) continue;
    if (hf == "lm_head.weight" && c.tie_word_embeddings) continue;
    const std::string name = GgufTensorName(hf, arch);
    if (name.empty()) throw std::runtime_error(dir + ": tensor '" + hf + "' has no GGUF name");
    const TensorInfo& info = store.Info(hf);
    std::vector<float> w = store.ReadF32(hf, info.shape);
    const int64_t in = info.shape.back(), out = int64_t(w.size()) / in;
    const bool qk = std::string_view(hf).ends_with("q_proj.weight") || std::string_view(hf).ends_with("k_proj.weight");
    if (llama_rows && qk) {
      const std::vector<float> rows = w;  // [out, in] in Hugging Face's order
      for (int64_t g = 0; g < out; ++g)
        std::memcpy(&w[size_t(g * in)], &rows[size_t(LlamaQkHfRow(g, c.head_dim) * in)], size_t(in) * sizeof(float));
    }
    if (arch == "gemma3" && std::string_view(hf).ends_with("norm.weight"))
      for (float& v : w) v += 1.0f;
    const WeightType as = info.shape.size() == 2 && RowFits(type, in) ? type : WeightType::kF32;
    GgufTensorBytes t;
    t.name = name;
    t.type = GgmlTypeFor(as);
    t.ne.assign(info.shape.rbegin(), info.shape.rend());
    t.bytes = Encode(w, out, in, as);
    tensors.push_back(std::move(t));
  }
  if (hybrid) {  // granite_swa's learned sink logits, which it requires: none (exp(-1e30 - score) is 0)
    const std::vector<float> none(size_t(c.n_heads), kNoSinkLogit);
    for (int32_t l = 0; l < c.n_layers; ++l)
      tensors.push_back({"blk." + std::to_string(l) + ".attn_sinks.weight",
                         uint32_t(GgmlType::kF32),
                         {c.n_heads},
                         std::string(reinterpret_cast<const char*>(none.data()), none.size() * sizeof(float))});
  }
  if (frequency_factors) {
    const std::vector<double> factors = FrequencyFactors(c.rope, c.head_dim);  // [head_dim / 2]
    const std::vector<float> values(factors.begin(), factors.end());
    tensors.push_back({"rope_freqs.weight",
                       uint32_t(GgmlType::kF32),
                       {int64_t(values.size())},
                       std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float))});
  }
  return GgufBytes(meta, tensors);
}

}  // namespace swan
