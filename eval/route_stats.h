// Routing statistics of Switch Attention (`swan route-stats`): which tokens
// each routed layer sends to full attention (docs/design.md §4), over a text, or
// over passkey items where the answer needs a key that lies inside or
// outside the window; as a table, JSON and an SVG heatmap (layers × tokens).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "eval/tasks.h"
#include "model/model.h"

namespace swan {

// How the model runs while its routes are recorded.
struct RouteRunOptions {
  KvCacheOptions kv;              // kv.max_chunk is the prefill chunk
  double forced_full_ratio = -1;  // RouteOptions: >= 0 replaces the routers by a seeded draw
  uint64_t seed = 1;              // of the forced draw
  std::function<void(int64_t done, int64_t total)> progress;  // after each window or item
};

// Tokens counted and how many of them went to full attention.
struct RouteCount {
  int64_t tokens = 0, full = 0;
  double Ratio() const { return tokens ? double(full) / double(tokens) : 0.0; }
  void Add(bool is_full) {
    tokens += 1;
    full += is_full;
  }
};

// --- A text ----------------------------------------------------------------

struct TextRouteOptions {
  int32_t context = 0;      // positions per window; 0 = max_position_embeddings
  int32_t bos_id = -1;      // >= 0: every window starts with this token
  int64_t max_windows = 0;  // 0 = all
  RouteRunOptions run;
};

struct TextRouteStats {
  int32_t context = 0;
  int64_t windows = 0;
  std::vector<int32_t> layers;  // [routed] the plan's routed layers, in order
  std::vector<Span> spans;      // [routed] their window branches
  // Each routed layer's route of every token fed (BOS included), the
  // windows one after the other: 1 = full attention.
  std::vector<std::vector<uint8_t>> gates;  // [routed][tokens]
  std::vector<int64_t> window_starts;       // [windows] index in gates of each window's first token

  int64_t tokens() const { return gates.empty() ? 0 : int64_t(gates[0].size()); }
  RouteCount Layer(size_t routed) const;  // one routed layer over every token
  RouteCount Overall() const;             // every token-layer pair of the routed layers
  std::vector<double> PerToken() const;   // [tokens] share of routed layers that chose full
};

// Runs `text` (token ids, no special tokens) in consecutive windows like
// `swan perplexity` (eval/perplexity.h, SplitIntoWindows), each from an
// empty cache, recording every routed layer's routes. Throws
// std::invalid_argument when the plan routes no layer or the text is empty.
TextRouteStats CollectTextRoutes(const LanguageModel& model, const AttentionPlan& plan, std::span<const int32_t> text,
                                 const TextRouteOptions& options);

// --- Passkey items -----------------------------------------------------------

struct PasskeyRouteOptions {
  int64_t length = 0;                                    // prompt tokens of every item
  std::vector<double> depths = {0, 0.25, 0.5, 0.75, 1};  // where the key goes, 0..1
  int32_t samples = 2;                                   // items per depth
  uint64_t seed = 1;                                     // of the items
  int64_t limit = 0;                                     // > 0: at most this many items
  RouteRunOptions run;
};

// The answer tokens of an item are the positions whose next token is part
// of the answer: the end of the question and the answer's digits but the
// last. Their information is the key; it lies outside a layer's window when
// the window branch cannot see the key's first digit (attention/span.h).
struct PasskeyLayerRoutes {
  int32_t layer = 0;
  Span span;            // the window branch
  RouteCount haystack;  // every other token of the items
  RouteCount inside;    // answer tokens whose key is inside this layer's window
  RouteCount outside;   // answer tokens whose key is outside it
};

struct PasskeyRouteStats {
  int64_t items = 0, length = 0;
  std::vector<PasskeyLayerRoutes> layers;  // [routed]
  // Answers (exact match, teacher forced), split by whether the key is
  // inside the smallest window of the routed layers.
  int64_t answers_inside = 0, correct_inside = 0;
  int64_t answers_outside = 0, correct_outside = 0;
  int32_t smallest_window = 0;
  // The first item whose key is outside every routed layer's window (else
  // the first item), for the heatmap.
  std::vector<std::vector<uint8_t>> example_gates;  // [routed][tokens fed]
  int64_t example_key = 0;                          // position of the key's first digit
  int64_t example_question = 0;                     // first answer token: the end of the question
};

// Makes the passkey items (eval/tasks.h, depths × samples) and runs each
// with its answer, recording routes and whether the answer is the model's
// top choice. Throws std::invalid_argument when the plan routes no layer or
// the length cannot hold a passkey item.
PasskeyRouteStats CollectPasskeyRoutes(const LanguageModel& model, const AttentionPlan& plan,
                                       const TaskContext& context, const PasskeyRouteOptions& options);

// --- Output --------------------------------------------------------------------

std::string TextRouteTable(const TextRouteStats& stats);
std::string PasskeyRouteTable(const PasskeyRouteStats& stats);
// Per-layer and per-token full ratios, and each layer's gates as a string
// of '0' and '1'.
nlohmann::json TextRouteJson(const TextRouteStats& stats);
nlohmann::json PasskeyRouteJson(const PasskeyRouteStats& stats);

// A heatmap of routes: one row per layer, one column per bin of
// consecutive tokens, colored by the share of the bin's tokens routed to
// full attention.
struct RouteHeatmap {
  std::string title;
  std::string subtitle;
  std::vector<std::string> row_labels;                   // [rows], e.g. "layer 3 (W 64)"
  std::vector<std::vector<uint8_t>> rows;                // [rows][tokens], equal lengths (a copy)
  std::vector<int64_t> boundaries;                       // token indices drawn as thin lines (window starts)
  std::string boundary_note;                             // what the thin lines are, for the legend
  std::vector<std::pair<int64_t, std::string>> markers;  // labeled token indices (the key, the question)
  std::string marker_note;                               // what the markers are, for the legend
  int64_t max_columns = 1000;
};
std::string RouteHeatmapSvg(const RouteHeatmap& heatmap);
// The full ratio of each of min(n, columns) bins of consecutive tokens; bin b
// holds tokens [b n / columns, (b + 1) n / columns).
std::vector<double> BinnedFullRatio(std::span<const uint8_t> gates, int64_t columns);

// The heatmaps of the two modes.
RouteHeatmap TextRouteHeatmap(const TextRouteStats& stats, const std::string& title);
RouteHeatmap PasskeyRouteHeatmap(const PasskeyRouteStats& stats, const std::string& title);

}  // namespace swan
