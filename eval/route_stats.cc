#include "eval/route_stats.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "eval/perplexity.h"
#include "model/sampler.h"
#include "util/threads.h"

namespace swan {
namespace {

// The plan's routed layers; throws when there are none.
std::vector<int32_t> RoutedLayers(const AttentionPlan& plan) {
  std::vector<int32_t> layers;
  for (size_t i = 0; i < plan.layers.size(); ++i)
    if (plan.layers[i].kind == LayerKind::kRouted) layers.push_back(int32_t(i));
  if (layers.empty())
    throw std::invalid_argument("attention plan '" + plan.spec +
                                "' routes no layer: nothing to record (use routed:W, or a model trained with it)");
  return layers;
}

// A session that appends routed layer layers[k]'s routes to gates[k].
std::unique_ptr<Session> RecordingSession(const LanguageModel& model, const AttentionPlan& plan,
                                          const RouteRunOptions& run, const std::vector<int32_t>& layers,
                                          std::vector<std::vector<uint8_t>>& gates) {
  auto session = model.NewSession(plan, run.kv);
  session->routing.forced_full_ratio = run.forced_full_ratio;
  session->routing.seed = run.seed;
  session->routing.record.assign(plan.layers.size(), nullptr);
  gates.resize(layers.size());
  for (size_t k = 0; k < layers.size(); ++k) session->routing.record[size_t(layers[k])] = &gates[k];
  return session;
}

std::string Percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", 100.0 * ratio);
  return buf;
}

std::string WindowName(const Span& s) {
  return std::to_string(s.window) + (s.sinks ? "+" + std::to_string(s.sinks) + "s" : "");
}

nlohmann::json CountJson(const RouteCount& c) {
  return {{"tokens", c.tokens}, {"full", c.full}, {"full_ratio", c.Ratio()}};
}

std::string GateString(const std::vector<uint8_t>& gates) {
  std::string s(gates.size(), '0');
  for (size_t i = 0; i < gates.size(); ++i)
    if (gates[i]) s[i] = '1';
  return s;
}

}  // namespace

RouteCount TextRouteStats::Layer(size_t routed) const {
  RouteCount c;
  for (uint8_t g : gates[routed]) c.Add(g != 0);
  return c;
}

RouteCount TextRouteStats::Overall() const {
  RouteCount c;
  for (size_t k = 0; k < gates.size(); ++k) {
    const RouteCount l = Layer(k);
    c.tokens += l.tokens;
    c.full += l.full;
  }
  return c;
}

std::vector<double> TextRouteStats::PerToken() const {
  std::vector<double> ratio(static_cast<size_t>(tokens()), 0.0);  // [tokens]
  for (const auto& layer : gates)
    for (size_t t = 0; t < layer.size(); ++t) ratio[t] += layer[t];
  for (double& r : ratio) r /= double(gates.size());
  return ratio;
}

TextRouteStats CollectTextRoutes(const LanguageModel& model, const AttentionPlan& plan, std::span<const int32_t> text,
                                 const TextRouteOptions& options) {
  TextRouteStats s;
  s.layers = RoutedLayers(plan);
  for (int32_t l : s.layers) s.spans.push_back(plan.layers[size_t(l)].span);
  s.context = options.context > 0 ? options.context : int32_t(model.config().max_position_embeddings);
  std::vector<TextWindow> windows = SplitIntoWindows(text, s.context, options.bos_id);
  if (windows.empty()) throw std::invalid_argument("route-stats: the text has no tokens");
  if (options.max_windows > 0 && int64_t(windows.size()) > options.max_windows)
    windows.resize(size_t(options.max_windows));
  const int64_t vocab = model.config().vocab_size;
  for (int32_t id : text)
    if (id < 0 || id >= vocab)
      throw std::invalid_argument("route-stats: token " + std::to_string(id) + " is outside the vocabulary");
  s.gates.resize(s.layers.size());
  std::vector<float> logits(static_cast<size_t>(vocab));  // [1, vocab]: only the routes matter
  for (const TextWindow& win : windows) {
    std::vector<int32_t> tokens;  // [n] the window's input
    if (win.lead >= 0) tokens.push_back(win.lead);
    tokens.insert(tokens.end(), text.begin() + win.begin, text.begin() + win.end);
    const int64_t n = int64_t(tokens.size());
    std::vector<int32_t> pos(static_cast<size_t>(n));  // [n]
    for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = int32_t(i);
    s.window_starts.push_back(s.tokens());
    auto session = RecordingSession(model, plan, options.run, s.layers, s.gates);
    ThreadsForNextStep();  // the cores other programs leave idle
    model.Forward(logits.data(), Batch{tokens.data(), pos.data(), n, /*all_logits=*/false}, *session);
    s.windows += 1;
    if (options.run.progress) options.run.progress(s.windows, int64_t(windows.size()));
  }
  return s;
}

