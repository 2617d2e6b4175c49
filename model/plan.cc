#include "model/plan.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace swan {
namespace {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

[[noreturn]] void Reject(const std::string& spec, const std::string& why) {
  throw std::invalid_argument("attention plan '" + spec + "': " + why);
}

// A positive integer, or a rejection naming `what`.
int32_t ParseCount(const std::string& spec, const std::string& text, const std::string& what, bool allow_zero = false) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || text[0] == '+' || text[0] == '-' || v > (1L << 30))
    Reject(spec, what + " must be a non-negative integer, got '" + text + "'");
  if (v == 0 && !allow_zero) Reject(spec, what + " must be positive, got 0");
  return int32_t(v);
}

// "A+B+C": KV head indices, ascending, no repeats.
std::vector<int32_t> ParseHeadList(const std::string& spec, const std::string& text, const std::string& item) {
  std::vector<int32_t> heads;
  for (const std::string& h : Split(text, '+'))
    heads.push_back(ParseCount(spec, h, "a KV head in '" + item + "'", /*allow_zero=*/true));
  std::sort(heads.begin(), heads.end());
  if (std::adjacent_find(heads.begin(), heads.end()) != heads.end())
    Reject(spec, "'" + item + "' lists a KV head twice");
  return heads;
}

// {"full_heads": [[heads of layer 0], [heads of layer 1], ...]}
std::vector<std::vector<int32_t>> ReadHeadsFile(const std::string& path, int32_t n_layers) {
  std::error_code error;
  // A list of heads per layer is small: refuse devices, directories and
  // anything too big to be one before reading it.
  if (!std::filesystem::is_regular_file(path, error) || std::filesystem::file_size(path, error) > (16u << 20))
    throw std::invalid_argument("heads file " + path + ": not a readable file of at most 16 MiB");
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("heads file " + path + ": cannot be read");
  const nlohmann::json j = nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("full_heads") || !j["full_heads"].is_array())
    throw std::invalid_argument("heads file " + path +
                                ": expected JSON {\"full_heads\": [[KV heads of layer 0], ...]} (swan heads --select "
                                "writes one)");
  std::vector<std::vector<int32_t>> layers;
  for (const nlohmann::json& l : j["full_heads"]) {
    if (!l.is_array()) throw std::invalid_argument("heads file " + path + ": each layer's entry is a list of KV heads");
    std::vector<int32_t> heads;
    for (const nlohmann::json& h : l) {
      if (!h.is_number_integer() || h.get<int64_t>() < 0 || h.get<int64_t>() > (1 << 20))
        throw std::invalid_argument("heads file " + path + ": KV heads are non-negative integers, got " + h.dump());
      heads.push_back(h.get<int32_t>());
    }
    std::sort(heads.begin(), heads.end());
    if (std::adjacent_find(heads.begin(), heads.end()) != heads.end())
      throw std::invalid_argument("heads file " + path + ": layer " + std::to_string(layers.size()) +
                                  " lists a KV head twice");
    layers.push_back(heads);
  }
  if (int32_t(layers.size()) != n_layers)
    throw std::invalid_argument("heads file " + path + " gives " + std::to_string(layers.size()) +
                                " layers, the model has " + std::to_string(n_layers));
  return layers;
}

}  // namespace

std::string JoinHeads(const std::vector<int32_t>& heads, char sep) {
  std::string s;
  for (const int32_t h : heads) s += (s.empty() ? "" : std::string(1, sep)) + std::to_string(h);
  return s;
}

std::string LayerPlan::SpanText() const {
  if (kind == LayerKind::kLinear) return span.full() ? "linear" : "linear + " + span.ToString();
  if (kind == LayerKind::kRouted) return "full | " + span.ToString();
  if (kind != LayerKind::kPerHead) return span.ToString();
  return "KV heads " + JoinHeads(full_heads, ',') + " full | " + span.ToString();
}

