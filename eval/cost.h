// What a plan costs on this machine: prefill and decode speed at several
// depths, and the KV cache it holds there.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "model/model.h"

namespace swan {

struct CostOptions {
  std::vector<int64_t> depths;    // prompt lengths to prefill
  int32_t decode_tokens = 16;     // tokens decoded one by one after each prefill
  int32_t repeats = 3;            // timed runs after an untimed warm-up; the median is reported
  uint64_t seed = 1;              // of the random prompt tokens
  KvCacheOptions kv;              // kv.max_chunk is the prefill chunk
};

struct CostPoint {
  int64_t depth = 0;
  double prefill_tokens_per_s = 0;
  double decode_tokens_per_s = 0;  // decoding right after `depth` tokens
  double prefill_spread = 0, decode_spread = 0;  // (max - min) / median of the runs
  double kv_bytes = 0;             // cache bytes after the prefill and the decode
};

// The median of `runs` and their spread (max - min) / median; {0, 0} for none.
std::pair<double, double> MedianAndSpread(std::vector<double> runs);

// Times the model under `plan` on random tokens (timing does not depend on
// the text).
std::vector<CostPoint> MeasureCost(const LanguageModel& model, const AttentionPlan& plan, const CostOptions& options);

}  // namespace swan
