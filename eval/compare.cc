#include "eval/compare.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <span>
#include <stdexcept>

#include "eval/cost.h"
#include "eval/perplexity.h"
#include "eval/suite.h"

namespace swan {

int32_t SmallestWindow(const AttentionPlan& plan) {
  int32_t w = 0;
  for (const LayerPlan& l : plan.layers)
    if (l.kind == LayerKind::kWindow && l.span.window > 0 && (w == 0 || l.span.window < w)) w = l.span.window;
  return w;
}

void RunComparison(CompareReport& report, const LanguageModel& model, const Tokenizer& tokenizer,
                   const std::vector<AttentionPlan>& plans, const std::vector<std::string>& specs,
                   const std::vector<int32_t>& text, const std::vector<TaskItem>& items, const CompareOptions& o) {
  if (plans.size() != specs.size()) throw std::invalid_argument("RunComparison: a spec for every plan");
  auto log = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  CostOptions cost;
  cost.depths = {0};
  cost.kv = o.kv;
  for (size_t i = 0; i < plans.size(); ++i) {
    PlanReport p;
    p.spec = specs[i];
    p.window = SmallestWindow(plans[i]);
    if (p.window > 0 && (report.window == 0 || p.window < report.window)) report.window = p.window;
    const std::string head =
        "[compare] plan " + std::to_string(i + 1) + "/" + std::to_string(plans.size()) + " " + specs[i] + ": ";
    const auto start = std::chrono::steady_clock::now();
    PerplexityOptions po;
    po.context = o.context;
    po.bos_id = o.bos_id;
    po.kv = o.kv;
    po.bucket_width = std::max(1, std::min(o.context / 32, o.window / 4));
    if (o.quick) po.max_windows = 2;
    po.progress = [&](const PerplexityProgress& pr) {
      log(head + "perplexity window " + std::to_string(pr.windows_done) + "/" + std::to_string(pr.windows_total));
    };
    p.perplexity = EvaluatePerplexity(model, plans[i], text, po);
    const std::span<const int32_t> scored(text.data() + p.perplexity.text_begin,
                                          size_t(p.perplexity.text_end - p.perplexity.text_begin));
    const size_t bytes = tokenizer.DecodeRaw(scored).size();
    p.bits_per_byte = bytes ? p.perplexity.nll_sum / std::log(2.0) / double(bytes) : 0.0;
    p.answers = ScoreSuite(model, plans[i], items, o.kv, [&](size_t done, size_t total) {
      if (done % 8 == 0 || done == total) log(head + "tasks " + std::to_string(done) + "/" + std::to_string(total));
    });
    log(head + "benchmark ...");
    for (const int64_t context : o.cost_contexts) {
      cost.prompt_tokens = context;
      p.cost.push_back(MeasureCost(model, plans[i], cost).front());
    }
    p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report.plans.push_back(std::move(p));
  }
}

}  // namespace swan
