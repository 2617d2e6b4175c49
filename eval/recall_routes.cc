#include "eval/recall_routes.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "attention/span.h"
#include "util/threads.h"

namespace swan {

const char* RecallTokenClassName(RecallTokenClass c) {
  switch (c) {
    case RecallTokenClass::kFarQuery: return "far query";
    case RecallTokenClass::kNearQuery: return "near query";
    case RecallTokenClass::kKey: return "key";
    case RecallTokenClass::kValue: return "value";
    case RecallTokenClass::kAnswer: return "answer";
    case RecallTokenClass::kFiller: return "filler";
  }
  return "?";
}

RecallTokenClass ClassifyRecallToken(const RecallOptions& task, const RecallSequence& s, int64_t t, const Span& span) {
  const size_t i = size_t(t);
  if (i + 1 < s.tokens.size() && s.distance[i + 1] > 0) {
    // The query at t needs the fact distance tokens back: the key at
    // t - distance, whose successor holds the value.
    const int64_t key = t - s.distance[i + 1];
    return Sees(span, t, key + 1) ? RecallTokenClass::kNearQuery : RecallTokenClass::kFarQuery;
  }
  if (s.distance[i] > 0) return RecallTokenClass::kAnswer;
  const int32_t id = s.tokens[i];
  const int32_t first_key = 4, first_value = 4 + task.keys, first_filler = first_value + task.values;
  if ((id >= first_key && id < first_value) || id == kRecallNeedle) return RecallTokenClass::kKey;
  if (id >= first_value && id < first_filler) return RecallTokenClass::kValue;
  return RecallTokenClass::kFiller;
}

RecallRouteStats CollectRecallRoutes(const LanguageModel& model, const AttentionPlan& plan, const RecallOptions& task,
                                     int64_t sequences, uint64_t seed, const RouteRunOptions& run) {
  RecallRouteStats stats;
  for (size_t l = 0; l < plan.layers.size(); ++l)
    if (plan.layers[l].kind == LayerKind::kRouted) stats.layers.push_back({int32_t(l), plan.layers[l].span, {}});
  if (stats.layers.empty()) throw std::invalid_argument("plan '" + plan.spec + "' routes no layer: nothing to record");
  RecallOptions t = task;
  t.seed = seed;
  const int64_t chunk = std::max<int32_t>(1, run.kv.max_chunk), vocab = model.config().vocab_size;
  for (int64_t n = 0; n < sequences; ++n) {
    const RecallSequence s = MakeRecallSequence(t, uint64_t(n));
    const int64_t T = int64_t(s.tokens.size()) - 1;  // inputs: the last token predicts nothing
    auto session = model.NewSession(plan, run.kv);
    session->routing.forced_full_ratio = run.forced_full_ratio;
    session->routing.seed = run.seed;
    std::vector<std::vector<uint8_t>> gates(stats.layers.size());  // [routed][T]
    session->routing.record.assign(plan.layers.size(), nullptr);
    for (size_t k = 0; k < stats.layers.size(); ++k) session->routing.record[size_t(stats.layers[k].layer)] = &gates[k];
    std::vector<int32_t> pos(static_cast<size_t>(T));  // [T]
    for (int64_t i = 0; i < T; ++i) pos[size_t(i)] = int32_t(i);
    std::vector<float> logits(static_cast<size_t>(vocab));  // [1, vocab]
    for (int64_t c0 = 0; c0 < T; c0 += chunk) {
      ThreadsForNextStep();  // the cores other programs leave idle
      model.Forward(logits.data(), Batch{&s.tokens[size_t(c0)], &pos[size_t(c0)], std::min(chunk, T - c0), false},
                    *session);
    }
    for (size_t k = 0; k < stats.layers.size(); ++k)
      for (int64_t i = 0; i < T; ++i)
        stats.layers[k].by_class[size_t(ClassifyRecallToken(t, s, i, stats.layers[k].span))].Add(gates[k][size_t(i)] !=
                                                                                                 0);
    ++stats.sequences;
    if (run.progress) run.progress(n + 1, sequences);
  }
  return stats;
}

std::string RecallRouteTable(const RecallRouteStats& stats) {
  std::ostringstream out;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%-8s %-16s", "layer", "window");
  out << buf;
  for (size_t c = 0; c < kRecallTokenClasses; ++c) {
    std::snprintf(buf, sizeof buf, " %18s", RecallTokenClassName(RecallTokenClass(c)));
    out << buf;
  }
  out << "\n";
  for (const RecallLayerRoutes& l : stats.layers) {
    std::snprintf(buf, sizeof buf, "%-8d %-16s", l.layer, l.span.ToString().c_str());
    out << buf;
    for (const RouteCount& c : l.by_class) {
      if (c.tokens == 0)
        std::snprintf(buf, sizeof buf, " %18s", "-");
      else
        std::snprintf(buf, sizeof buf, " %9.1f%% (%6lld)", 100 * c.Ratio(), (long long)c.tokens);
      out << buf;
    }
    out << "\n";
  }
  out << "share of each class's tokens that the layer's router sends to full attention (tokens in "
         "parentheses); a query is far when its key is outside the layer's window\n";
  return out.str();
}

nlohmann::json RecallRouteJson(const RecallRouteStats& stats) {
  nlohmann::json j;
  j["sequences"] = stats.sequences;
  j["layers"] = nlohmann::json::array();
  for (const RecallLayerRoutes& l : stats.layers) {
    nlohmann::json layer = {{"layer", l.layer}, {"window", l.span.window}, {"sinks", l.span.sinks}};
    for (size_t c = 0; c < kRecallTokenClasses; ++c)
      layer["classes"][RecallTokenClassName(RecallTokenClass(c))] = {
          {"tokens", l.by_class[c].tokens}, {"full", l.by_class[c].full}, {"ratio", l.by_class[c].Ratio()}};
    j["layers"].push_back(layer);
  }
  return j;
}

}  // namespace swan