Span LayerPlan::HeadSpan(int32_t kv_head) const {
  if (kind != LayerKind::kPerHead) return span;
  return std::binary_search(full_heads.begin(), full_heads.end(), kv_head) ? Span{} : span;
}

bool AttentionPlan::HasLinearLayers() const {
  for (const LayerPlan& l : layers)
    if (l.kind == LayerKind::kLinear) return true;
  return false;
}

bool AttentionPlan::HasPerHeadLayers() const {
  for (const LayerPlan& l : layers)
    if (l.kind == LayerKind::kPerHead) return true;
  return false;
}

std::vector<std::vector<int32_t>> AttentionPlan::FullHeads() const {
  std::vector<std::vector<int32_t>> heads;  // [n_layers]
  for (const LayerPlan& l : layers)
    heads.push_back(l.kind == LayerKind::kPerHead ? l.full_heads : std::vector<int32_t>{});
  return heads;
}

const char* LayerKindName(LayerKind kind) {
  switch (kind) {
    case LayerKind::kFull: return "full";
    case LayerKind::kWindow: return "window";
    case LayerKind::kRouted: return "routed";
    case LayerKind::kPerHead: return "per-head";
    case LayerKind::kLinear: return "linear";
  }
  return "?";
}

bool AttentionPlan::HasRoutedLayers() const {
  for (const LayerPlan& l : layers)
    if (l.kind == LayerKind::kRouted) return true;
  return false;
}

bool AttentionPlan::HasWindowLayers() const {
  for (const LayerPlan& l : layers)
    if (l.kind == LayerKind::kWindow || l.kind == LayerKind::kPerHead) return true;
  return false;
}

std::string AttentionPlan::Describe() const {
  std::ostringstream s;
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerPlan& l = layers[i];
    s << "layer " << i << "\t" << LayerKindName(l.kind) << "\t" << l.SpanText() << "\t" << l.rope.ToString()
      << (l.position_mode == PositionMode::kCache ? " (cache positions)" : "") << "\n";
  }
  return s.str();
}

int32_t StaggeredOffset(int32_t index, int32_t window) { return int32_t(int64_t(index % 4) * window / 4); }

