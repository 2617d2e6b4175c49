#include "eval/recall_suite.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "train/accuracy_chart.h"
#include "util/threads.h"

namespace swan {
namespace {

std::string RecallJsonPath(const std::string& dir) { return (std::filesystem::path(dir) / "recall.json").string(); }

// Logits for every position of `tokens` (the last one's included) under
// `plan`, in chunks of kv.max_chunk, and each routed layer's route of every
// token.   tokens [n] -> logits [n, vocab]; routes [n_layers][n or 0]
std::vector<float> AllLogits(const LanguageModel& model, const AttentionPlan& plan, const std::vector<int32_t>& tokens,
                             const KvCacheOptions& kv, std::vector<std::vector<uint8_t>>* routes) {
  const int64_t n = int64_t(tokens.size()), vocab = model.config().vocab_size;
  std::vector<float> logits(static_cast<size_t>(n * vocab));  // [n, vocab]
  std::vector<int32_t> pos(static_cast<size_t>(n));           // [n]
  for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = int32_t(i);
  auto session = model.NewSession(plan, kv);
  routes->assign(plan.layers.size(), {});
  session->routing.record.assign(plan.layers.size(), nullptr);
  for (size_t l = 0; l < plan.layers.size(); ++l)
    if (plan.layers[l].kind == LayerKind::kRouted) session->routing.record[l] = &(*routes)[l];
  const int64_t chunk = std::max<int64_t>(1, kv.max_chunk);
  for (int64_t c0 = 0; c0 < n; c0 += chunk) {
    const int64_t len = std::min(chunk, n - c0);
    ThreadsForNextStep();  // the cores other programs leave idle
    model.Forward(&logits[size_t(c0 * vocab)], Batch{&tokens[size_t(c0)], &pos[size_t(c0)], len, true}, *session);
  }
  return logits;
}

// Scores one sequence: inputs tokens[0, T), targets tokens[1, T]; with
// `result`, also the answers' NLL and the keys the queries visited.
void Score(const LanguageModel& model, const AttentionPlan& plan, const RecallSequence& s, const KvCacheOptions& kv,
           RecallTally* tally, RecallPlanResult* result = nullptr) {
  const int64_t T = int64_t(s.tokens.size()) - 1, vocab = model.config().vocab_size;
  const std::vector<int32_t> inputs(s.tokens.begin(), s.tokens.end() - 1);
  const std::vector<int32_t> targets(s.tokens.begin() + 1, s.tokens.end());
  const std::vector<uint16_t> distances(s.distance.begin() + 1, s.distance.end());
  std::vector<std::vector<uint8_t>> routes;  // [n_layers][T or 0]
  const std::vector<float> logits = AllLogits(model, plan, inputs, kv, &routes);
  tally->Add(logits.data(), targets.data(), distances.data(), 1, T, vocab);
  if (!result) return;
  result->work.AddSequence(plan, T, routes);
  for (int64_t i = 0; i < T; ++i) {
    if (distances[size_t(i)] == 0) continue;
    const float* row = &logits[size_t(i * vocab)];  // [vocab]
    const float top = *std::max_element(row, row + vocab);
    double sum = 0;
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(double(row[v]) - top);
    result->answer_nll += std::log(sum) + top - double(row[targets[size_t(i)]]);
    ++result->answer_tokens;
  }
}

std::string Percent(int64_t correct, int64_t items) {
  if (items == 0) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f%% (%lld)", 100.0 * double(correct) / double(items), (long long)items);
  return buf;
}

}  // namespace

bool HasRecallTask(const std::string& model_dir) { return std::filesystem::exists(RecallJsonPath(model_dir)); }

RecallOptions LoadRecallTask(const std::string& model_dir) {
  if (!HasRecallTask(model_dir)) throw std::runtime_error(model_dir + " holds no recall.json (not a recall model)");
  return RecallTaskFromJson(ReadRecallJson(RecallJsonPath(model_dir)));
}

double RecallGuessChance(const RecallOptions& t) {
  if (t.task == RecallTask::kCopy) return 1.0 / (t.keys + t.values);
  return std::pow(1.0 / t.values, t.task == RecallTask::kNeedle ? t.needle_tokens : 1);
}

double RecallPickChance(const RecallOptions& t) {
  return t.task == RecallTask::kMqar ? 1.0 / std::min(t.pairs, t.values) : RecallGuessChance(t);
}

double RecallPlanResult::AnswerPerplexity() const {
  return answer_tokens ? std::exp(answer_nll / double(answer_tokens)) : 0.0;
}

RecallPlanResult ScoreRecallSuite(const LanguageModel& model, const AttentionPlan& plan, const std::string& spec,
                                  const RecallSuiteOptions& options, const KvCacheOptions& kv) {
  const auto start = std::chrono::steady_clock::now();
  RecallPlanResult r;
  r.spec = spec;
  r.bins = RecallTally(!options.edges.empty() ? options.edges : DefaultRecallBins(plan, options.task.context));
  RecallOptions task = options.task;
  task.seed = options.seed;
  for (int64_t i = 0; i < options.sequences; ++i)
    Score(model, plan, MakeRecallSequence(task, uint64_t(i)), kv, &r.bins, &r);
  if (task.task == RecallTask::kNeedle) {
    std::vector<int64_t> lengths = options.lengths;
    if (lengths.empty())
      for (int64_t k = 1; k <= 4; ++k) lengths.push_back(task.context * k / 4);
    const int64_t per_cell = std::max<int64_t>(2, options.sequences / 8);
    for (int64_t length : lengths)
      for (double depth : options.depths) {
        RecallOptions cell = task;
        cell.context = int32_t(length);
        // The needle at `depth` of the sequence: 0 right after the prefix,
        // 1 just before the question.
        const int32_t min_d = cell.needle_tokens + 1;
        const int32_t max_d = cell.context - cell.needle_tokens - kRecallPrefix;
        if (max_d < min_d) continue;
        const int32_t d = int32_t(std::lround(max_d - depth * double(max_d - min_d)));
        cell.bins = {{d, d + 1, 1.0}};
        RecallTally tally({1, int64_t(length) + 1});
        for (int64_t i = 0; i < per_cell; ++i)
          Score(model, plan, MakeRecallSequence(cell, uint64_t(1000000 + i)), kv, &tally);
        r.grid.push_back({length, depth, tally.items(0), tally.correct(0)});
      }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::string RecallSuiteTable(const std::vector<RecallPlanResult>& results, const RecallSuiteOptions& options) {
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  auto add = [&](const std::string& metric, const std::function<std::string(const RecallPlanResult&)>& cell) {
    std::vector<std::string> cells;
    for (const RecallPlanResult& r : results) cells.push_back(cell(r));
    rows.push_back({metric, cells});
  };
  // Plans may have different default bins: a row per distinct bin.
  std::vector<std::pair<int64_t, int64_t>> bins;
  for (const RecallPlanResult& r : results)
    for (size_t b = 0; b < r.bins.bins(); ++b) {
      const std::pair<int64_t, int64_t> bin{r.bins.edges()[b], r.bins.edges()[b + 1]};
      if (std::find(bins.begin(), bins.end(), bin) == bins.end()) bins.push_back(bin);
    }
  std::sort(bins.begin(), bins.end());
  for (const auto& [lo, hi] : bins)
    add("recall, distance [" + std::to_string(lo) + "," + std::to_string(hi) + ")",
        [&, lo = lo, hi = hi](const RecallPlanResult& r) {
          for (size_t b = 0; b < r.bins.bins(); ++b)
            if (r.bins.edges()[b] == lo && r.bins.edges()[b + 1] == hi)
              return Percent(r.bins.correct(b), r.bins.items(b));
          return std::string("");
        });
  const std::vector<NeedleCell> no_grid;
  const std::vector<NeedleCell>& grid = results.empty() ? no_grid : results[0].grid;
  for (size_t index = 0; index < grid.size(); ++index) {
    char name[64];
    std::snprintf(name, sizeof name, "needle, length %lld, depth %.0f%%", (long long)grid[index].length,
                  100 * grid[index].depth);
    add(name, [index](const RecallPlanResult& r) {
      return index < r.grid.size() ? Percent(r.grid[index].correct, r.grid[index].items) : std::string("-");
    });
  }
  auto number = [](const char* format, double value) {
    char buf[48];
    std::snprintf(buf, sizeof buf, format, value);
    return std::string(buf);
  };
  add("answer perplexity", [&](const RecallPlanResult& r) { return number("%.3f", r.AnswerPerplexity()); });
  add("keys visited per query", [&](const RecallPlanResult& r) { return number("%.1f", r.work.KeysPerQuery()); });
  const bool any_routed =
      std::any_of(results.begin(), results.end(), [](const RecallPlanResult& r) { return r.work.routed_pairs > 0; });
  if (any_routed)
    add("full share of routed pairs", [&](const RecallPlanResult& r) {
      return r.work.routed_pairs ? number("%.1f%%", 100 * r.work.RoutedFullRatio()) : std::string("-");
    });
  const std::string at = " @ " + std::to_string(options.task.context);
  const bool measured = !results.empty() && results[0].kv_bytes > 0;
  if (measured) {
    add("KV MiB" + at, [&](const RecallPlanResult& r) { return number("%.3f", r.kv_bytes / (1 << 20)); });
    // The median of the timed runs, ± their spread.
    add("prefill tok/s" + at, [&](const RecallPlanResult& r) {
      return number("%.0f", r.prefill_tokens_per_s) + number(" ±%.0f%%", 100 * r.prefill_spread);
    });
    add("decode tok/s" + at, [&](const RecallPlanResult& r) {
      return number("%.0f", r.decode_tokens_per_s) + number(" ±%.0f%%", 100 * r.decode_spread);
    });
  }
  add("seconds", [](const RecallPlanResult& r) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", r.seconds);
    return std::string(buf);
  });
  size_t first = 6;
  for (const auto& row : rows) first = std::max(first, row.first.size());
  std::vector<size_t> width;
  for (const RecallPlanResult& r : results) width.push_back(std::max<size_t>(12, r.spec.size()));
  for (const auto& row : rows)
    for (size_t c = 0; c < row.second.size(); ++c) width[c] = std::max(width[c], row.second[c].size());
  std::ostringstream out;
  auto line = [&](const std::string& head, const std::vector<std::string>& cells) {
    out << head << std::string(first - head.size(), ' ');
    for (size_t c = 0; c < cells.size(); ++c) out << "  " << std::string(width[c] - cells[c].size(), ' ') << cells[c];
    out << "\n";
  };
  std::vector<std::string> specs;
  for (const RecallPlanResult& r : results) specs.push_back(r.spec);
  line("plan", specs);
  out << std::string(first, '-');
  for (size_t w : width) out << "  " << std::string(w, '-');
  out << "\n";
  for (const auto& row : rows) line(row.first, row.second);
  char chance[160];
  std::snprintf(
      chance, sizeof chance, "chance: %.2f%% guessing among %d values; %.2f%% picking one of the sequence's %s\n",
      100 * RecallGuessChance(options.task), options.task.values, 100 * RecallPickChance(options.task),
      options.task.task == RecallTask::kMqar ? (std::to_string(options.task.pairs) + " values").c_str() : "needles");
  out << chance;
  return out.str();
}

nlohmann::json RecallSuiteJson(const std::vector<RecallPlanResult>& results, const RecallSuiteOptions& options) {
  nlohmann::json j;
  j["task"] = RecallTaskName(options.task.task);
  j["context"] = options.task.context;
  j["sequences"] = options.sequences;
  j["seed"] = options.seed;
  j["chance_guess"] = RecallGuessChance(options.task);
  j["chance_pick"] = RecallPickChance(options.task);
  j["plans"] = nlohmann::json::array();
  for (const RecallPlanResult& r : results) {
    nlohmann::json p;
    p["plan"] = r.spec;
    p["seconds"] = r.seconds;
    p["answer_perplexity"] = r.AnswerPerplexity();
    p["answer_tokens"] = r.answer_tokens;
    p["keys_per_query"] = r.work.KeysPerQuery();
    if (r.work.routed_pairs) p["routed_full_ratio"] = r.work.RoutedFullRatio();
    if (r.kv_bytes > 0) {
      p["kv_bytes"] = r.kv_bytes;
      p["prefill_tokens_per_s"] = r.prefill_tokens_per_s;
      p["decode_tokens_per_s"] = r.decode_tokens_per_s;
      p["prefill_spread"] = r.prefill_spread;
      p["decode_spread"] = r.decode_spread;
    }
    p["bins"] = nlohmann::json::array();
    for (size_t b = 0; b < r.bins.bins(); ++b)
      p["bins"].push_back(
          {{"lo", r.bins.edges()[b]},
           {"hi", r.bins.edges()[b + 1]},
           {"items", r.bins.items(b)},
           {"correct", r.bins.correct(b)},
           {"accuracy", r.bins.items(b) ? nlohmann::json(r.bins.Accuracy(b)) : nlohmann::json(nullptr)}});
    for (const NeedleCell& c : r.grid)
      p["needle_grid"].push_back(
          {{"length", c.length}, {"depth", c.depth}, {"items", c.items}, {"correct", c.correct}});
    j["plans"].push_back(p);
  }
  return j;
}

std::string RecallSuiteSvg(const std::vector<RecallPlanResult>& results, const RecallSuiteOptions& options) {
  AccuracyChart chart;
  chart.title = "recall accuracy by key-query distance";
  chart.x_label = "distance (tokens, log scale)";
  chart.x_max = double(options.task.context + 1);
  chart.log_x = true;  // bins lie wide apart
  chart.chances = {RecallPickChance(options.task), RecallGuessChance(options.task)};
  std::vector<AccuracySeries> series;
  for (const RecallPlanResult& r : results) {
    AccuracySeries line{r.spec, {}};
    for (size_t b = 0; b < r.bins.bins(); ++b)
      if (r.bins.items(b) > 0)  // at the bin's geometric middle
        line.points.push_back(
            {std::sqrt(double(r.bins.edges()[b]) * double(r.bins.edges()[b + 1])), r.bins.Accuracy(b)});
    series.push_back(line);
  }
  return AccuracyChartSvg(chart, series);
}

}  // namespace swan
