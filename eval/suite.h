// The task suite of `swan compare`: the items (made once, the same for
// every plan) and their scores under one plan.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "eval/tasks.h"
#include "model/model.h"

namespace swan {

struct SuiteOptions {
  std::vector<TaskKind> retrieval = {TaskKind::kPasskey, TaskKind::kNiahSingle, TaskKind::kNiahMultiKey,
                                     TaskKind::kNiahMultiValue, TaskKind::kNiahMultiQuery};
  std::vector<int64_t> lengths;    // prompt lengths of the retrieval grid
  std::vector<double> depths;      // needle depths of the retrieval grid, 0..1
  std::vector<int64_t> distances;  // recall distances (tokens from pair to query)
  int32_t samples = 3;             // items per grid cell and per distance
  int32_t recall_queries = 4;      // queries per recall item
  uint64_t seed = 1;
  int64_t limit = 0;       // > 0: at most this many items per task (a quick run)
  int64_t max_length = 0;  // > 0: recall items longer than this are left out
};

// Every item of the suite, in a fixed order. Lengths a task cannot fit
// (shorter than its instruction, needles and question), recall distances
// below MinRecallDistance and recall items longer than max_length are left
// out.
std::vector<TaskItem> MakeSuiteItems(const TaskContext& context, const SuiteOptions& options);

// One scored answer with the cell it belongs to.
struct AnswerRecord {
  TaskKind kind = TaskKind::kPasskey;
  int64_t length = 0;  // prompt length
  double depth = 0;
  int64_t requested_distance = 0;  // recall
  int64_t distance = 0;            // how far back the answer's predictor must look
  bool correct = false;
  double nll = 0;  // nats summed over the answer tokens
  int64_t tokens = 0;
};

// Scores every item under `plan`; `progress(done, total)` after each item.
std::vector<AnswerRecord> ScoreSuite(const LanguageModel& model, const AttentionPlan& plan,
                                     const std::vector<TaskItem>& items, const KvCacheOptions& kv,
                                     const std::function<void(size_t, size_t)>& progress = {});

}  // namespace swan
