// What a training run records as it goes: one row per logged step in
// RUN/train_log.csv (and the same rows as RUN/train_log.json), and the
// loss curve as RUN/loss.svg.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace swan {

struct LogRow {
  int64_t step = 0;      // optimizer steps done
  int64_t tokens = 0;    // training tokens seen
  double loss = 0;       // mean training loss of the step
  double val_loss = -1;  // held-out loss, -1 when not evaluated at this step
  double lr = 0;
  double grad_norm = 0;
  double tokens_per_s = 0;
  double elapsed_s = 0;
  // Switch Attention runs only (RunLog's `routed`):
  double router_loss = 0;                       // router regularizer per counted token
  double full_ratio = 0;                        // fraction of (token, routed layer) pairs on full attention
  double val_full_ratio = -1;                   // the same on the held-out sequences; -1 when not evaluated
  std::vector<double> val_full_ratio_by_layer;  // [L] fraction of each layer's held-out
                                                // tokens on full attention; empty when not evaluated
  // Data-parallel runs only (RunLog's `data_parallel`): the step's seconds
  // spent in MPI calls, on the slowest rank, and on each (JSON only).
  double comm_s = 0;
  std::vector<double> comm_s_by_rank;  // [ranks]
};

class RunLog {
 public:
  // Reads RUN/train_log.csv if present, keeping the rows up to `keep_until_step`
  // (a resumed run drops rows written after its checkpoint); 0 = start empty.
  // `routed`: the run has routed layers, so rows carry the router columns;
  // `data_parallel`: it runs on several ranks, so rows end with comm_s.
  RunLog(const std::string& run_dir, int64_t keep_until_step, bool routed = false, bool data_parallel = false);

  void Add(const LogRow& row);
  // Rewrites train_log.csv, train_log.json and loss.svg (atomically).
  void Write() const;
  const std::vector<LogRow>& rows() const { return rows_; }

 private:
  std::string dir_;
  bool routed_ = false, data_parallel_ = false;
  std::vector<LogRow> rows_;
};

// An SVG line chart of training loss (and held-out loss points) by step.
std::string LossCurveSvg(const std::vector<LogRow>& rows, const std::string& title);

}  // namespace swan