PlanSpec ParsePlanSpec(const std::string& spec) {
  PlanSpec p;
  if (spec.empty() || spec == "model") return p;
  const std::vector<std::string> items = Split(spec, ',');
  bool have_preset = false, have_window = false, have_sinks = false;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string& item = items[i];
    const std::vector<std::string> w = Split(item, ':');
    const std::string& head = w[0];
    if (item.empty()) Reject(spec, "empty item (two commas in a row, or a trailing comma)");

    // Presets: only as the first item.
    if (head == "full" || head == "swa" || head == "hybrid" || head == "model" || head == "routed" ||
        head == "linear") {
      if (have_preset || i != 0)
        Reject(spec, "'" + item + "': the preset (full, swa:W, hybrid:A:B, routed:W, linear, model) comes once, first");
      have_preset = true;
      if (head == "linear") {
        if (w.size() > 2) Reject(spec, "'" + item + "': expected linear or linear:W (a softmax window of W)");
        p.preset = PlanSpec::Preset::kLinear;
        if (w.size() == 2) {
          p.window = ParseCount(spec, w[1], "the window in '" + item + "'");
          have_window = true;
        }
      } else if (head == "full" || head == "model") {
        if (w.size() != 1) Reject(spec, "'" + item + "' takes no arguments");
        p.preset = head == "full" ? PlanSpec::Preset::kFull : PlanSpec::Preset::kModel;
      } else if (head == "swa" || head == "routed") {
        if (w.size() != 2) Reject(spec, "'" + item + "': expected " + head + ":W");
        p.preset = head == "swa" ? PlanSpec::Preset::kSwa : PlanSpec::Preset::kRouted;
        p.window = ParseCount(spec, w[1], "the window in '" + item + "'");
        have_window = true;
      } else {
        if (w.size() != 3) Reject(spec, "'" + item + "': expected hybrid:A:B (A window layers, B full)");
        p.preset = PlanSpec::Preset::kHybrid;
        p.hybrid_window_layers = ParseCount(spec, w[1], "A in '" + item + "'");
        p.hybrid_full_layers = ParseCount(spec, w[2], "B in '" + item + "'");
      }
      continue;
    }
    if (head == "window") {
      if (w.size() != 2) Reject(spec, "'" + item + "': expected window:W");
      if (have_window) Reject(spec, "'" + item + "': the window is given twice");
      p.window = ParseCount(spec, w[1], "the window in '" + item + "'");
      have_window = true;
    } else if (head == "sinks") {
      if (w.size() != 2) Reject(spec, "'" + item + "': expected sinks:S");
      if (have_sinks) Reject(spec, "'" + item + "': sinks are given twice");
      p.sinks = ParseCount(spec, w[1], "the sink count in '" + item + "'", /*allow_zero=*/true);
      have_sinks = true;
    } else if (head == "nope") {
      if (w.size() != 2) Reject(spec, "'" + item + "': expected nope:full, nope:window or nope:all");
      if (w[1] == "full" || w[1] == "all") p.nope_full = true;
      if (w[1] == "window" || w[1] == "all") p.nope_window = true;
      if (w[1] != "full" && w[1] != "window" && w[1] != "all")
        Reject(spec, "'" + item + "': expected nope:full, nope:window or nope:all");
    } else if (head == "rope-base") {
      if (w.size() != 3 || (w[1] != "full" && w[1] != "window"))
        Reject(spec, "'" + item + "': expected rope-base:full:B or rope-base:window:B");
      char* end = nullptr;
      const double base = std::strtod(w[2].c_str(), &end);
      if (w[2].empty() || *end != '\0' || !(base > 1))
        Reject(spec, "'" + item + "': the RoPE base must be a number > 1, got '" + w[2] + "'");
      double& slot = w[1] == "full" ? p.rope_base_full : p.rope_base_window;
      if (slot != 0) Reject(spec, "'" + item + "': the " + w[1] + " layers' RoPE base is given twice");
      slot = base;
    } else if (head == "heads") {
      if (item.size() <= 6) Reject(spec, "'" + item + "': expected heads:FILE.json");
      if (!p.heads_file.empty()) Reject(spec, "'" + item + "': the heads file is given twice");
      p.heads_file = item.substr(6);  // a path may hold ':'
    } else if (head == "pos") {
      if (w.size() != 2 || (w[1] != "cache" && w[1] != "absolute"))
        Reject(spec, "'" + item + "': expected pos:cache or pos:absolute");
      p.position_mode = w[1] == "cache" ? PositionMode::kCache : PositionMode::kAbsolute;
    } else if (head == "chunked" || head == "staggered") {
      if (w.size() != 1) Reject(spec, "'" + item + "' takes no arguments");
      if (p.window_shape != PlanSpec::WindowShape::kSliding)
        Reject(spec, "'" + item + "': the window shape (chunked or staggered) is given twice");
      p.window_shape = head == "chunked" ? PlanSpec::WindowShape::kChunked : PlanSpec::WindowShape::kStaggered;
    } else if (head == "rope-scaling") {
      if (w.size() != 2 || (w[1] != "full" && w[1] != "none"))
        Reject(spec, "'" + item + "': expected rope-scaling:full or rope-scaling:none");
      p.rope_scaling = w[1] == "full" ? PlanSpec::RopeScalingScope::kFullOnly : PlanSpec::RopeScalingScope::kNone;
    } else if (head.rfind("layer", 0) == 0 && head.size() > 5) {
      const int32_t layer = ParseCount(spec, head.substr(5), "the layer index in '" + item + "'", /*allow_zero=*/true);
      if (p.overrides.count(layer)) Reject(spec, "'" + item + "': layer " + head.substr(5) + " is given twice");
      PlanSpec::LayerOverride o;
      if (w.size() == 2 && w[1] == "full") {
        o.kind = LayerKind::kFull;
      } else if ((w.size() == 2 || w.size() == 3) && w[1] == "linear") {
        o.kind = LayerKind::kLinear;  // no W: linear alone, not the plan's window
        if (w.size() == 3) o.window = ParseCount(spec, w[2], "the window in '" + item + "'");
      } else if ((w.size() == 2 || w.size() == 3) && (w[1] == "swa" || w[1] == "routed")) {
        o.kind = w[1] == "swa" ? LayerKind::kWindow : LayerKind::kRouted;
        if (w.size() == 3) o.window = ParseCount(spec, w[2], "the window in '" + item + "'");
      } else if ((w.size() == 3 || w.size() == 4) && w[1] == "heads") {
        o.kind = LayerKind::kPerHead;
        o.full_heads = ParseHeadList(spec, w[2], item);
        if (w.size() == 4) o.window = ParseCount(spec, w[3], "the window in '" + item + "'");
      } else {
        Reject(spec, "'" + item +
                         "': expected layerN:full, layerN:swa[:W], layerN:routed[:W], layerN:linear[:W] or "
                         "layerN:heads:A+B[:W]");
      }
      p.overrides[layer] = o;
    } else {
      Reject(spec, "unknown word '" + item +
                       "' (expected full, swa:W, hybrid:A:B, routed:W, linear[:W], window:W, sinks:S, "
                       "layerN:full, layerN:swa[:W], layerN:routed[:W], layerN:linear[:W], layerN:heads:A+B[:W], "
                       "heads:FILE.json, nope:full|window|all, rope-base:full|window:B, "
                       "rope-scaling:full|none, pos:cache, chunked, staggered)");
    }
  }
  if (p.preset == PlanSpec::Preset::kFull && have_window && p.overrides.empty() && p.heads_file.empty())
    Reject(spec, "window:" + std::to_string(p.window) + " given, but a full plan has no window layers");
  if (p.preset == PlanSpec::Preset::kFull && have_sinks && p.sinks > 0 && p.heads_file.empty()) {
    bool any_window = false;
    for (const auto& [layer, o] : p.overrides) any_window |= o.kind != LayerKind::kFull;
    if (!any_window) Reject(spec, "sinks need a window: full attention already sees every key");
  }
  if (p.preset == PlanSpec::Preset::kSwa || p.preset == PlanSpec::Preset::kRouted ||
      (p.preset == PlanSpec::Preset::kLinear && items[0] != "linear")) {
    // swa:W, routed:W and linear:W set the window; a later window:W would be a second one.
    for (size_t i = 1; i < items.size(); ++i)
      if (items[i].rfind("window:", 0) == 0) Reject(spec, "the window is given twice (" + items[0] + " and window:W)");
  }
  return p;
}

