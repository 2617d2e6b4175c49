// The learning curve of recall: accuracy by distance bin at each held-out
// evaluation of a run on labelled data (train/recall_eval.h), written as
// RUN/recall_log.csv, RUN/recall_log.json and RUN/recall.svg (accuracy
// against step, one line per bin, with the chance level when known).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/recall_eval.h"

namespace swan {

struct RecallRow {
  int64_t step = 0;
  int64_t tokens = 0;
  std::vector<int64_t> items, correct;  // [bins]
};

class RecallLog {
 public:
  // Reads RUN/recall_log.csv if present and its bins are `edges`, keeping
  // the rows up to `keep_until_step` (0 = start empty).
  RecallLog(const std::string& run_dir, std::vector<int64_t> edges, int64_t keep_until_step, double chance = 0);

  void Add(int64_t step, int64_t tokens, const RecallTally& tally);
  void Write() const;  // atomically
  const std::vector<RecallRow>& rows() const { return rows_; }
  const std::vector<int64_t>& edges() const { return edges_; }

 private:
  std::string dir_;
  std::vector<int64_t> edges_;
  double chance_;
  std::vector<RecallRow> rows_;
};

// An SVG line chart of recall accuracy by step, one line per bin.
std::string RecallCurveSvg(const std::vector<RecallRow>& rows, const std::vector<int64_t>& edges, double chance,
                           const std::string& title);

}  // namespace swan
