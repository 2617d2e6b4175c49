// The comparison of attention plans behind `swan compare`: every plan run
// over the same text and the same task items, with what it loses
// (perplexity by position, bits per byte, the suite's answers) and what it
// costs (eval/cost.h), into a CompareReport (eval/report.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "eval/report.h"
#include "eval/tasks.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace swan {

struct CompareOptions {
  int32_t context = 0;                 // the perplexity window
  int32_t window = 0;                  // the perplexity buckets' scale: min(context / 32, window / 4) wide
  int32_t bos_id = -1;                 // starts each perplexity window; -1 = none
  bool quick = false;                  // 2 perplexity windows only
  std::vector<int64_t> cost_contexts;  // each measured as a prefill from an empty cache, then decode there
  KvCacheOptions kv;
  std::function<void(const std::string&)> progress;  // a line now and then; may be empty
};

// Appends one PlanReport per plan to report.plans (specs [plans] name
// them) and sets report.window to the smallest window any plan has. The
// tokenizer turns the scored text back into bytes for bits per byte.
//   text: token ids of the perplexity text; items: the task suite's
void RunComparison(CompareReport& report, const LanguageModel& model, const Tokenizer& tokenizer,
                   const std::vector<AttentionPlan>& plans, const std::vector<std::string>& specs,
                   const std::vector<int32_t>& text, const std::vector<TaskItem>& items, const CompareOptions& options);

// The smallest window of a plan's window layers; 0 = none.
int32_t SmallestWindow(const AttentionPlan& plan);

}  // namespace swan
