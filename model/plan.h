// The attention plan: what attention every layer does (docs/design.md §2).
//
// A plan is data, resolved from a short text spec and the model's config:
//
//   (empty) | model   the model's own plan (HF sliding_window / layer_types)
//   full              every layer full causal attention
//   swa:W             every layer a window of W keys (the query included)
//   hybrid:A:B        A window layers then B full layers, repeating
//                     (hybrid:3:1 Mellum 2, hybrid:1:1 Gemma 2 / gpt-oss,
//                     hybrid:5:1 Gemma 3)
//   routed:W          every layer routed (Switch Attention, docs/design.md §4): a
//                     learned router sends each token to full attention or
//                     to a window of W keys; the cache keeps every key
//   linear            every layer causal linear attention with a learned
//                     Hedgehog feature map (attention/linear_attention.h):
//                     a state of fixed size instead of keys
//   linear:W          LoLCATs' hybrid: the newest W keys by softmax, the
//                     older ones linear (a ring of W and the state)
// followed by comma-separated modifiers:
//   window:W          the window of the window layers (hybrid; default: the
//                     model's sliding_window, else 4096)
//   sinks:S           S sink tokens on every window layer (and on the
//                     window branch of routed layers)
//   layerN:full       layer N full attention
//   layerN:swa[:W]    layer N a window layer (of W, or the plan's window)
//   layerN:routed[:W] layer N routed, its window branch W (or the plan's)
//   layerN:linear[:W] layer N linear attention (with a softmax window of W)
//   layerN:heads:A+B[:W]  layer N per-head: KV heads A, B, ... keep every key,
//                     the others a window of W (or the plan's) and the sinks
//   heads:FILE.json   per-head layers from a file ({"full_heads": [[...] per
//                     layer]}, as `swan heads --select` writes it): a layer
//                     with some of its KV heads listed becomes per-head, with
//                     all of them full, with none a window layer
//   nope:full | nope:window | nope:all   no RoPE on those layers
//   rope-base:full:B | rope-base:window:B  RoPE base of those layers (Gemma 3:
//                     10000 on window layers, 1000000 on full ones)
//   rope-scaling:full | rope-scaling:none  the config's RoPE scaling (YaRN, ...)
//                     on full layers only (Mellum 2), or on no layer
//   pos:cache         StreamingLLM positions on window layers with sinks
//                     (per-head layers keep absolute positions)
//   chunked           window layers attend in blocks of W (Llama 4's chunked
//                     attention): a query sees its block from its start
//   staggered         blocks of W whose starts move by W/4 from one window
//                     layer to the next: offsets 0, W/4, W/2, 3W/4, 0, ...
//                     (counted over layers with a window, in order)
// e.g. "hybrid:3:1,window:64,sinks:4,layer0:full,nope:full".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "attention/span.h"
#include "ops/rope.h"

namespace swan {

// kRouted: per token, full attention or the window `span` (Switch
// Attention); both branches share Q, K, V and a cache that keeps every key.
// kPerHead: per KV head, full attention (`full_heads`) or the window `span`
// (DuoAttention); the cache keeps every key of the full heads only.
// kLinear: linear attention over every earlier token through a feature map
// (LoLCATs' linearized attention); a fixed-size state instead of a cache.
// With a window `span` (LoLCATs' hybrid) the newest keys go by softmax and
// only the older ones through the state.
enum class LayerKind { kFull, kWindow, kRouted, kPerHead, kLinear };
const char* LayerKindName(LayerKind kind);  // full, window, routed, per-head or linear
// Position mode (docs/design.md §2): `absolute` token positions, or `cache`
// (StreamingLLM): positions counted in the cache, so a window layer's sinks
// sit right before its window at any length (model/cache_positions.h).
enum class PositionMode { kAbsolute, kCache };

struct LayerPlan {
  LayerKind kind = LayerKind::kFull;
  Span span;  // window 0 for full layers; the window branch of routed ones
  RopeSettings rope;
  PositionMode position_mode = PositionMode::kAbsolute;
  std::vector<int32_t> full_heads;  // kPerHead: the KV heads that see every key, ascending

