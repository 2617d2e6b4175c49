// What a plan costs on this machine: prefill and decode speed at several
// depths, the KV cache it holds there, and how routed layers routed. The one
// meter behind `swan bench` and `swan compare`.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "kv/kv_cache.h"
#include "model/model.h"

namespace swan {

struct CostOptions {
  std::vector<int64_t> depths;  // tokens in the cache before the timed prompt
  int64_t prompt_tokens = 512;  // timed as prefill at each depth (0: none)
  int32_t decode_tokens = 16;   // timed one by one
  // Where the timed decode starts: after the timed prompt, at depth +
  // prompt (the context a task runs at: swan compare), or at the depth in a
  // cache of its own (llama-bench's tg: swan bench, so that both programs'
  // decode figures come from one depth).
  bool decode_after_prompt = true;
  int32_t repeats = 3;  // timed runs after an untimed warm-up; the median is reported
  // How a depth gets into the cache: random K/V rows (seconds even at 128K;
  // what a step costs does not depend on them), or a real prefill of
  // random tokens. Neither is timed.
  bool random_fill = true;
  double forced_full_ratio = -1;  // >= 0: routed layers draw their routes (RouteOptions)
  uint64_t seed = 1;              // of the random tokens
  KvCacheOptions kv;              // kv.max_chunk is the prefill chunk; max_context is set to fit
  // When set, called after each decode token, the warm-up's included,
  // outside the token's time (a run's time is the sum of its tokens'):
  // swan bench reads the weights there, so that its roofline's bandwidth
  // comes from the seconds of the decode it bounds.
  std::function<void()> between_tokens;
  // When set, called right after each decode run, the warm-up's included,
  // its value kept in CostPoint::decode_read_bandwidth: swan bench's read
  // bandwidth over that run's reads between its tokens.
  std::function<double()> read_bandwidth;
};

struct CostPoint {
  int64_t depth = 0;
  int64_t prompt = 0;                             // the timed prefill's tokens
  int64_t decode_start = 0;                       // the position of the first timed decode token
  std::vector<double> prefill_runs, decode_runs;  // [repeats] tokens/s of each timed run
  double prefill_tokens_per_s = 0;                // medians
  double decode_tokens_per_s = 0;
  double prefill_spread = 0, decode_spread = 0;  // (max - min) / median of the runs
  std::vector<double> decode_read_bandwidth;     // [repeats + 1] read_bandwidth of the warm-up, then of each run
  double kv_bytes = 0;                           // the most cache bytes, after the prompt or the decode
  // Routed layers: the share of the timed decode's tokens each sent to full
  // attention (0 on other layers), and over all routed layers (-1: none).
  std::vector<double> full_ratio;  // [n_layers]
  double routed_full_ratio = -1;
  // The matrix products of the timed prefills (ops/linear.h LinearStats).
  double linear_seconds = 0, linear_flops = 0, linear_bf16_flops = 0;
};

// The median of `runs` and their spread (max - min) / median; {0, 0} for none.
std::pair<double, double> MedianAndSpread(std::vector<double> runs);

// Times the model under `plan` on random tokens (timing does not depend on
// the text). Throws std::invalid_argument for a negative depth or prompt,
// or, decoding after the prompt, no prompt at a depth of 0 (nothing to
// decode after).
std::vector<CostPoint> MeasureCost(const LanguageModel& model, const AttentionPlan& plan, const CostOptions& options);

}  // namespace swan
