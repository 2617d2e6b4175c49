// The Llama forward pass against stories260K's golden outputs (llama2.c).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "model/model.h"
#include "model/test_files.h"

namespace swan {
namespace {

std::vector<int32_t> Iota(int64_t n, int32_t start = 0) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

int32_t Argmax(const float* x, int64_t n) { return int32_t(std::max_element(x, x + n) - x); }

class Stories260K : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = LoadModel(test::Stories260K()).release(); }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  static LanguageModel* model_;
};
LanguageModel* Stories260K::model_ = nullptr;

TEST_F(Stories260K, ConfigIsRead) {
  const ModelConfig& c = model_->config();
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_id, 1);
}

TEST_F(Stories260K, LogitsMatchGolden) {
  const std::string golden = test::Stories260K() + "/golden/";
  const nlohmann::json tokens = nlohmann::json::parse(std::ifstream(golden + "tokens.json"));
  const std::vector<int32_t> ids = tokens["input_ids"].get<std::vector<int32_t>>();
  const int64_t n = int64_t(ids.size()), vocab = 512;
  std::vector<float> expected(size_t(n * vocab));  // [16, 512]
  std::ifstream in(golden + "logits.bin", std::ios::binary);
  in.read(reinterpret_cast<char*>(expected.data()), std::streamsize(expected.size() * sizeof(float)));
  ASSERT_TRUE(in) << "cannot read " << golden << "logits.bin";

  auto session = model_->NewSession(model_->ResolvePlan(""));
  const std::vector<int32_t> pos = Iota(n);
  std::vector<float> logits(size_t(n * vocab));  // [16, 512]
  model_->Forward(logits.data(), Batch{ids.data(), pos.data(), n}, *session);
  double max_diff = 0;
  for (size_t i = 0; i < logits.size(); ++i) max_diff = std::max(max_diff, double(std::fabs(logits[i] - expected[i])));
  RecordProperty("max_abs_diff", std::to_string(max_diff));
  std::printf("stories260K max |logit - golden| = %.3g\n", max_diff);
  EXPECT_LT(max_diff, 1e-4);
  const auto argmax = tokens["argmax_per_position"].get<std::vector<int32_t>>();
  for (int64_t t = 0; t < n; ++t) EXPECT_EQ(Argmax(&logits[size_t(t * vocab)], vocab), argmax[size_t(t)]);
}

TEST_F(Stories260K, GreedyContinuationsMatchGolden) {
  const nlohmann::json greedy = nlohmann::json::parse(std::ifstream(test::Stories260K() + "/golden/greedy.json"));
  ASSERT_EQ(greedy["results"].size(), 3u);
  const int64_t vocab = 512;
  for (const auto& r : greedy["results"]) {
    const auto prompt = r["prompt_ids"].get<std::vector<int32_t>>();
    const auto expected = r["new_ids"].get<std::vector<int32_t>>();
    auto session = model_->NewSession(model_->ResolvePlan(""));
    std::vector<float> logits(static_cast<size_t>(vocab));  // [1, vocab]
    const std::vector<int32_t> pos = Iota(int64_t(prompt.size()));
    model_->Forward(logits.data(), Batch{prompt.data(), pos.data(), int64_t(prompt.size()), false}, *session);
    std::vector<int32_t> got;
    int32_t p = int32_t(prompt.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      const int32_t next = Argmax(logits.data(), vocab);
      got.push_back(next);
      model_->Forward(logits.data(), Batch{&next, &p, 1, false}, *session);
      ++p;
    }
    EXPECT_EQ(got, expected) << "prompt: " << r["prompt"];
  }
}

}  // namespace
}  // namespace swan
