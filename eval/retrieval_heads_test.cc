#include "eval/retrieval_heads.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <nlohmann/json.hpp>

#include "attention/span.h"
#include "model/plan.h"

namespace swan {
namespace {

// Zero query and key projections: every head attends uniformly.
void PlantUniformAttention(TrainModel& model) {
  for (const ParamTensor& t : model.tensors())
    if (t.name.find("q_proj") != std::string::npos || t.name.find("k_proj") != std::string::npos)
      std::fill(model.params().begin() + t.offset, model.params().begin() + t.offset + t.numel, 0.0f);
}

// Planted attention: with zero query and key projections every head
// attends uniformly to the keys its span shows, so the mass on an answer's
// value position is known exactly: 1 / (keys seen), or 0 when the span
// hides the value.
TEST(RetrievalHeads, UniformAttentionGivesTheExpectedMass) {
  RecallOptions task;
  task.context = 48;
  task.keys = 8;
  task.values = 8;
  task.filler = 8;
  task.pairs = 4;
  task.queries = 4;
  task.bins = ParseDistanceBins("2-43");
  ModelConfig shape = PresetConfig("tiny", RecallVocabSize(task), task.context);
  ModelAttentionDefaults defaults;
  defaults.n_layers = shape.n_layers;
  TrainModel model(shape, ResolvePlan("hybrid:1:1,window:6", defaults));
  model.InitRandom(3);
  PlantUniformAttention(model);
  const int64_t far = 10;
  const RetrievalHeads heads = TraceRetrievalHeads(model, task, 6, 77, far);
  // The same average, by hand.
  std::vector<double> expect(size_t(shape.n_layers), 0.0), expect_far(expect);  // [L]
  int64_t answers = 0, far_answers = 0;
  RecallOptions t = task;
  t.seed = 77;
  for (uint64_t n = 0; n < 6; ++n) {
    const RecallSequence s = MakeRecallSequence(t, n);
    for (int64_t a = 1; a < int64_t(s.tokens.size()); ++a) {
      if (s.distance[size_t(a)] == 0) continue;
      const int64_t query = a - 1, value = query - s.distance[size_t(a)] + 1;
      ++answers;
      const bool is_far = s.distance[size_t(a)] >= far;
      far_answers += is_far;
      for (int32_t l = 0; l < shape.n_layers; ++l) {
        const Span span = model.plan().layers[size_t(l)].span;
        int64_t seen = 0;
        for (int64_t k = 0; k <= query; ++k) seen += Sees(span, query, k);
        const double mass = Sees(span, query, value) ? 1.0 / double(seen) : 0.0;
        expect[size_t(l)] += mass;
        if (is_far) expect_far[size_t(l)] += mass;
      }
    }
  }
  ASSERT_EQ(heads.answers, answers);
  ASSERT_EQ(heads.far_answers, far_answers);
  ASSERT_GT(far_answers, 0);
  bool window_hides_far = false;
  for (int32_t l = 0; l < shape.n_layers; ++l)
    for (int32_t h = 0; h < shape.n_heads; ++h) {
      EXPECT_NEAR(heads.At(l, h).value, expect[size_t(l)] / double(answers), 1e-9) << l << " " << h;
      EXPECT_NEAR(heads.At(l, h, true).value, expect_far[size_t(l)] / double(far_answers), 1e-9);
      window_hides_far = window_hides_far || heads.At(l, h, true).value == 0.0;
    }
  EXPECT_TRUE(window_hides_far) << "the window-6 layer cannot see values 10 or more back";
  EXPECT_NE(RetrievalHeadsTable(heads).find("strongest: layer"), std::string::npos);
  EXPECT_NE(RetrievalHeadsSvg(heads, "t").find("<svg"), std::string::npos);
}

// Needle items of a text model, with planted uniform attention: the mass
// on the needle token an answer token copies is 1 / (keys its query sees).
TEST(RetrievalHeads, NeedleItemsUnderUniformAttention) {
  ModelConfig shape = PresetConfig("tiny", 40, 64);
  ModelAttentionDefaults defaults;
  defaults.n_layers = shape.n_layers;
  TrainModel model(shape, ResolvePlan("full", defaults));
  model.InitRandom(5);
  PlantUniformAttention(model);
  TaskItem item;
  for (int32_t i = 0; i < 40; ++i) item.tokens.push_back((i * 7 + 3) % 40);
  Answer answer;
  answer.needle = 5;  // the needle's value tokens 5, 6, 7 are copied as tokens 36, 37, 38
  answer.begin = 36;
  answer.end = 39;
  item.answers = {answer};
  const RetrievalHeads heads = TraceNeedleHeads(model, {item}, /*far_distance=*/30);
  EXPECT_EQ(heads.answers, 3);
  EXPECT_EQ(heads.far_answers, 3);  // query 35 - needle 5 = 30
  double expect = 0;
  for (int64_t q = 35; q < 38; ++q) expect += 1.0 / double(q + 1);
  for (int32_t l = 0; l < heads.layers; ++l)
    for (int32_t h = 0; h < heads.heads; ++h) {
      EXPECT_NEAR(heads.At(l, h).value, expect / 3, 1e-6);
      EXPECT_NEAR(heads.At(l, h, true).value, expect / 3, 1e-6);
    }
}

TEST(RetrievalHeads, SelectionKeepsTheBestKvHeadsOfTheModel) {
  RetrievalHeads r;
  r.layers = 2;
  r.heads = 4;
  r.kv_heads = 2;  // query heads 0, 1 -> KV head 0; 2, 3 -> KV head 1
  r.far_answers = 5;
  r.all.assign(8, HeadMass{});
  r.far.assign(8, HeadMass{});
  r.far[3].value = 0.9;  // layer 0, KV head 1
  r.far[4].value = 0.5;  // layer 1, KV head 0
  r.far[7].value = 0.2;  // layer 1, KV head 1
  r.all[0].value = 1.0;  // near answers only: not what a window loses
  const HeadSelection quarter = SelectFullHeads(r, 0.25);
  EXPECT_EQ(quarter.full_heads, (std::vector<std::vector<int32_t>>{{1}, {}}));
  EXPECT_EQ(quarter.n_full(), 1);
  EXPECT_DOUBLE_EQ(quarter.scores[1][0], 0.5);
  const HeadSelection half = SelectFullHeads(r, 0.5);
  EXPECT_EQ(half.full_heads, (std::vector<std::vector<int32_t>>{{1}, {0}}));
  EXPECT_EQ(SelectFullHeads(r, 0.6).n_full(), 3);  // ceil(0.6 * 4)
  EXPECT_EQ(HeadSelectionJson(half, "m")["full_heads"], nlohmann::json::parse("[[1], [0]]"));
  EXPECT_THROW(SelectFullHeads(r, 0), std::invalid_argument);
  EXPECT_THROW(SelectFullHeads(r, 1.5), std::invalid_argument);
}

// Trained gates clamp at 1 and tie: the tie break orders them, then the index.
TEST(RetrievalHeads, TopHeadsBreakTiesByTheSecondScore) {
  const std::vector<std::vector<double>> gates = {{1.0, 0.2}, {1.0, 1.0}};  // [layers][kv_heads]
  const std::vector<std::vector<double>> pull = {{0.1, 9.0}, {0.3, 0.2}};
  EXPECT_EQ(SelectTopHeads(gates, 0.25, "gate").full_heads, (std::vector<std::vector<int32_t>>{{0}, {}}));
  const HeadSelection one = SelectTopHeads(gates, 0.25, "gate", pull);
  EXPECT_EQ(one.full_heads, (std::vector<std::vector<int32_t>>{{}, {0}}));
  EXPECT_EQ(one.score, "gate");
  EXPECT_EQ(SelectTopHeads(gates, 0.5, "gate", pull).full_heads, (std::vector<std::vector<int32_t>>{{}, {0, 1}}));
  EXPECT_EQ(SelectTopHeads(gates, 0.75, "gate", pull).full_heads, (std::vector<std::vector<int32_t>>{{0}, {0, 1}}));
}

}  // namespace
}  // namespace swan
