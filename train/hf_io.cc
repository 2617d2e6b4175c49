#include "train/hf_io.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "attention/hedgehog.h"
#include "attention/linear_attention.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "train/checkpoint.h"
#include "train/routed.h"

namespace swan {
namespace {

using nlohmann::json;

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

int32_t LoadHfWeights(TrainModel& model, const std::string& dir, int32_t* new_feature_maps,
                      const std::vector<int32_t>& layer_sources) {
  const TensorStore store = TensorStore::OpenDirectory(dir);
  const std::vector<ParamTensor>& tensors = model.tensors();
  if (!layer_sources.empty() && int64_t(layer_sources.size()) != model.config().n_layers)
    throw std::logic_error("LoadHfWeights: layer sources for " + std::to_string(layer_sources.size()) +
                           " layers, the model has " + std::to_string(model.config().n_layers));
  // The name in DIR of the model's tensor t ("" for a new layer's).
  auto source_name = [&](const ParamTensor& t) -> std::string {
    if (layer_sources.empty() || t.layer < 0) return t.name;
    const int32_t source = layer_sources[size_t(t.layer)];
    if (source < 0) return "";
    const std::string own = "model.layers." + std::to_string(t.layer) + ".";
    if (t.name.compare(0, own.size(), own) != 0) throw std::logic_error("LoadHfWeights: layer tensor " + t.name);
    return "model.layers." + std::to_string(source) + "." + t.name.substr(own.size());
  };
  int32_t new_routers = 0, new_maps = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const ParamTensor& t = tensors[i];
    const std::string name = source_name(t);
    if (name.empty()) {
      // A new layer adds nothing to the residual stream until it learns to.
      if (t.role == TensorRole::kO || t.role == TensorRole::kDown)
        std::fill_n(model.params().data() + t.offset, t.numel, 0.0f);
      continue;
    }
    if (t.role == TensorRole::kFeatureMapQWeight && !store.Has(name)) {
      // A softmax layer becoming linear: its four feature-map tensors
      // (q weight, q bias, k weight, k bias) follow one another.
      for (size_t j = i; j < i + 4; ++j)
        if (store.Has(source_name(tensors.at(j))))
          throw std::runtime_error(dir + " has " + source_name(tensors[j]) + " but not " + name);
      float* p = model.params().data();
      const ModelConfig& c = model.config();
      const int32_t F = LinearPhiDim(c) / 2;
      InitHedgehog(p + t.offset, p + tensors[i + 1].offset, {c.n_heads, c.head_dim, F});
      InitHedgehog(p + tensors[i + 2].offset, p + tensors[i + 3].offset, {c.n_kv_heads, c.head_dim, F});
      ++new_maps;
      i += 3;
      continue;
    }
    if (t.role == TensorRole::kWindowFactor && !store.Has(name)) {
      // A layer becoming LoLCATs' hybrid: its window starts at weight 0.1.
      std::fill_n(model.params().data() + t.offset, t.numel, kInitialWindowFactorLogit);
      continue;
    }
    if (t.role == TensorRole::kRouterWeight && !store.Has(name)) {
      // A full-attention model becoming routed: TrainModel lays the bias out
      // right after the weight.
      const ParamTensor& bias = tensors.at(i + 1);
      if (bias.role != TensorRole::kRouterBias)
        throw std::logic_error("LoadHfWeights: " + t.name + " is not followed by its bias");
      if (store.Has(source_name(bias)))
        throw std::runtime_error(dir + " has " + source_name(bias) + " but not " + name);
      InitRouter(model.params().data() + t.offset, model.params().data() + bias.offset, t.numel);
      ++new_routers;
      ++i;
      continue;
    }
    const std::vector<float> w = store.ReadF32(name, t.shape);
    std::memcpy(model.params().data() + t.offset, w.data(), w.size() * sizeof(float));
  }
  // Every tensor of the checkpoint must have a place in the model, or the
  // export would silently lose it.
  std::vector<std::string> dropped;
  for (const std::string& name : store.Names()) {
    const bool buffer = EndsWith(name, "rotary_emb.inv_freq");
    const bool tied_head = model.config().tie_word_embeddings && name == "lm_head.weight";
    bool used = buffer || tied_head;
    for (const ParamTensor& t : tensors) used = used || source_name(t) == name;
    if (!used) dropped.push_back(name);
  }
  if (!dropped.empty())
    throw std::runtime_error(dir + " holds " + std::to_string(dropped.size()) +
                             " tensors the trainer has no place for (" + dropped.front() +
                             (dropped.size() > 1 ? ", ..." : "") + "); training would drop them from the export");
  if (new_feature_maps) *new_feature_maps = new_maps;
  return new_routers;
}

namespace {

// ",chunked", ",staggered" or "" (sliding windows): the word whose
// offsets the plan's block windows have. Throws for other mixtures.
std::string BlockShapeWord(const AttentionPlan& plan) {
  bool any_blocks = false, all_blocks = true, aligned = true, staggered = true;
  int32_t index = 0;  // layers with a window so far, as the plan counts them
  for (const LayerPlan& l : plan.layers) {
    if (l.kind == LayerKind::kFull || l.kind == LayerKind::kLinear) continue;
    any_blocks |= l.span.blocks;
    all_blocks &= l.span.blocks;
    aligned &= l.span.offset == 0;
    staggered &= l.span.offset == StaggeredOffset(index++, l.span.window);
  }
  if (!any_blocks) return "";
  if (all_blocks && staggered) return ",staggered";  // before aligned: one window layer is both
  if (all_blocks && aligned) return ",chunked";
  throw std::invalid_argument("plan mixes sliding and block windows, or has block offsets no spec says");
}

}  // namespace

std::string CanonicalPlanSpec(const AttentionPlan& plan) {
  std::string spec = "full";
  int32_t sinks = -1;
  bool nope_full = true, nope_window = true, any_full = false, any_window = false;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const LayerPlan& l = plan.layers[i];
    if (l.kind == LayerKind::kLinear) {
      spec += ",layer" + std::to_string(i) + ":linear" + (l.span.full() ? "" : ":" + std::to_string(l.span.window));
    } else if (l.kind != LayerKind::kFull) {
      // sinks:S applies to window layers and routed layers' window branches alike.
      spec += ",layer" + std::to_string(i) +
              (l.kind == LayerKind::kWindow   ? ":swa:"
               : l.kind == LayerKind::kRouted ? ":routed:"
                                              : ":heads:" + JoinHeads(l.full_heads, '+') + ":") +
              std::to_string(l.span.window);
      if (sinks >= 0 && sinks != l.span.sinks)
        throw std::invalid_argument("plan has different sink counts per layer; no spec says that");
      sinks = l.span.sinks;
    }
    // nope:full covers routed and linear layers too: their positions are every token's.
    if (l.kind == LayerKind::kWindow) {
      any_window = true;
      nope_window &= !l.rope.enabled;
    } else {
      any_full = true;
      nope_full &= !l.rope.enabled;
    }
  }
  if (sinks > 0) spec += ",sinks:" + std::to_string(sinks);
  spec += BlockShapeWord(plan);
  if (any_full && nope_full && any_window && nope_window) {
    spec += ",nope:all";
  } else {
    if (any_full && nope_full) spec += ",nope:full";
    if (any_window && nope_window) spec += ",nope:window";
  }
  return spec;
}

