// The training loop: data -> forward -> backward -> AdamW, with a progress
// line, the run log, held-out evaluation, checkpoints and export.
//
// A run directory RUN holds:
//   checkpoint.bin        the last checkpoint (atomic; see train/checkpoint.h)
//   train_log.csv/.json   one row per logged step; loss.svg, the curve
//   model/                the Hugging Face directory written at the end
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "train/layers.h"
#include "train/optimizer.h"
#include "train/routed.h"

namespace swan {

struct TrainOptions {
  std::string run_dir;
  // Data (token files from `swan tokenize --out`), or a recall task whose
  // sequences are made on the fly (recall.json of `swan train recall`).
  std::string recall_task;
  std::string train_data;
  std::string val_data;        // "" = none
  std::string synthetic_data;  // "" = none
  double synthetic_rate = 0.0;
  // Model: from scratch with a preset shape, or from a Hugging Face directory.
  std::string preset = "small";
  std::string architecture = "LlamaForCausalLM";  // from scratch: the family (model/decoder_spec.h)
  // From scratch: these replace the preset's value when > 0.
  struct ShapeOverrides {
    int32_t layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
    int64_t hidden = 0, intermediate = 0;
  } shape_overrides;
  std::string init_from;      // HF directory; "" = from scratch
  int32_t grow_layers = 0;    // > 0: init_from's model grown to this many layers (train/grow.h)
  std::string attn = "full";  // attention plan spec (model/plan.h); "model" = the --init model's
  RouterRegularizer router;   // routed layers' regularizer (train/routed.h)
  // LoLCATs' attention transfer (TrainModel::set_attention_transfer): the
  // linear layers' feature maps learn to reproduce softmax attention, every
  // other weight frozen; the loss is that distance.
  bool attention_transfer = false;
  int32_t feature_dim = 0;     // linear layers' Hedgehog F; 0 = the --init model's, or head_dim / 2
  double rope_base = 10000.0;  // from scratch only
  std::string tokenizer;       // tokenizer.json (or its directory) copied into the export
  // Batches: each step is accum micro-batches of `batch` sequences of `context` tokens.
  int64_t context = 256;
  // A context curriculum: {until_step, context} pairs, increasing; steps
  // before until_step train at that context (at most `context`, which the
  // steps after the last pair and every evaluation use). Empty: none.
  std::vector<std::pair<int64_t, int64_t>> context_schedule;
  int64_t batch = 4;
  int64_t accum = 1;
  int64_t steps = 1000;
  ScheduleOptions schedule;
  // Routers' peak learning rate, on the schedule's warmup + cosine shape
  // (router lr at a step = schedule lr * router_lr / schedule.lr); < 0 =
  // schedule.lr. Like lr, not in the resume fingerprint: a resume may
  // change either (e.g. lower both after a divergence).
  double router_lr = -1;
  AdamWOptions adamw;
  // The linear layers' products; bf16 rounds their inputs, so unlike lr it
  // is in the resume fingerprint (a resume with the other choice would not
  // reproduce the run).
  MatmulPrecision matmul = MatmulPrecision::kF32;
  uint64_t seed = 1234;
  // Bookkeeping.
  int64_t eval_every = 100;  // 0 = never
  int64_t eval_sequences = 8;
  // Held-out data with labels (tokenizer/token_labels.h): recall accuracy
  // by key->query distance in these bins (edges; empty: DefaultRecallBins),
  // logged to RUN/recall_log.csv and RUN/recall.svg; `recall_chance` (the
  // accuracy of a guess, 0 = unknown) is drawn beside them.
  std::vector<int64_t> eval_bins;
  double recall_chance = 0;
  int64_t checkpoint_every = 100;  // 0 = only at the end and on SIGINT
  int64_t log_every = 1;
  double time_limit_s = 0;  // stop (checkpoint + export) after this long; 0 = none
  bool resume = false;
  bool quiet = false;  // no progress line
  // Testing: raise SIGKILL in this process after this step's update (0 = never).
  int64_t debug_kill_after_step = 0;
};

struct TrainResult {
  int64_t steps_done = 0;
  int64_t empty_steps = 0;  // steps without a weighted token (no update)
  double last_loss = 0;
  double last_val_loss = -1;
  bool interrupted = false;  // stopped by SIGINT or the time limit
  double tokens_per_s = 0;
  double gemm_gflops = 0;            // rate of the matrix products during the run
  double gemm_share = 0;             // fraction of the run's time spent in them
  double convert_share = 0;          // ... and in rounding their inputs to bf16 (--matmul bf16)
  double attention_share = 0;        // ... and in attention (forward and backward)
  std::vector<double> last_recall;   // [bins] accuracy at the last evaluation (-1: no items); empty
                                     // without labelled held-out data
  std::vector<int64_t> recall_bins;  // the bins' edges
  // Routed plans only (else -1 / empty):
  double last_router_loss = -1;                 // regularizer per counted token of the last step
  double last_full_ratio = -1;                  // fraction of (token, routed layer) pairs on full attention
  std::vector<double> val_full_ratio_by_layer;  // [L] at the last evaluation
  std::string export_dir;
};

// Runs training. Throws std::runtime_error on bad inputs, and on a NaN or
// Inf loss (naming the step and the layer; the last good checkpoint is kept).
TrainResult Train(const TrainOptions& options);

// Set by the SIGINT handler that `swan train` installs: the loop writes a
// checkpoint and stops at the end of the current step.
std::atomic<bool>& StopRequested();

}  // namespace swan
