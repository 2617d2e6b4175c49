#include "eval/retrieval_heads.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "model/config.h"
#include "model/model.h"
#include "train/hf_io.h"

namespace swan {

std::unique_ptr<TrainModel> LoadAnalysisModel(const std::string& dir, const std::string& attn) {
  const ModelConfig config = LoadModelConfig(dir);
  const std::string spec = !attn.empty() && attn != "model" ? attn : config.attention_plan;
  auto model =
      std::make_unique<TrainModel>(config, ResolvePlan(spec.empty() ? "model" : spec, AttentionDefaultsFor(config)));
  LoadHfWeights(*model, dir);
  return model;
}

namespace {

RetrievalHeads EmptyHeads(const TrainModel& model, int64_t far_distance) {
  RetrievalHeads r;
  r.layers = model.config().n_layers;
  r.heads = model.config().n_heads;
  r.kv_heads = model.config().n_kv_heads;
  r.far_distance = far_distance;
  r.all.assign(size_t(r.layers * r.heads), HeadMass{});
  r.far.assign(r.all.size(), HeadMass{});
  return r;
}

// One answer token predicted at `query` from the fact at `key` (its value
// at key + 1), in the model's last Forward: every head's weights on both.
void AddAnswer(RetrievalHeads& r, const TrainModel& model, int64_t query, int64_t key) {
  const bool is_far = query - key >= r.far_distance;
  ++r.answers;
  r.far_answers += is_far;
  for (int32_t l = 0; l < r.layers; ++l)
    for (int32_t h = 0; h < r.heads; ++h) {
      const std::vector<double> w = model.AttentionWeights(l, h, query);
      for (HeadMass* m : {&r.all[size_t(l * r.heads + h)], is_far ? &r.far[size_t(l * r.heads + h)] : nullptr}) {
        if (!m) continue;
        m->value += w[size_t(key + 1)];
        m->key += w[size_t(key)];
      }
    }
}

void Average(RetrievalHeads& r) {
  for (HeadMass& m : r.all) m.value /= std::max<int64_t>(1, r.answers), m.key /= std::max<int64_t>(1, r.answers);
  for (HeadMass& m : r.far)
    m.value /= std::max<int64_t>(1, r.far_answers), m.key /= std::max<int64_t>(1, r.far_answers);
}

// Runs tokens [0, T) of `tokens` (T + 1 of them) through the model.
void ForwardSequence(TrainModel& model, const std::vector<int32_t>& tokens) {
  const int64_t T = int64_t(tokens.size()) - 1;
  const std::vector<int32_t> inputs(tokens.begin(), tokens.end() - 1);   // [T]
  const std::vector<int32_t> targets(tokens.begin() + 1, tokens.end());  // [T]
  model.Forward(inputs.data(), targets.data(), 1, T);
}

}  // namespace

RetrievalHeads TraceRetrievalHeads(TrainModel& model, const RecallOptions& task, int64_t sequences, uint64_t seed,
                                   int64_t far_distance) {
  RetrievalHeads r = EmptyHeads(model, far_distance);
  RecallOptions t = task;
  t.seed = seed;
  for (int64_t n = 0; n < sequences; ++n) {
    const RecallSequence s = MakeRecallSequence(t, uint64_t(n));
    ForwardSequence(model, s.tokens);
    // Every answer token: its query is the token before it, its fact the
    // same offset back (a needle's or a copy's later tokens included).
    for (int64_t a = 1; a < int64_t(s.tokens.size()); ++a)
      if (s.distance[size_t(a)] != 0) AddAnswer(r, model, a - 1, a - 1 - s.distance[size_t(a)]);
  }
  Average(r);
  return r;
}

RetrievalHeads TraceNeedleHeads(TrainModel& model, const std::vector<TaskItem>& items, int64_t far_distance) {
  RetrievalHeads r = EmptyHeads(model, far_distance);
  for (const TaskItem& item : items) {
    ForwardSequence(model, item.tokens);
    // Answer token a copies the needle's token at needle + (a - begin): a
    // retrieval head attends there from the query a - 1 (Wu et al.'s
    // copy-paste retrieval heads).
    for (const Answer& answer : item.answers)
      for (int64_t a = answer.begin; a < answer.end; ++a) {
        const int64_t value = answer.needle + (a - answer.begin);
        if (value >= 1 && value < a - 1) AddAnswer(r, model, a - 1, value - 1);
      }
  }
  Average(r);
  return r;
}

std::string RetrievalHeadsTable(const RetrievalHeads& r) {
  std::ostringstream out;
  char buf[64];
  out << "attention mass on the answer's value position (and on its key), mean over " << r.answers
      << " answers; far: the " << r.far_answers << " answers with key->query distance >= " << r.far_distance << "\n";
  std::snprintf(buf, sizeof buf, "%-6s", "layer");
  out << buf;
  for (int32_t h = 0; h < r.heads; ++h) {
    std::snprintf(buf, sizeof buf, "  %17s", ("head " + std::to_string(h)).c_str());
    out << buf;
  }
  out << "\n";
  for (bool far : {false, true}) {
    if (far && r.far_answers == 0) continue;
    out << (far ? "far answers:\n" : "");
    for (int32_t l = 0; l < r.layers; ++l) {
      std::snprintf(buf, sizeof buf, "%-6d", l);
      out << buf;
      for (int32_t h = 0; h < r.heads; ++h) {
        const HeadMass& m = r.At(l, h, far);
        std::snprintf(buf, sizeof buf, "  %7.3f (%7.3f)", m.value, m.key);
        out << buf;
      }
      out << "\n";
    }
  }
  // The strongest retrieval heads.
  std::vector<std::pair<double, int32_t>> ranked;
  for (int32_t i = 0; i < r.layers * r.heads; ++i) ranked.push_back({r.all[size_t(i)].value, i});
  std::sort(ranked.rbegin(), ranked.rend());
  out << "strongest:";
  for (size_t i = 0; i < std::min<size_t>(4, ranked.size()); ++i) {
    std::snprintf(buf, sizeof buf, " layer %d head %d (%.3f)%s", ranked[i].second / r.heads, ranked[i].second % r.heads,
                  ranked[i].first, i + 1 < std::min<size_t>(4, ranked.size()) ? "," : "");
    out << buf;
  }
  out << "\n";
  return out.str();
}

int64_t HeadSelection::n_full() const {
  int64_t n = 0;
  for (const std::vector<int32_t>& l : full_heads) n += int64_t(l.size());
  return n;
}

HeadSelection SelectTopHeads(std::vector<std::vector<double>> scores, double share, std::string score,
                             const std::vector<std::vector<double>>& tie_break) {
  if (!(share > 0 && share <= 1)) throw std::invalid_argument("the share of full heads must be in (0, 1]");
  HeadSelection s;
  s.share = share;
  s.score = std::move(score);
  s.scores = std::move(scores);
  // (-score, -tie break, layer, kv head): best first
  std::vector<std::tuple<double, double, int32_t, int32_t>> ranked;
  for (size_t l = 0; l < s.scores.size(); ++l)
    for (size_t kv = 0; kv < s.scores[l].size(); ++kv)
      ranked.push_back({-s.scores[l][kv], tie_break.empty() ? 0.0 : -tie_break.at(l).at(kv), int32_t(l), int32_t(kv)});
  std::sort(ranked.begin(), ranked.end());
  const size_t keep = size_t(std::ceil(share * double(ranked.size()) - 1e-9));
  s.full_heads.assign(s.scores.size(), {});
  for (size_t i = 0; i < keep && i < ranked.size(); ++i)
    s.full_heads[size_t(std::get<2>(ranked[i]))].push_back(std::get<3>(ranked[i]));
  for (std::vector<int32_t>& l : s.full_heads) std::sort(l.begin(), l.end());
  return s;
}

HeadSelection SelectFullHeads(const RetrievalHeads& r, double share) {
  if (r.kv_heads <= 0 || r.heads % r.kv_heads != 0)
    throw std::invalid_argument("SelectFullHeads: the heads do not group into KV heads");
  const int32_t group = r.heads / r.kv_heads;
  const bool far = r.far_answers > 0;
  std::vector<std::vector<double>> scores(size_t(r.layers), std::vector<double>(size_t(r.kv_heads), 0.0));
  for (int32_t l = 0; l < r.layers; ++l)
    for (int32_t kv = 0; kv < r.kv_heads; ++kv)
      for (int32_t h = kv * group; h < (kv + 1) * group; ++h)
        scores[size_t(l)][size_t(kv)] = std::max(scores[size_t(l)][size_t(kv)], r.At(l, h, far).value);
  return SelectTopHeads(std::move(scores), share,
                        "largest attention mass on the answer's value among each KV head's query heads");
}

nlohmann::json HeadSelectionJson(const HeadSelection& s, const std::string& model_dir) {
  return {{"full_heads", s.full_heads}, {"share", s.share}, {"full", s.n_full()},
          {"model", model_dir},         {"score", s.score}, {"scores", s.scores}};
}

nlohmann::json RetrievalHeadsJson(const RetrievalHeads& r) {
  nlohmann::json j = {{"layers", r.layers},
                      {"heads", r.heads},
                      {"answers", r.answers},
                      {"far_answers", r.far_answers},
                      {"far_distance", r.far_distance}};
  for (int32_t l = 0; l < r.layers; ++l)
    for (int32_t h = 0; h < r.heads; ++h)
      j["heads_mass"].push_back({{"layer", l},
                                 {"head", h},
                                 {"value", r.At(l, h).value},
                                 {"key", r.At(l, h).key},
                                 {"far_value", r.At(l, h, true).value},
                                 {"far_key", r.At(l, h, true).key}});
  return j;
}

std::string RetrievalHeadsSvg(const RetrievalHeads& r, const std::string& title) {
  const double cell = 36, left = 70, top = 50;
  const double W = left + cell * r.heads + 40, H = top + cell * r.layers + 50;
  std::ostringstream s;
  s.precision(4);
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
    << "' font-family='sans-serif' font-size='11'>\n<rect width='100%' height='100%' "
       "fill='white'/>\n"
    << "<text x='10' y='20' font-size='13'>" << title << "</text>\n";
  double max_mass = 1e-9;
  for (const HeadMass& m : r.all) max_mass = std::max(max_mass, m.value);
  for (int32_t l = 0; l < r.layers; ++l) {
    s << "<text x='10' y='" << top + cell * (l + 0.6) << "'>layer " << l << "</text>\n";
    for (int32_t h = 0; h < r.heads; ++h) {
      const double v = r.At(l, h).value / max_mass;  // white (0) to dark red (the strongest)
      const int g = int(255 * (1 - v));
      s << "<rect x='" << left + cell * h << "' y='" << top + cell * l << "' width='" << cell - 2 << "' height='"
        << cell - 2 << "' fill='rgb(255," << g << "," << g << ")'><title>layer " << l << " head " << h << ": "
        << r.At(l, h).value << "</title></rect>\n"
        << "<text x='" << left + cell * h + 4 << "' y='" << top + cell * l + cell / 2 + 4 << "'>"
        << int(100 * r.At(l, h).value + 0.5) << "</text>\n";
    }
  }
  for (int32_t h = 0; h < r.heads; ++h)
    s << "<text x='" << left + cell * h + 8 << "' y='" << top - 6 << "'>h" << h << "</text>\n";
  s << "<text x='10' y='" << H - 15 << "'>% of a query's attention on its answer's value position</text>\n</svg>\n";
  return s.str();
}

}  // namespace swan
