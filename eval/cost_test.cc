// The cost meter behind swan bench and swan compare: what it times and
// what it counts, on a tiny random model (the rates themselves are the
// machine's).
#include "eval/cost.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include "model/decoder.h"
#include "model/weight_source.h"

namespace swan {
namespace {

ModelConfig TinyConfig() {
  ModelConfig c;
  c.architecture = "LlamaForCausalLM";
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 8;
  c.vocab_size = 50;
  c.max_position_embeddings = 4096;
  c.tie_word_embeddings = true;
  return c;
}

std::unique_ptr<LanguageModel> TinyModel() {
  return BuildDecoder(RandomWeights(3, WeightType::kF32), TinyConfig(), "tiny");
}

// Depths 0 and 40, a prompt of 24 tokens, chunks of 16.
CostOptions TwoDepths(int32_t decode_tokens, int32_t repeats) {
  CostOptions o;
  o.depths = {0, 40};
  o.prompt_tokens = 24;
  o.decode_tokens = decode_tokens;
  o.repeats = repeats;
  o.kv.max_chunk = 16;
  return o;
}

TEST(Cost, PointsCountTheCacheTheRunsAndTheRoutes) {
  // Random weights have a router on every layer: a routed plan runs.
  const std::unique_ptr<LanguageModel> model = TinyModel();
  const AttentionPlan plan = model->ResolvePlan("full,layer1:routed:8");
  CostOptions o = TwoDepths(5, 2);
  std::vector<double> random_bytes;  // [depths] the cache bytes after a random fill
  for (const double forced : {0.0, 1.0}) {
    o.forced_full_ratio = forced;
    for (const bool random_fill : {true, false}) {
      o.random_fill = random_fill;
      const std::vector<CostPoint> points = MeasureCost(*model, plan, o);
      ASSERT_EQ(points.size(), 2u);
      // Random rows fill the cache as a prefill would; a deeper cache holds more.
      if (random_fill) random_bytes = {points[0].kv_bytes, points[1].kv_bytes};
      EXPECT_EQ(points[0].kv_bytes, random_bytes[0]);
      EXPECT_EQ(points[1].kv_bytes, random_bytes[1]);
      EXPECT_GT(points[1].kv_bytes, points[0].kv_bytes);
      for (const CostPoint& p : points) {
        EXPECT_EQ(p.prompt, 24);
        EXPECT_EQ(p.prefill_runs.size(), 2u);
        EXPECT_EQ(p.decode_runs.size(), 2u);
        EXPECT_GT(p.prefill_tokens_per_s, 0);
        EXPECT_GT(p.decode_tokens_per_s, 0);
        EXPECT_GT(p.linear_flops, 0);  // the timed prefills' products were counted
        // Only layer 1 routes; the forced draw sends every token its way.
        EXPECT_EQ(p.full_ratio[0], 0.0);
        EXPECT_EQ(p.full_ratio[1], forced);
        EXPECT_EQ(p.routed_full_ratio, forced);
      }
    }
  }
  // A full plan has no routes.
  o.forced_full_ratio = -1;
  EXPECT_EQ(MeasureCost(*model, model->ResolvePlan("full"), o).front().routed_full_ratio, -1.0);
  o.depths = {0};
  o.prompt_tokens = 0;
  EXPECT_THROW(MeasureCost(*model, plan, o), std::invalid_argument);
  o.depths = {-1};
  EXPECT_THROW(MeasureCost(*model, plan, o), std::invalid_argument);
}

// swan bench's decode starts at the depth, in a cache of its own, as
// llama-bench's tg does (also from an empty cache); swan compare's after the
// prompt. The cache then holds depth + decode tokens: a full layer's bytes
// tell where the decode ran.
TEST(Cost, DecodeStartsAtTheDepthOrAfterThePrompt) {
  const std::unique_ptr<LanguageModel> model = TinyModel();
  const AttentionPlan plan = model->ResolvePlan("full");
  CostOptions o = TwoDepths(/*decode_tokens=*/100, /*repeats=*/1);
  o.kv.page_rows = 1;  // the cache's bytes count its rows
  const std::vector<CostPoint> after = MeasureCost(*model, plan, o);
  o.decode_after_prompt = false;
  const std::vector<CostPoint> at_depth = MeasureCost(*model, plan, o);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(after[i].decode_start, o.depths[i] + 24);
    EXPECT_EQ(at_depth[i].decode_start, o.depths[i]);
    EXPECT_GT(after[i].kv_bytes, at_depth[i].kv_bytes);  // 24 rows more in every layer
    EXPECT_GT(at_depth[i].decode_tokens_per_s, 0);
  }
  o.depths = {0};
  o.prompt_tokens = 0;  // decode only, from an empty cache
  const CostPoint empty = MeasureCost(*model, plan, o).front();
  EXPECT_EQ(empty.decode_start, 0);
  EXPECT_TRUE(empty.prefill_runs.empty());
  EXPECT_EQ(empty.decode_runs.size(), 1u);
}

// swan bench reads the weights between the decode's tokens: between_tokens
// runs after every token, the warm-up's too, outside the decode's time,
// and read_bandwidth after every run.
TEST(Cost, BetweenTokensRunsAfterEveryTokenOutsideItsTime) {
  const std::unique_ptr<LanguageModel> model = TinyModel();
  CostOptions o = TwoDepths(/*decode_tokens=*/4, /*repeats=*/2);
  int calls = 0, runs = 0;
  o.between_tokens = [&] {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  };
  o.read_bandwidth = [&] { return double(++runs); };
  const std::vector<CostPoint> points = MeasureCost(*model, model->ResolvePlan("full"), o);
  EXPECT_EQ(calls, 2 * 3 * 4);  // 2 depths x (a warm-up + 2 runs) x 4 tokens
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].decode_read_bandwidth, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(points[1].decode_read_bandwidth, (std::vector<double>{4, 5, 6}));
  // 4 tokens with the 50 ms sleeps counted would be under 20 tok/s.
  for (const CostPoint& p : points) EXPECT_GT(p.decode_tokens_per_s, 40.0);
}

}  // namespace
}  // namespace swan
