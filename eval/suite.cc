#include "eval/suite.h"

#include <algorithm>

#include "eval/score.h"

namespace swan {

std::vector<TaskItem> MakeSuiteItems(const TaskContext& context, const SuiteOptions& options) {
  std::vector<TaskItem> items;
  uint64_t seed = options.seed * 1000003u;
  for (TaskKind kind : options.retrieval) {
    const int64_t min_length = MinRetrievalLength(context, kind);
    int64_t made = 0;
    for (int64_t length : options.lengths) {
      if (length < min_length) continue;
      for (double depth : options.depths)
        for (int32_t s = 0; s < options.samples; ++s) {
          if (options.limit > 0 && made >= options.limit) continue;
          items.push_back(MakeRetrievalItem(context, kind, length, depth, ++seed));
          ++made;
        }
    }
  }
  int64_t made = 0;
  const int64_t min_distance = options.distances.empty() ? 0 : MinRecallDistance(context);
  for (int64_t distance : options.distances)
    for (int32_t s = 0; s < options.samples; ++s) {
      if ((options.limit > 0 && made >= options.limit) || distance < min_distance) continue;
      TaskItem item = MakeRecallItem(context, distance, options.recall_queries, ++seed);
      if (options.max_length > 0 && int64_t(item.tokens.size()) > options.max_length) continue;
      items.push_back(std::move(item));
      ++made;
    }
  return items;
}

std::vector<AnswerRecord> ScoreSuite(const LanguageModel& model, const AttentionPlan& plan,
                                     const std::vector<TaskItem>& items, const KvCacheOptions& kv,
                                     const std::function<void(size_t, size_t)>& progress) {
  std::vector<AnswerRecord> records;
  for (size_t i = 0; i < items.size(); ++i) {
    const TaskItem& item = items[i];
    const std::vector<AnswerScore> scores = ScoreItem(model, plan, item, kv);
    for (size_t a = 0; a < scores.size(); ++a) {
      AnswerRecord r;
      r.kind = item.kind;
      r.length = item.prompt_length;
      r.depth = item.depth;
      r.requested_distance = item.requested_distance;
      r.distance = item.answers[a].distance;
      r.correct = scores[a].correct;
      r.nll = scores[a].nll;
      r.tokens = scores[a].tokens;
      records.push_back(r);
    }
    if (progress) progress(i + 1, items.size());
  }
  return records;
}

}  // namespace swan
