// Routing statistics of Switch Attention on recall tasks in token ids
// (train/recall_data.h): per routed layer, the share of tokens sent to full
// attention by what the token is: a query whose answer's key lies beyond
// the layer's window (far), one inside it (near), the key and value tokens
// of the pairs (and needles), the answers, and the filler.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "eval/route_stats.h"
#include "train/recall_data.h"

namespace swan {

enum class RecallTokenClass { kFarQuery, kNearQuery, kKey, kValue, kAnswer, kFiller };
inline constexpr size_t kRecallTokenClasses = 6;
const char* RecallTokenClassName(RecallTokenClass c);

// What token t of `s` is, for a layer whose window branch is `span`: a
// query is the position that predicts an answer (the answer's previous
// token); it is far when the key it needs is outside the span.
RecallTokenClass ClassifyRecallToken(const RecallOptions& task, const RecallSequence& s, int64_t t, const Span& span);

struct RecallLayerRoutes {
  int32_t layer = 0;
  Span span;
  std::array<RouteCount, kRecallTokenClasses> by_class;
};

struct RecallRouteStats {
  int64_t sequences = 0;
  std::vector<RecallLayerRoutes> layers;  // [routed]
};

// Runs `sequences` held-out sequences of `task` (seed `seed`) and tallies
// each routed layer's routes by token class. Throws std::invalid_argument
// when the plan routes no layer.
RecallRouteStats CollectRecallRoutes(const LanguageModel& model, const AttentionPlan& plan, const RecallOptions& task,
                                     int64_t sequences, uint64_t seed, const RouteRunOptions& run);

std::string RecallRouteTable(const RecallRouteStats& stats);
nlohmann::json RecallRouteJson(const RecallRouteStats& stats);

}  // namespace swan
