// `swan compare` on models trained on recall tasks in token-id space
// (train/recall_data.h; the model directory keeps the task as recall.json):
// the task the model learned, on held-out sequences from a seed no
// training run used, scored under each plan by key->query distance bin
// (train/recall_eval.h), beside the chance levels: a guess among all
// values, and a pick among the values in the sequence. A needle model also
// gets a grid of sequence length x needle depth.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "eval/attention_work.h"
#include "model/model.h"
#include "train/recall_data.h"
#include "train/recall_eval.h"

namespace swan {

// The task of DIR/recall.json (written by `swan train recall`, copied into
// the exported model); throws std::runtime_error when it has none.
RecallOptions LoadRecallTask(const std::string& model_dir);
bool HasRecallTask(const std::string& model_dir);

struct RecallSuiteOptions {
  RecallOptions task;
  int64_t sequences = 64;                                  // per plan (and per needle-grid cell: sequences / 8, >= 2)
  std::vector<int64_t> edges;                              // distance bins; empty: DefaultRecallBins of each plan
                                                           // (give one set to compare plans side by side)
  std::vector<int64_t> lengths;                            // needle grid: sequence lengths (default T/4 .. T)
  std::vector<double> depths = {0, 0.25, 0.5, 0.75, 1.0};  // needle grid: 0 = at the start
  uint64_t seed = 0x5eed;                                  // the sequences' seed (another than training's)
};

struct NeedleCell {
  int64_t length = 0;
  double depth = 0;
  int64_t items = 0, correct = 0;
};

struct RecallPlanResult {
  std::string spec;
  RecallTally bins{{1, 2}};
  std::vector<NeedleCell> grid;  // needle models only
  double answer_nll = 0;         // summed over the answer tokens of the sequences (nats)
  int64_t answer_tokens = 0;
  AttentionWork work;  // keys visited by the sequences' queries
  double seconds = 0;
  // What the plan costs at the task's context, filled by the caller
  // (eval/cost.h); 0 = not measured.
  double kv_bytes = 0, prefill_tokens_per_s = 0, decode_tokens_per_s = 0;
  double prefill_spread = 0, decode_spread = 0;  // (max - min) / median of the timed runs

  // exp(mean answer NLL): the perplexity of the answers, 1 when all are certain.
  double AnswerPerplexity() const;
};

RecallPlanResult ScoreRecallSuite(const LanguageModel& model, const AttentionPlan& plan, const std::string& spec,
                                  const RecallSuiteOptions& options, const KvCacheOptions& kv);

// Plans as columns: accuracy by distance bin (items in parentheses), the
// chance levels, the needle grid.
std::string RecallSuiteTable(const std::vector<RecallPlanResult>& results, const RecallSuiteOptions& options);
nlohmann::json RecallSuiteJson(const std::vector<RecallPlanResult>& results, const RecallSuiteOptions& options);
// Accuracy by distance bin, one line per plan, with the chance lines.
std::string RecallSuiteSvg(const std::vector<RecallPlanResult>& results, const RecallSuiteOptions& options);

// A guess among the values (1/values; a needle of m tokens: its m-th
// power), and a pick among the pairs of a sequence (MQAR: 1/pairs).
double RecallGuessChance(const RecallOptions& task);
double RecallPickChance(const RecallOptions& task);

}  // namespace swan