  // The span the KV cache must serve: a routed layer keeps every key, since
  // any later token may route to full attention. (A per-head layer's cache
  // also keeps every key of its full_heads.)
  Span cache_span() const { return kind == LayerKind::kRouted ? Span{} : span; }
  // "window 64", "full | window 64" (routed), "KV heads 0,2 full | window 64",
  // "linear".
  std::string SpanText() const;
  // The span KV head `kv_head` attends under.
  Span HeadSpan(int32_t kv_head) const;
};

struct AttentionPlan {
  std::string spec;               // what it was resolved from
  std::vector<LayerPlan> layers;  // [n_layers]
  int32_t n_kv_heads = 0;         // the model's, when known (per-head layers' share of full heads)
  int32_t linear_phi_dim = 0;     // the model's P, when known (a linear layer's state rows)

  bool HasWindowLayers() const;  // kWindow or kPerHead layers (ring caches)
  bool HasRoutedLayers() const;
  bool HasPerHeadLayers() const;
  bool HasLinearLayers() const;
  // The full heads of every layer (empty for all but per-head layers), for
  // the KV cache.   [n_layers]
  std::vector<std::vector<int32_t>> FullHeads() const;
  // One line per layer: "layer  3  window 64 + 4 sinks  rope 10000".
  std::string Describe() const;
};

// "0,2" (sep ',') or "0+2" (sep '+', the spec's own spelling) of KV heads.
std::string JoinHeads(const std::vector<int32_t>& heads, char sep);

// The syntax of a spec, before a model gives it layers. Exposed for tests.
struct PlanSpec {
  enum class Preset { kModel, kFull, kSwa, kHybrid, kRouted, kLinear };
  struct LayerOverride {
    LayerKind kind = LayerKind::kFull;
    int32_t window = 0;               // kWindow, kRouted, kPerHead: 0 = the plan's window (kLinear: none)
    std::vector<int32_t> full_heads;  // kPerHead
  };
  Preset preset = Preset::kModel;
  int32_t window = 0;  // swa:W, routed:W or window:W; 0 = not given
  int32_t sinks = 0;
  int32_t hybrid_window_layers = 0;
  int32_t hybrid_full_layers = 0;
  std::map<int32_t, LayerOverride> overrides;
  bool nope_full = false;
  bool nope_window = false;
  double rope_base_full = 0;    // 0 = the model's
  double rope_base_window = 0;  // 0 = the model's
  enum class RopeScalingScope { kAll, kFullOnly, kNone };
  RopeScalingScope rope_scaling = RopeScalingScope::kAll;
  PositionMode position_mode = PositionMode::kAbsolute;
  std::string heads_file;  // heads:FILE.json; empty = none
  enum class WindowShape { kSliding, kChunked, kStaggered };
  WindowShape window_shape = WindowShape::kSliding;
};

// The offset of the blocks of the `index`-th layer with a window (0-based,
// in layer order) under `staggered`: index mod 4 quarters of the window.
int32_t StaggeredOffset(int32_t index, int32_t window);

// Throws std::invalid_argument naming the offending word: unknown words, a
// window of 0, sinks without any window, a preset given twice, malformed
// numbers.
PlanSpec ParsePlanSpec(const std::string& spec);

// What the model itself says.
struct ModelAttentionDefaults {
  int32_t n_layers = 0;
  RopeSettings rope;
  // Per layer, when layers differ (Gemma 3: base 10000 on local layers, the
  // config's rope_theta and scaling on global ones); empty = `rope` on all.
  std::vector<RopeSettings> layer_ropes;  // [n_layers] or empty
  std::vector<Span> spans;                // [n_layers] from the config (full when empty)
  // The model's own sliding window, for hybrid presets and layerN:swa
  // without a W; 0: it has none, and such a plan must give window:W.
  int32_t default_window = 0;
  int32_t n_kv_heads = 0;      // for per-head layers; 0 = not known (no range check)
  int32_t linear_phi_dim = 0;  // P of linear layers' feature maps; 0 = not known
};

// Resolves `spec` for a model. Throws std::invalid_argument for layer
// indices out of range, KV heads out of range, sinks on a plan without
// window layers, and a heads file that cannot be read or does not fit the
// model.
AttentionPlan ResolvePlan(const std::string& spec, const ModelAttentionDefaults& model);

}  // namespace swan
