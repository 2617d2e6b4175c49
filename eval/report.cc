#include "eval/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

namespace swan {
namespace {

bool IsNiah(TaskKind k) { return k != TaskKind::kPasskey && k != TaskKind::kRecall; }

std::string Format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

// "42% (12)": accuracy and how many answers, or "-" when none.
std::string AccuracyCell(const Tally& t) {
  if (t.answers == 0) return "-";
  return Format("%.0f%%", 100.0 * t.Accuracy()) + " (" + std::to_string(t.answers) + ")";
}
std::string LossCell(const Tally& t) { return t.tokens ? Format("%.3f", t.MeanNll()) : "-"; }

std::string MiB(double bytes) { return Format("%.3f", bytes / (1024.0 * 1024.0)); }

struct Row {
  std::string metric;
  std::vector<std::string> cells;  // [plans]
};

// Perplexity of the tokens at window positions [begin, end); "-" if none.
std::string PplBetween(const PlanReport& p, int32_t begin, int32_t end) {
  int64_t count = 0;
  for (int32_t i = std::max(begin, 0); i < std::min<int32_t>(end, int32_t(p.perplexity.count_by_pos.size())); ++i)
    count += p.perplexity.count_by_pos[size_t(i)];
  return count ? Format("%.3f", std::exp(p.perplexity.MeanNllBetween(begin, end))) : "-";
}

std::vector<Row> Rows(const CompareReport& r) {
  std::vector<Row> rows;
  auto add = [&](const std::string& metric, const std::function<std::string(const PlanReport&)>& cell) {
    Row row{metric, {}};
    for (const PlanReport& p : r.plans) row.cells.push_back(cell(p));
    rows.push_back(row);
  };
  const int32_t w = r.window, ctx = r.context;
  const std::string ws = std::to_string(w);
  add("window (smallest)",
      [](const PlanReport& p) { return p.window ? std::to_string(p.window) : std::string("none"); });
  add("perplexity, all positions", [](const PlanReport& p) { return Format("%.3f", p.perplexity.Perplexity()); });
  if (w > 0 && w < ctx) {
    // The token at position p is predicted from keys 0 .. p-1: a window of
    // W keys sees all of them while p <= W.
    add("perplexity, positions 1-" + ws, [&](const PlanReport& p) { return PplBetween(p, 1, w + 1); });
    add("perplexity, positions " + std::to_string(w + 1) + "-" + std::to_string(ctx - 1),
        [&](const PlanReport& p) { return PplBetween(p, w + 1, ctx); });
    add("perplexity, last quarter (" + std::to_string(ctx * 3 / 4) + "+)",
        [&](const PlanReport& p) { return PplBetween(p, ctx * 3 / 4, ctx); });
  }
  add("bits per byte", [](const PlanReport& p) { return Format("%.4f", p.bits_per_byte); });

  auto inside = [w](const AnswerRecord& a) { return w == 0 || a.distance < w; };
  for (const char* group : {"passkey", "NIAH (all)"}) {
    const bool passkey = std::string(group) == "passkey";
    auto of = [passkey](const AnswerRecord& a) { return passkey ? a.kind == TaskKind::kPasskey : IsNiah(a.kind); };
    add(std::string(group) + ", needle < " + ws + " back", [&](const PlanReport& p) {
      return AccuracyCell(Count(p.answers, [&](const AnswerRecord& a) { return of(a) && inside(a); }));
    });
    add(std::string(group) + ", needle >= " + ws + " back", [&](const PlanReport& p) {
      return AccuracyCell(Count(p.answers, [&](const AnswerRecord& a) { return of(a) && !inside(a); }));
    });
    add(std::string(group) + " answer loss, < " + ws, [&](const PlanReport& p) {
      return LossCell(Count(p.answers, [&](const AnswerRecord& a) { return of(a) && inside(a); }));
    });
    add(std::string(group) + " answer loss, >= " + ws, [&](const PlanReport& p) {
      return LossCell(Count(p.answers, [&](const AnswerRecord& a) { return of(a) && !inside(a); }));
    });
  }
  for (TaskKind k : r.suite.retrieval) {
    if (!IsNiah(k)) continue;
    add(std::string(TaskName(k)) + ", all depths", [&](const PlanReport& p) {
      return AccuracyCell(Count(p.answers, [&](const AnswerRecord& a) { return a.kind == k; }));
    });
  }
  for (int64_t d : r.suite.distances) {
    auto at = [d](const AnswerRecord& a) { return a.kind == TaskKind::kRecall && a.requested_distance == d; };
    add("recall @ " + std::to_string(d) + " tokens",
        [&](const PlanReport& p) { return AccuracyCell(Count(p.answers, at)); });
    add("recall loss @ " + std::to_string(d), [&](const PlanReport& p) { return LossCell(Count(p.answers, at)); });
  }
  if (!r.plans.empty())
    for (size_t i = 0; i < r.plans[0].cost.size(); ++i) {
      // The context the decode ran at: the cache's depth and the timed prompt.
      const std::string depth = std::to_string(r.plans[0].cost[i].depth + r.plans[0].cost[i].prompt);
      // The median of the timed runs, ± their spread.
      add("prefill tok/s @ " + depth, [&](const PlanReport& p) {
        return i < p.cost.size()
                   ? Format("%.0f", p.cost[i].prefill_tokens_per_s) + Format(" ±%.0f%%", 100 * p.cost[i].prefill_spread)
                   : "-";
      });
      add("decode tok/s @ " + depth, [&](const PlanReport& p) {
        return i < p.cost.size()
                   ? Format("%.0f", p.cost[i].decode_tokens_per_s) + Format(" ±%.0f%%", 100 * p.cost[i].decode_spread)
                   : "-";
      });
      add("KV MiB @ " + depth, [&](const PlanReport& p) { return i < p.cost.size() ? MiB(p.cost[i].kv_bytes) : "-"; });
    }
  return rows;
}

}  // namespace

Tally Count(const std::vector<AnswerRecord>& answers, const std::function<bool(const AnswerRecord&)>& keep) {
  Tally t;
  for (const AnswerRecord& a : answers) {
    if (!keep(a)) continue;
    t.answers += 1;
    t.correct += a.correct ? 1 : 0;
    t.nll += a.nll;
    t.tokens += a.tokens;
  }
  return t;
}

std::string ReportTable(const CompareReport& r) {
  const std::vector<Row> rows = Rows(r);
  size_t first = 6;
  for (const Row& row : rows) first = std::max(first, row.metric.size());
  std::vector<size_t> width;
  for (const PlanReport& p : r.plans) width.push_back(std::max<size_t>(12, p.spec.size()));
  for (const Row& row : rows)
    for (size_t c = 0; c < row.cells.size(); ++c) width[c] = std::max(width[c], row.cells[c].size());
  std::string out;
  auto line = [&](const std::string& head, const std::vector<std::string>& cells) {
    std::string s = head + std::string(first - head.size(), ' ');
    for (size_t c = 0; c < cells.size(); ++c) s += "  " + std::string(width[c] - cells[c].size(), ' ') + cells[c];
    out += s + "\n";
  };
  std::vector<std::string> specs;
  for (const PlanReport& p : r.plans) specs.push_back(p.spec);
  line("plan", specs);
  out += std::string(first, '-');
  for (size_t w : width) out += "  " + std::string(w, '-');
  out += "\n";
  for (const Row& row : rows) line(row.metric, row.cells);
  return out;
}

nlohmann::json ReportJson(const CompareReport& r) {
  nlohmann::json j;
  j["model"] = r.model;
  j["context"] = r.context;
  j["window"] = r.window;
  j["text"] = r.text_source;
  j["filler"] = r.filler_source;
  j["lengths"] = r.suite.lengths;
  j["depths"] = r.suite.depths;
  j["distances"] = r.suite.distances;
  j["samples"] = r.suite.samples;
  j["seed"] = r.suite.seed;
  j["table"] = nlohmann::json::array();
  for (const Row& row : Rows(r)) j["table"].push_back({{"metric", row.metric}, {"cells", row.cells}});
  for (const PlanReport& p : r.plans) {
    nlohmann::json jp;
    jp["plan"] = p.spec;
    jp["window"] = p.window;
    jp["seconds"] = p.seconds;
    const PerplexityResult& ppl = p.perplexity;
    jp["perplexity"] = {{"all", ppl.Perplexity()},
                        {"mean_nll", ppl.MeanNll()},
                        {"tokens", ppl.tokens_scored},
                        {"bits_per_byte", p.bits_per_byte}};
    if (r.window > 0) {
      jp["perplexity"]["inside_window"] = std::exp(ppl.MeanNllBetween(1, r.window + 1));
      jp["perplexity"]["beyond_window"] = std::exp(ppl.MeanNllBetween(r.window + 1, r.context));
    }
    for (const PositionBucket& b : ppl.buckets)
      jp["perplexity"]["buckets"].push_back(
          {{"begin", b.begin}, {"end", b.end}, {"tokens", b.count}, {"mean_nll", b.MeanNll()}});
    // Retrieval cells by task, length and depth.
    std::map<std::tuple<int, int64_t, double>, Tally> cells;
    std::map<int64_t, Tally> recall;
    for (const AnswerRecord& a : p.answers) {
      Tally& t = a.kind == TaskKind::kRecall ? recall[a.requested_distance] : cells[{int(a.kind), a.length, a.depth}];
      t.answers += 1;
      t.correct += a.correct;
      t.nll += a.nll;
      t.tokens += a.tokens;
    }
    for (const auto& [key, t] : cells)
      jp["retrieval"].push_back({{"task", TaskName(TaskKind(std::get<0>(key)))},
                                 {"length", std::get<1>(key)},
                                 {"depth", std::get<2>(key)},
                                 {"answers", t.answers},
                                 {"accuracy", t.Accuracy()},
                                 {"answer_nll", t.MeanNll()}});
    for (const auto& [d, t] : recall)
      jp["recall"].push_back(
          {{"distance", d}, {"answers", t.answers}, {"accuracy", t.Accuracy()}, {"answer_nll", t.MeanNll()}});
    for (const CostPoint& c : p.cost)
      jp["cost"].push_back({{"depth", c.depth + c.prompt},
                            {"prefill_tokens_per_s", c.prefill_tokens_per_s},
                            {"decode_tokens_per_s", c.decode_tokens_per_s},
                            {"prefill_spread", c.prefill_spread},
                            {"decode_spread", c.decode_spread},
                            {"kv_bytes", c.kv_bytes}});
    j["plans"].push_back(jp);
  }
  return j;
}

}  // namespace swan
