#include "eval/cost.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>
#include <tuple>

#include "model/sampler.h"
#include "util/threads.h"

namespace swan {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::pair<double, double> MedianAndSpread(std::vector<double> runs) {
  if (runs.empty()) return {0, 0};
  std::sort(runs.begin(), runs.end());
  const size_t n = runs.size();
  const double median = n % 2 ? runs[n / 2] : 0.5 * (runs[n / 2 - 1] + runs[n / 2]);
  return {median, median > 0 ? (runs.back() - runs.front()) / median : 0};
}

std::vector<CostPoint> MeasureCost(const LanguageModel& model, const AttentionPlan& plan, const CostOptions& options) {
  const int64_t vocab = model.config().vocab_size;
  std::vector<CostPoint> points;
  for (int64_t depth : options.depths) {
    if (depth < 1) throw std::invalid_argument("cost: depths must be positive");
    std::mt19937_64 rng(options.seed);
    std::vector<int32_t> tokens(static_cast<size_t>(depth));  // [depth] random ids
    for (int32_t& t : tokens) t = int32_t(rng() % uint64_t(vocab));
    std::vector<int32_t> pos(static_cast<size_t>(depth));  // [depth]
    for (int64_t i = 0; i < depth; ++i) pos[size_t(i)] = int32_t(i);
    std::vector<float> logits(static_cast<size_t>(vocab));  // [vocab] of the last token
    CostPoint point;
    point.depth = depth;
    std::vector<double> prefill, decode;  // [repeats] tokens/s of each timed run
    for (int32_t r = -1; r < std::max(1, options.repeats); ++r) {  // r = -1: the warm-up
      auto session = model.NewSession(plan, options.kv);
      ThreadsForNextStep();  // the cores other programs leave idle
      auto t0 = std::chrono::steady_clock::now();
      model.Forward(logits.data(), Batch{tokens.data(), pos.data(), depth, false}, *session);
      const double prefill_s = SecondsSince(t0);
      t0 = std::chrono::steady_clock::now();
      for (int32_t i = 0; i < options.decode_tokens; ++i) {
        const int32_t next = Argmax(logits.data(), vocab);
        const int32_t p = int32_t(depth + i);
        ThreadsForNextStep();  // the cores other programs leave idle
        model.Forward(logits.data(), Batch{&next, &p, 1, false}, *session);
      }
      const double decode_s = SecondsSince(t0);
      point.kv_bytes = double(session->cache.Bytes());
      if (r < 0) continue;
      prefill.push_back(double(depth) / std::max(prefill_s, 1e-9));
      decode.push_back(double(options.decode_tokens) / std::max(decode_s, 1e-9));
    }
    std::tie(point.prefill_tokens_per_s, point.prefill_spread) = MedianAndSpread(prefill);
    std::tie(point.decode_tokens_per_s, point.decode_spread) = MedianAndSpread(decode);
    points.push_back(point);
  }
  return points;
}

}  // namespace swan
