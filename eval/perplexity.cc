#include "eval/perplexity.h"
#include "util/threads.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

namespace swan {

double PositionBucket::Perplexity() const { return std::exp(MeanNll()); }

double PerplexityResult::Perplexity() const { return std::exp(MeanNll()); }

double PerplexityResult::MeanNllBetween(int32_t begin, int32_t end) const {
  double sum = 0;
  int64_t count = 0;
  for (int32_t p = std::max(begin, 0); p < std::min<int32_t>(end, int32_t(nll_by_pos.size())); ++p) {
    sum += nll_by_pos[size_t(p)];
    count += count_by_pos[size_t(p)];
  }
  return count ? sum / double(count) : 0.0;
}

std::vector<TextWindow> SplitIntoWindows(std::span<const int32_t> text, int32_t context, int32_t bos_id) {
  if (context < 2) throw std::invalid_argument("perplexity: the context must be at least 2 tokens");
  std::vector<TextWindow> windows;
  const int64_t n = int64_t(text.size());
  const int64_t step = context - 1;
  if (bos_id >= 0) {
    for (int64_t begin = 0; begin < n; begin += step)
      windows.push_back({begin, std::min(n, begin + step), begin, bos_id});
    return windows;
  }
  // Without BOS the first window holds `context` text tokens; each later one
  // starts after the token that ended the previous window.
  if (n < 2) return windows;
  windows.push_back({0, std::min<int64_t>(n, context), 1, -1});
  for (int64_t begin = windows.back().end; begin < n; begin += step)
    windows.push_back({begin, std::min(n, begin + step), begin, text[size_t(begin - 1)]});
  return windows;
}

double TokenNll(const float* logits, int64_t vocab, int32_t target) {
  double max = logits[0];
  for (int64_t v = 1; v < vocab; ++v) max = std::max(max, double(logits[v]));
  double sum = 0;
  for (int64_t v = 0; v < vocab; ++v) sum += std::exp(double(logits[v]) - max);
  return std::log(sum) + max - double(logits[target]);
}

PerplexityResult EvaluatePerplexity(const LanguageModel& model, const AttentionPlan& plan,
                                    std::span<const int32_t> text, const PerplexityOptions& options) {
  const ModelConfig& config = model.config();
  const int32_t context = options.context > 0 ? options.context : int32_t(config.max_position_embeddings);
  std::vector<TextWindow> windows = SplitIntoWindows(text, context, options.bos_id);
  if (windows.empty())
    throw std::invalid_argument("perplexity: the text has no token to score (it needs at least " +
                                std::string(options.bos_id >= 0 ? "1 token" : "2 tokens") + ")");
  if (options.max_windows > 0 && int64_t(windows.size()) > options.max_windows)
    windows.resize(size_t(options.max_windows));
  const int64_t vocab = config.vocab_size;
  for (int32_t id : text)
    if (id < 0 || id >= vocab)
      throw std::invalid_argument("perplexity: token " + std::to_string(id) + " is outside the vocabulary (" +
                                  std::to_string(vocab) + ")");

  PerplexityResult r;
  r.context = context;
  r.text_begin = windows.front().first_scored;
  r.text_end = windows.back().end;
  r.nll_by_pos.assign(size_t(context), 0.0);
  r.count_by_pos.assign(size_t(context), 0);
  const auto start = std::chrono::steady_clock::now();
  const int64_t chunk = std::max<int32_t>(1, options.kv.max_chunk);
  std::vector<float> logits(static_cast<size_t>(chunk * vocab));  // [chunk, vocab]
  for (size_t w = 0; w < windows.size(); ++w) {
    const TextWindow& win = windows[w];
    std::vector<int32_t> tokens;  // [n] the window's input
    if (win.lead >= 0) tokens.push_back(win.lead);
    tokens.insert(tokens.end(), text.begin() + win.begin, text.begin() + win.end);
    const int64_t n = int64_t(tokens.size());
    const int64_t offset = win.begin - (win.lead >= 0 ? 1 : 0);  // text index of tokens[0]
    std::vector<int32_t> pos(static_cast<size_t>(n));            // [n]
    for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = int32_t(i);
    auto session = model.NewSession(plan, options.kv);
    for (int64_t c0 = 0; c0 < n - 1; c0 += chunk) {
      // Logits at positions [c0, c0 + len) predict tokens at c0 + 1 ...
      const int64_t len = std::min(chunk, n - 1 - c0);
      ThreadsForNextStep();  // the cores other programs leave idle
      model.Forward(logits.data(), Batch{&tokens[size_t(c0)], &pos[size_t(c0)], len, true}, *session);
      for (int64_t i = 0; i < len; ++i) {
        const int64_t p = c0 + i + 1;  // position of the predicted token
        if (offset + p < win.first_scored) continue;
        const double nll = TokenNll(&logits[size_t(i * vocab)], vocab, tokens[size_t(p)]);
        r.nll_by_pos[size_t(p)] += nll;
        r.count_by_pos[size_t(p)] += 1;
        r.nll_sum += nll;
        r.tokens_scored += 1;
      }
    }
    r.windows += 1;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.progress) options.progress({r.windows, int64_t(windows.size()), r.tokens_scored, r.nll_sum, r.seconds});
  }
  const int32_t width = options.bucket_width > 0 ? options.bucket_width : std::max(1, context / 16);
  for (int32_t b = 0; b < context; b += width) {
    PositionBucket bucket{b, std::min(context, b + width), 0.0, 0};
    for (int32_t p = bucket.begin; p < bucket.end; ++p) {
      bucket.nll_sum += r.nll_by_pos[size_t(p)];
      bucket.count += r.count_by_pos[size_t(p)];
    }
    r.buckets.push_back(bucket);
  }
  return r;
}

}  // namespace swan
