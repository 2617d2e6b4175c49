// Scoring a task item by teacher forcing: one forward pass over the prompt
// and its expected answers (eval/tasks.h).
#pragma once

#include <cstdint>
#include <vector>

#include "eval/tasks.h"
#include "model/model.h"

namespace swan {

struct AnswerScore {
  bool correct = false;  // every answer token was the top choice (greedy would say it)
  double nll = 0;        // nats summed over the answer tokens
  int64_t tokens = 0;
  std::vector<int32_t> predicted;  // the greedy choice at each of its tokens
  std::vector<double> token_nll;   // each token's nats
};

// An item scoring each of `positions` (each predicted from the tokens
// before it; empty: every position after the first), as `swan score` and
// the Python module's model.score take them. Throws std::invalid_argument
// for fewer than 2 tokens or a position outside 1 .. n-1.
TaskItem ItemScoringPositions(std::vector<int32_t> tokens, const std::vector<int64_t>& positions);

// One score per item.answers, in order. kv.max_chunk is the prefill chunk.
std::vector<AnswerScore> ScoreItem(const LanguageModel& model, const AttentionPlan& plan, const TaskItem& item,
                                   const KvCacheOptions& kv);

}  // namespace swan