PasskeyRouteStats CollectPasskeyRoutes(const LanguageModel& model, const AttentionPlan& plan,
                                       const TaskContext& context, const PasskeyRouteOptions& options) {
  PasskeyRouteStats s;
  const std::vector<int32_t> layers = RoutedLayers(plan);
  const int64_t min_length = MinRetrievalLength(context, TaskKind::kPasskey);
  if (options.length < min_length)
    throw std::invalid_argument("route-stats: a passkey item needs at least " + std::to_string(min_length) +
                                " tokens, not " + std::to_string(options.length));
  s.length = options.length;
  Span smallest;  // the routed window branch with the fewest keys
  for (int32_t l : layers) {
    PasskeyLayerRoutes r;
    r.layer = l;
    r.span = plan.layers[size_t(l)].span;
    if (smallest.window == 0 || r.span.window < smallest.window) smallest = r.span;
    s.layers.push_back(r);
  }
  s.smallest_window = smallest.window;

  std::vector<TaskItem> items;
  uint64_t seed = options.seed * 7919u;
  for (double depth : options.depths)
    for (int32_t k = 0; k < options.samples; ++k)
      if (options.limit <= 0 || int64_t(items.size()) < options.limit)
        items.push_back(MakeRetrievalItem(context, TaskKind::kPasskey, options.length, depth, ++seed));

  const int64_t vocab = model.config().vocab_size;
  const int64_t chunk = std::max<int32_t>(1, options.run.kv.max_chunk);
  std::vector<float> logits(static_cast<size_t>(chunk * vocab));  // [chunk, vocab]
  bool have_example = false;
  for (const TaskItem& item : items) {
    // Fed: every token but the last answer digit, which predicts nothing asked.
    const int64_t n = int64_t(item.tokens.size()) - 1;
    std::vector<int32_t> pos(static_cast<size_t>(n));  // [n]
    for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = int32_t(i);
    // The answer each fed token predicts a digit of, or -1.
    std::vector<int32_t> answer_of(static_cast<size_t>(n), -1);  // [n]
    for (size_t a = 0; a < item.answers.size(); ++a)
      for (int64_t p = item.answers[a].begin; p < item.answers[a].end; ++p) answer_of[size_t(p - 1)] = int32_t(a);
    std::vector<uint8_t> correct(item.answers.size(), 1);  // [answers]
    std::vector<std::vector<uint8_t>> gates;               // [routed][n]
    auto session = RecordingSession(model, plan, options.run, layers, gates);
    for (int64_t c0 = 0; c0 < n; c0 += chunk) {
      const int64_t len = std::min(chunk, n - c0);
      ThreadsForNextStep();  // the cores other programs leave idle
      model.Forward(logits.data(), Batch{&item.tokens[size_t(c0)], &pos[size_t(c0)], len, true}, *session);
      for (int64_t i = 0; i < len; ++i) {
        const int64_t t = c0 + i;
        if (answer_of[size_t(t)] >= 0 && Argmax(&logits[size_t(i * vocab)], vocab) != item.tokens[size_t(t + 1)])
          correct[size_t(answer_of[size_t(t)])] = 0;
      }
    }
    for (size_t k = 0; k < layers.size(); ++k) {
      PasskeyLayerRoutes& r = s.layers[k];
      for (int64_t t = 0; t < n; ++t) {
        const bool full = gates[k][size_t(t)] != 0;
        const int32_t a = answer_of[size_t(t)];
        if (a < 0)
          r.haystack.Add(full);
        else if (Sees(r.span, t, item.answers[size_t(a)].needle))
          r.inside.Add(full);
        else
          r.outside.Add(full);
      }
    }
    bool all_outside = !item.answers.empty();
    for (size_t a = 0; a < item.answers.size(); ++a) {
      const Answer& ans = item.answers[a];
      const bool inside = Sees(smallest, ans.begin - 1, ans.needle);
      (inside ? s.answers_inside : s.answers_outside) += 1;
      (inside ? s.correct_inside : s.correct_outside) += correct[a];
      for (const PasskeyLayerRoutes& r : s.layers) all_outside &= !Sees(r.span, ans.begin - 1, ans.needle);
    }
    if (s.items == 0 || (all_outside && !have_example)) {
      have_example = all_outside;
      s.example_gates = gates;
      s.example_key = item.answers.empty() ? 0 : item.answers[0].needle;
      s.example_question = item.answers.empty() ? 0 : item.answers[0].begin - 1;
    }
    s.items += 1;
    if (options.run.progress) options.run.progress(s.items, int64_t(items.size()));
  }
  return s;
}

