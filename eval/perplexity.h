// Perplexity of a model over a long token sequence, with the loss broken
// down by position inside the evaluation window.
//
// Method (what `swan perplexity --help` states): the text's tokens are cut
// into consecutive, non-overlapping windows of `context` positions, each run
// from an empty KV cache. With a BOS token, every window is BOS followed by
// the next context - 1 text tokens, and every text token is scored once.
// Without one, a window is the last token of the previous window followed by
// the next context - 1 tokens (the first text token is never scored). A
// token predicted at window position p (1 .. context - 1) counts in the
// position bucket of p, so the buckets show how the loss depends on how much
// context the model had; under a window plan the loss past the window shows
// what the window loses.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "model/model.h"

namespace swan {

struct PerplexityProgress {
  int64_t windows_done = 0, windows_total = 0;
  int64_t tokens_scored = 0;
  double nll_sum = 0;  // nats over tokens_scored
  double seconds = 0;
};

struct PerplexityOptions {
  int32_t context = 0;       // positions per window; 0 = the model's max_position_embeddings
  int32_t bucket_width = 0;  // positions per bucket; 0 = context / 16 (at least 1)
  int32_t bos_id = -1;       // >= 0: every window starts with this token
  int64_t max_windows = 0;   // 0 = all windows
  KvCacheOptions kv;         // kv.max_chunk is the prefill chunk
  // Called after every window.
  std::function<void(const PerplexityProgress&)> progress;
};

struct PositionBucket {
  int32_t begin = 0, end = 0;  // window positions [begin, end)
  double nll_sum = 0;          // nats
  int64_t count = 0;
  double MeanNll() const { return count ? nll_sum / double(count) : 0.0; }
  double Perplexity() const;
};

struct PerplexityResult {
  int32_t context = 0;
  int64_t windows = 0;
  int64_t tokens_scored = 0;
  int64_t text_begin = 0, text_end = 0;  // the scored text tokens are [text_begin, text_end)
  double nll_sum = 0;                    // nats over every scored token
  std::vector<double> nll_by_pos;        // [context] nats summed at each window position
  std::vector<int64_t> count_by_pos;     // [context] tokens scored at each position
  std::vector<PositionBucket> buckets;
  double seconds = 0;

  double MeanNll() const { return tokens_scored ? nll_sum / double(tokens_scored) : 0.0; }
  double Perplexity() const;
  // Mean loss of the tokens predicted at positions [begin, end) (nats).
  double MeanNllBetween(int32_t begin, int32_t end) const;
};

// A window of the method above: text tokens [begin, end) fed after `lead`
// (BOS, the previous window's last token, or nothing for the first window
// without BOS); tokens from `first_scored` on are scored.
struct TextWindow {
  int64_t begin = 0, end = 0;
  int64_t first_scored = 0;
  int32_t lead = -1;  // token before text[begin]; -1 = none
};
std::vector<TextWindow> SplitIntoWindows(std::span<const int32_t> text, int32_t context, int32_t bos_id);

// -log softmax(logits)[target] in double precision. logits: [vocab]
double TokenNll(const float* logits, int64_t vocab, int32_t target);

// Scores `text` (token ids, no special tokens added) under `plan`.
// Throws std::invalid_argument when the text has no token to score or the
// context is below 2.
PerplexityResult EvaluatePerplexity(const LanguageModel& model, const AttentionPlan& plan,
                                    std::span<const int32_t> text, const PerplexityOptions& options);

}  // namespace swan
