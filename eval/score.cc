#include "eval/score.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "eval/perplexity.h"
#include "model/sampler.h"
#include "util/threads.h"

namespace swan {

TaskItem ItemScoringPositions(std::vector<int32_t> tokens, const std::vector<int64_t>& positions) {
  const int64_t n = int64_t(tokens.size());
  if (n < 2) throw std::invalid_argument("scoring needs at least 2 token ids");
  TaskItem item;
  item.tokens = std::move(tokens);
  std::vector<int64_t> scored = positions;
  if (scored.empty())
    for (int64_t p = 1; p < n; ++p) scored.push_back(p);
  for (int64_t p : scored) {
    if (p < 1 || p >= n)
      throw std::invalid_argument("score position " + std::to_string(p) + " is not in 1.." + std::to_string(n - 1));
    Answer a;
    a.begin = p;
    a.end = p + 1;
    item.answers.push_back(a);
  }
  return item;
}

std::vector<AnswerScore> ScoreItem(const LanguageModel& model, const AttentionPlan& plan, const TaskItem& item,
                                   const KvCacheOptions& kv) {
  const int64_t n = int64_t(item.tokens.size()), vocab = model.config().vocab_size;
  for (const Answer& a : item.answers)
    if (a.begin < 1 || a.end > n || a.begin >= a.end) throw std::invalid_argument("score: an answer outside the item");
  // Which answer (if any) each position's token belongs to.
  std::vector<int32_t> answer_of(size_t(n), -1);  // [n]
  for (size_t i = 0; i < item.answers.size(); ++i)
    for (int64_t p = item.answers[i].begin; p < item.answers[i].end; ++p) answer_of[size_t(p)] = int32_t(i);
  std::vector<AnswerScore> scores(item.answers.size());
  for (AnswerScore& s : scores) s.correct = true;

  const int64_t last =
      item.answers.empty()
          ? 0
          : std::max_element(item.answers.begin(), item.answers.end(), [](const Answer& a, const Answer& b) {
              return a.end < b.end;
            })->end;
  std::vector<int32_t> pos(static_cast<size_t>(n));  // [n]
  for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = int32_t(i);
  const int64_t chunk = std::max<int32_t>(1, kv.max_chunk);
  std::vector<float> logits(static_cast<size_t>(chunk * vocab));  // [chunk, vocab]
  auto session = model.NewSession(plan, kv);
  for (int64_t c0 = 0; c0 < last - 1; c0 += chunk) {
    const int64_t len = std::min(chunk, last - 1 - c0);
    ThreadsForNextStep();  // the cores other programs leave idle
    model.Forward(logits.data(), Batch{&item.tokens[size_t(c0)], &pos[size_t(c0)], len, true}, *session);
    for (int64_t i = 0; i < len; ++i) {
      const int64_t p = c0 + i + 1;  // the token this row predicts
      const int32_t a = answer_of[size_t(p)];
      if (a < 0) continue;
      const float* row = &logits[size_t(i * vocab)];
      AnswerScore& s = scores[size_t(a)];
      const double nll = TokenNll(row, vocab, item.tokens[size_t(p)]);
      const int32_t greedy = Argmax(row, vocab);
      s.nll += nll;
      s.tokens += 1;
      s.token_nll.push_back(nll);
      s.predicted.push_back(greedy);
      if (greedy != item.tokens[size_t(p)]) s.correct = false;
    }
  }
  return scores;
}

}  // namespace swan
