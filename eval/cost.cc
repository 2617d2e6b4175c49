#include "eval/cost.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>
#include <tuple>

#include "ops/linear.h"
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

std::vector<CostPoint> MeasureCost(const LanguageModel& model, const AttentionPlan& plan, const CostOptions& o) {
  const int64_t vocab = model.config().vocab_size, prompt = o.prompt_tokens;
  if (prompt < 0 || o.decode_tokens < 0) throw std::invalid_argument("cost: negative prompt or decode tokens");
  std::mt19937_64 rng(o.seed);
  std::vector<float> logits(static_cast<size_t>(vocab));  // [1, vocab] of the last token
  // Runs n random tokens at positions start.. (logits of the last only).
  auto run = [&](Session& session, int64_t start, int64_t n) {
    std::vector<int32_t> tokens(static_cast<size_t>(n)), pos(static_cast<size_t>(n));  // [n]
    for (int64_t i = 0; i < n; ++i) {
      tokens[size_t(i)] = int32_t(rng() % uint64_t(vocab));
      pos[size_t(i)] = int32_t(start + i);
    }
    ThreadsForNextStep();  // the cores other programs leave idle
    model.Forward(logits.data(), Batch{tokens.data(), pos.data(), n, false}, session);
  };
  std::vector<CostPoint> points;
  for (int64_t depth : o.depths) {
    if (depth < 0) throw std::invalid_argument("cost: depths must be >= 0");
    if (o.decode_after_prompt && depth + prompt == 0)
      throw std::invalid_argument("cost: nothing to decode after at depth 0 without a prompt");
    KvCacheOptions kv = o.kv;
    kv.max_context = std::max<int64_t>(kv.max_context, depth + prompt + o.decode_tokens + 1);
    CostPoint point;
    point.depth = depth;
    point.prompt = prompt;
    point.decode_start = o.decode_after_prompt ? depth + prompt : depth;
    std::vector<std::vector<uint8_t>> routes(plan.layers.size());  // [n_layers] the timed decodes' routes
    TakeLinearStats();
    for (int32_t r = -1; r < std::max(1, o.repeats); ++r) {  // r = -1: the warm-up
      // A session with `depth` tokens in its cache.
      auto at_depth = [&] {
        std::unique_ptr<Session> session = model.NewSession(plan, kv);
        session->routing.forced_full_ratio = o.forced_full_ratio;
        session->routing.seed = o.seed;
        if (o.random_fill)
          model.FillCacheRandom(*session, depth, std::max<int64_t>(kv.max_chunk, 1));
        else if (depth > 0)
          run(*session, 0, depth);
        return session;
      };
      std::unique_ptr<Session> session = at_depth();
      if (prompt > 0) {
        EnableLinearStats(r >= 0);
        const auto t0 = std::chrono::steady_clock::now();
        run(*session, depth, prompt);
        if (r >= 0) point.prefill_runs.push_back(double(prompt) / std::max(SecondsSince(t0), 1e-9));
        EnableLinearStats(false);
      }
      point.kv_bytes = double(model.CacheBytes(*session));
      if (!o.decode_after_prompt && prompt > 0) session = at_depth();
      if (r >= 0)
        for (auto& l : routes) session->routing.record.push_back(&l);
      double decode_seconds = 0;
      for (int32_t i = 0; i < o.decode_tokens; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        run(*session, point.decode_start + i, 1);
        decode_seconds += SecondsSince(t0);
        if (o.between_tokens) o.between_tokens();
      }
      if (r >= 0 && o.decode_tokens > 0)
        point.decode_runs.push_back(double(o.decode_tokens) / std::max(decode_seconds, 1e-9));
      if (o.read_bandwidth && o.decode_tokens > 0) point.decode_read_bandwidth.push_back(o.read_bandwidth());
      session->routing.record.clear();
      point.kv_bytes = std::max(point.kv_bytes, double(model.CacheBytes(*session)));
    }
    const LinearStats ls = TakeLinearStats();
    point.linear_seconds = ls.seconds;
    point.linear_flops = ls.flops;
    point.linear_bf16_flops = ls.bf16_flops;
    std::tie(point.prefill_tokens_per_s, point.prefill_spread) = MedianAndSpread(point.prefill_runs);
    std::tie(point.decode_tokens_per_s, point.decode_spread) = MedianAndSpread(point.decode_runs);
    point.full_ratio.assign(plan.layers.size(), 0.0);
    int64_t routed_pairs = 0, full_pairs = 0;
    for (size_t l = 0; l < routes.size(); ++l) {
      int64_t full = 0;
      for (uint8_t g : routes[l]) full += g;
      if (!routes[l].empty()) point.full_ratio[l] = double(full) / double(routes[l].size());
      routed_pairs += int64_t(routes[l].size());
      full_pairs += full;
    }
    if (routed_pairs > 0) point.routed_full_ratio = double(full_pairs) / double(routed_pairs);
    points.push_back(point);
  }
  return points;
}

}  // namespace swan