std::string TextRouteTable(const TextRouteStats& s) {
  std::string out;
  char line[160];
  std::snprintf(line, sizeof(line), "%5s  %-16s %10s %10s %8s\n", "layer", "window branch", "tokens", "full", "full %");
  out += line;
  for (size_t k = 0; k < s.layers.size(); ++k) {
    const RouteCount c = s.Layer(k);
    std::snprintf(line, sizeof(line), "%5d  %-16s %10lld %10lld %8s\n", s.layers[k], s.spans[k].ToString().c_str(),
                  (long long)c.tokens, (long long)c.full, Percent(c.Ratio()).c_str());
    out += line;
  }
  const RouteCount all = s.Overall();
  std::snprintf(line, sizeof(line), "%5s  %-16s %10lld %10lld %8s\n", "all", "", (long long)all.tokens,
                (long long)all.full, Percent(all.Ratio()).c_str());
  out += line;
  return out;
}

std::string PasskeyRouteTable(const PasskeyRouteStats& s) {
  std::string out;
  char line[200];
  std::snprintf(line, sizeof(line), "%5s  %-8s %16s %24s %24s\n", "layer", "window", "haystack full %",
                "answer, key inside W", "answer, key outside W");
  out += line;
  auto cell = [](const RouteCount& c) {
    return c.tokens ? Percent(c.Ratio()) + " of " + std::to_string(c.tokens) : std::string("-");
  };
  RouteCount hay, in, out_count;
  for (const PasskeyLayerRoutes& r : s.layers) {
    std::snprintf(line, sizeof(line), "%5d  %-8s %16s %24s %24s\n", r.layer, WindowName(r.span).c_str(),
                  cell(r.haystack).c_str(), cell(r.inside).c_str(), cell(r.outside).c_str());
    out += line;
    hay.tokens += r.haystack.tokens, hay.full += r.haystack.full;
    in.tokens += r.inside.tokens, in.full += r.inside.full;
    out_count.tokens += r.outside.tokens, out_count.full += r.outside.full;
  }
  std::snprintf(line, sizeof(line), "%5s  %-8s %16s %24s %24s\n", "all", "", cell(hay).c_str(), cell(in).c_str(),
                cell(out_count).c_str());
  out += line;
  return out;
}

nlohmann::json TextRouteJson(const TextRouteStats& s) {
  nlohmann::json j;
  j["context"] = s.context;
  j["windows"] = s.windows;
  j["tokens"] = s.tokens();
  const RouteCount all = s.Overall();
  j["overall"] = CountJson(all);
  j["layers"] = nlohmann::json::array();
  for (size_t k = 0; k < s.layers.size(); ++k) {
    nlohmann::json l = CountJson(s.Layer(k));
    l["layer"] = s.layers[k];
    l["window"] = s.spans[k].window;
    l["sinks"] = s.spans[k].sinks;
    l["routes"] = GateString(s.gates[k]);  // one character per token, '1' = full
    j["layers"].push_back(l);
  }
  j["window_starts"] = s.window_starts;
  j["token_full_ratio"] = s.PerToken();
  return j;
}

nlohmann::json PasskeyRouteJson(const PasskeyRouteStats& s) {
  nlohmann::json j;
  j["items"] = s.items;
  j["length"] = s.length;
  j["smallest_window"] = s.smallest_window;
  RouteCount hay, in, out;
  j["layers"] = nlohmann::json::array();
  for (const PasskeyLayerRoutes& r : s.layers) {
    j["layers"].push_back({{"layer", r.layer},
                           {"window", r.span.window},
                           {"sinks", r.span.sinks},
                           {"haystack", CountJson(r.haystack)},
                           {"answer_key_inside_window", CountJson(r.inside)},
                           {"answer_key_outside_window", CountJson(r.outside)}});
    hay.tokens += r.haystack.tokens, hay.full += r.haystack.full;
    in.tokens += r.inside.tokens, in.full += r.inside.full;
    out.tokens += r.outside.tokens, out.full += r.outside.full;
  }
  j["overall"] = {{"haystack", CountJson(hay)},
                  {"answer_key_inside_window", CountJson(in)},
                  {"answer_key_outside_window", CountJson(out)}};
  j["accuracy"] = {{"key_inside_window", {{"answers", s.answers_inside}, {"correct", s.correct_inside}}},
                   {"key_outside_window", {{"answers", s.answers_outside}, {"correct", s.correct_outside}}}};
  return j;
}

}  // namespace swan