int32_t AddedTokenId(const std::string& path, const std::string& token) {
  const json j = json::parse(ReadText(path), nullptr, false);
  if (j.is_discarded() || !j.contains("added_tokens")) return -1;
  for (const json& t : j["added_tokens"])
    if (t.value("content", "") == token) return t.value("id", -1);
  return -1;
}

void ExportHfDirectory(const std::string& dir, const TrainModel& model, const ExportOptions& options) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  const AttentionPlan& plan = model.plan();
  ModelConfig c = model.config();
  c.architecture = model.spec().architecture;
  c.model_type = model.spec().model_type;
  c.bos_token_id = options.bos_token_id;
  c.eos_token_ids.clear();
  if (options.eos_token_id >= 0) c.eos_token_ids.push_back(options.eos_token_id);
  // The window layers in HF's own terms, when they share one window. A
  // family whose layers differ by more than their window (Gemma 3's local
  // and global RoPE bases) keeps its own layout: the plan, below, says
  // what runs, and the layout which layer is which.
  if (AttentionDefaultsFor(c).layer_ropes.empty()) {
    int32_t window = 0;
    bool one_window = true;
    // Block windows have no HF spelling: their layers read as full there,
    // and the plan below says what they are.
    for (const LayerPlan& l : plan.layers)
      if (l.kind == LayerKind::kWindow && !l.span.blocks) {
        one_window &= window == 0 || window == l.span.window;
        window = l.span.window;
      }
    c.sliding_window = one_window ? window : 0;
    if (model.spec().architecture == "Qwen2ForCausalLM" ||
        model.spec().architecture == "Qwen3ForCausalLM") {  // whose window is off unless asked for
      c.use_sliding_window = c.sliding_window > 0;
      c.max_window_layers = c.use_sliding_window ? 0 : -1;
    }
    c.layer_types.clear();
    for (const LayerPlan& l : plan.layers)
      c.layer_types.push_back(l.kind == LayerKind::kWindow && !l.span.blocks && c.sliding_window > 0
                                  ? "sliding_attention"
                                  : "full_attention");
  }
  const std::string spec = CanonicalPlanSpec(plan);
  c.attention_plan = spec;
  c.linear_feature_dim = plan.HasLinearLayers() ? LinearPhiDim(c) / 2 : 0;
  WriteFileAtomic((fs::path(dir) / "config.json").string(), ModelConfigJson(c));

  json p;
  p["spec"] = spec;
  p["trained_with"] = plan.spec;
  json layers = json::array();
  for (const LayerPlan& l : plan.layers)
    layers.push_back({{"kind", LayerKindName(l.kind)},
                      {"window", l.span.window},
                      {"sinks", l.span.sinks},
                      {"blocks", l.span.blocks},
                      {"block_offset", l.span.offset},
                      {"rope", l.rope.ToString()},
                      {"full_heads", l.full_heads}});
  p["layers"] = layers;
  WriteFileAtomic((fs::path(dir) / "attention_plan.json").string(), p.dump(2) + "\n");

  const std::vector<ParamTensor>& tensors = model.tensors();
  std::vector<TensorHeader> headers;
  for (const ParamTensor& t : tensors) headers.push_back({t.name, "F32", t.shape, size_t(t.numel) * 4});
  WriteFileAtomic((fs::path(dir) / "model.safetensors").string(),
                  SafetensorsBytes(headers, [&](size_t i, std::string& out) {
                    out.append(reinterpret_cast<const char*>(model.params().data() + tensors[i].offset),
                               size_t(tensors[i].numel) * 4);
                  }));

  if (!options.tokenizer_json.empty())
    WriteFileAtomic((fs::path(dir) / "tokenizer.json").string(), ReadText(options.tokenizer_json));
}

}  // namespace swan