AttentionPlan ResolvePlan(const std::string& spec, const ModelAttentionDefaults& model) {
  const PlanSpec p = ParsePlanSpec(spec);
  const int32_t n = model.n_layers;
  if (n <= 0) throw std::invalid_argument("attention plan: the model has no layers");
  if (!model.spans.empty() && int32_t(model.spans.size()) != n)
    throw std::invalid_argument("attention plan: the model gives " + std::to_string(model.spans.size()) +
                                " spans for " + std::to_string(n) + " layers");
  if (!model.layer_ropes.empty() && int32_t(model.layer_ropes.size()) != n)
    throw std::invalid_argument("attention plan: the model gives " + std::to_string(model.layer_ropes.size()) +
                                " RoPE settings for " + std::to_string(n) + " layers");

  // The window of window layers that the spec does not size itself.
  int32_t window = p.window;
  if (window == 0) {
    for (const Span& s : model.spans)
      if (s.window > 0) window = s.window;
    if (window == 0) window = model.default_window;
  }
  bool needs_window = p.preset == PlanSpec::Preset::kHybrid || !p.heads_file.empty();
  for (const auto& [layer, o] : p.overrides)
    needs_window =
        needs_window || (layer < n && o.kind != LayerKind::kFull && o.kind != LayerKind::kLinear && o.window == 0);
  if (needs_window && window == 0)
    throw std::invalid_argument("attention plan '" + spec +
                                "': the model has no sliding window of its own, so the plan must give "
                                "one, e.g. '" +
                                spec + ",window:256'");

  AttentionPlan plan;
  plan.spec = spec.empty() ? "model" : spec;
  plan.layers.resize(size_t(n));
  plan.n_kv_heads = model.n_kv_heads;
  plan.linear_phi_dim = model.linear_phi_dim;
  for (int32_t i = 0; i < n; ++i) {
    LayerPlan& l = plan.layers[size_t(i)];
    switch (p.preset) {
      case PlanSpec::Preset::kModel: {
        const Span s = model.spans.empty() ? Span{} : model.spans[size_t(i)];
        l.kind = s.full() ? LayerKind::kFull : LayerKind::kWindow;
        l.span = s;
        if (p.window > 0 && !s.full()) l.span.window = p.window;
        break;
      }
      case PlanSpec::Preset::kFull: l.kind = LayerKind::kFull; break;
      case PlanSpec::Preset::kSwa:
        l.kind = LayerKind::kWindow;
        l.span.window = window;
        break;
      case PlanSpec::Preset::kRouted:
        l.kind = LayerKind::kRouted;
        l.span.window = window;
        break;
      case PlanSpec::Preset::kLinear:
        l.kind = LayerKind::kLinear;
        l.span.window = p.window;  // linear:W; 0: linear alone
        break;
      case PlanSpec::Preset::kHybrid: {
        const int32_t period = p.hybrid_window_layers + p.hybrid_full_layers;
        const bool is_window = i % period < p.hybrid_window_layers;
        l.kind = is_window ? LayerKind::kWindow : LayerKind::kFull;
        if (is_window) l.span.window = window;
        break;
      }
    }
  }
  // A layer with some of its KV heads full, from the heads file.
  auto set_heads = [&](LayerPlan& l, const std::vector<int32_t>& heads, int32_t layer_window,
                       const std::string& where) {
    for (const int32_t h : heads)
      if (model.n_kv_heads > 0 && h >= model.n_kv_heads)
        throw std::invalid_argument(where + ": KV head " + std::to_string(h) + " is out of range (the model has " +
                                    std::to_string(model.n_kv_heads) + " KV heads)");
    l.full_heads.clear();
    if (heads.empty()) {
      l.kind = LayerKind::kWindow;
    } else if (model.n_kv_heads > 0 && int32_t(heads.size()) == model.n_kv_heads) {
      l.kind = LayerKind::kFull;
    } else {
      l.kind = LayerKind::kPerHead;
      l.full_heads = heads;
    }
    l.span = l.kind == LayerKind::kFull ? Span{} : Span{layer_window, 0};
  };
  if (!p.heads_file.empty()) {
    const std::vector<std::vector<int32_t>> heads = ReadHeadsFile(p.heads_file, n);
    for (int32_t i = 0; i < n; ++i)
      set_heads(plan.layers[size_t(i)], heads[size_t(i)], window,
                "attention plan '" + spec + "': heads file, layer " + std::to_string(i));
  }
  for (const auto& [layer, o] : p.overrides) {
    if (layer >= n)
      throw std::invalid_argument("attention plan '" + spec + "': layer" + std::to_string(layer) +
                                  " does not exist (the model has layers 0.." + std::to_string(n - 1) + ")");
    LayerPlan& l = plan.layers[size_t(layer)];
    if (o.kind == LayerKind::kPerHead) {
      set_heads(l, o.full_heads, o.window > 0 ? o.window : window,
                "attention plan '" + spec + "': layer" + std::to_string(layer));
      continue;
    }
    l.kind = o.kind;
    l.full_heads.clear();
    if (o.kind == LayerKind::kLinear)
      l.span = Span{o.window, 0};  // layerN:linear:W, or linear alone
    else
      l.span = o.kind == LayerKind::kFull ? Span{} : Span{o.window > 0 ? o.window : window, 0};
  }
  bool any_window = false, any_sink_layer = false;
  const bool blocks = p.window_shape != PlanSpec::WindowShape::kSliding;
  int32_t window_layers = 0;  // layers with a window so far: the staggered count
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    LayerPlan& l = plan.layers[i];
    // Sinks go on window layers and window branches; a linear layer's older
    // keys are all in its state (LoLCATs' hybrid has none).
    if (l.kind == LayerKind::kLinear) {
      any_window |= !l.span.full();
      if (blocks && !l.span.full())
        throw std::invalid_argument("attention plan '" + spec + "': layer " + std::to_string(i) +
                                    " is linear with a softmax window, which slides; chunked and staggered "
                                    "windows are for window, routed and per-head layers");
    } else if (l.kind != LayerKind::kFull) {
      any_window = true;
      any_sink_layer = true;
      if (p.sinks > 0) l.span.sinks = p.sinks;
      if (blocks) {
        l.span.blocks = true;
        l.span.offset =
            p.window_shape == PlanSpec::WindowShape::kStaggered ? StaggeredOffset(window_layers, l.span.window) : 0;
      }
      ++window_layers;
    }
    // A routed layer's positions are those of its full branch, a per-head
    // layer's those of its full heads, a linear layer's those of every token.
    const bool full = l.kind != LayerKind::kWindow;
    // A layer keeps the RoPE it was trained with, whatever attention it runs.
    l.rope = model.layer_ropes.empty() ? model.rope : model.layer_ropes[i];
    if ((full && p.nope_full) || (!full && p.nope_window)) l.rope.enabled = false;
    const double base = full ? p.rope_base_full : p.rope_base_window;
    if (base > 0) l.rope.base = base;
    if (p.rope_scaling == PlanSpec::RopeScalingScope::kNone ||
        (p.rope_scaling == PlanSpec::RopeScalingScope::kFullOnly && !full))
      l.rope.scaling = RopeScaling{};
    ValidateSpan(l.span);
  }
  bool any_sinks = false;
  for (LayerPlan& l : plan.layers) {
    if (l.kind != LayerKind::kWindow || l.span.sinks == 0) continue;
    any_sinks = true;
    l.position_mode = p.position_mode;
  }
  if (p.position_mode == PositionMode::kCache && blocks)
    throw std::invalid_argument("attention plan '" + spec +
                                "': pos:cache places sinks right before a sliding window; chunked and "
                                "staggered windows keep absolute positions");
  if (blocks && window_layers == 0)
    throw std::invalid_argument("attention plan '" + spec +
                                "': " + (p.window_shape == PlanSpec::WindowShape::kChunked ? "chunked" : "staggered") +
                                " shapes window layers, and this plan has none");
  if (p.position_mode == PositionMode::kCache && !any_sinks)
    throw std::invalid_argument("attention plan '" + spec +
                                "': pos:cache (StreamingLLM) changes only window layers with sinks; "
                                "add sinks:S");
  if (p.sinks > 0 && !any_sink_layer)
    throw std::invalid_argument("attention plan '" + spec +
                                "': sinks need a window, and this plan has no window layers (a linear layer's "
                                "older keys are all in its state)");
  if (p.window > 0 && !any_window)
    throw std::invalid_argument("attention plan '" + spec + "': window:" + std::to_string(p.window) +
                                " given, but this plan has no window layers");
  return plan;
}

}  // namespace swan
