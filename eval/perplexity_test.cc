// Perplexity by position on stories260K: the chunked, windowed evaluation
// equals the loss computed from whole-window logits, the buckets add up, and
// a window at least as long as the context changes nothing.
#include "eval/perplexity.h"

#include <gtest/gtest.h>

#include <cmath>

#include "eval/test_data.h"

namespace swan {
namespace {

class Perplexity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = LoadModel(test::Stories260K()).release();
    tokenizer_ = new Tokenizer(Tokenizer::Load(test::Stories260K()));
    text_ = new std::vector<int32_t>(test::EncodePlain(*tokenizer_, test::StoryText()));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete tokenizer_;
    delete text_;
  }
  static LanguageModel* model_;
  static Tokenizer* tokenizer_;
  static std::vector<int32_t>* text_;
};
LanguageModel* Perplexity::model_ = nullptr;
Tokenizer* Perplexity::tokenizer_ = nullptr;
std::vector<int32_t>* Perplexity::text_ = nullptr;

TEST(SplitIntoWindows, EveryTokenScoredOnceWithAndWithoutBos) {
  std::vector<int32_t> text(100);
  for (size_t i = 0; i < text.size(); ++i) text[i] = int32_t(10 + i);
  for (int32_t bos : {1, -1}) {
    const auto windows = SplitIntoWindows(text, 16, bos);
    std::vector<int> scored(text.size(), 0);
    int64_t expect_begin = 0;
    for (const TextWindow& w : windows) {
      EXPECT_EQ(w.begin, expect_begin);
      expect_begin = w.end;
      EXPECT_LE(w.end - w.begin + (w.lead >= 0 ? 1 : 0), 16);
      if (bos >= 0) {
        EXPECT_EQ(w.lead, bos);
      }
      if (bos < 0 && w.begin > 0) {
        EXPECT_EQ(w.lead, text[size_t(w.begin - 1)]);
      }
      for (int64_t i = w.first_scored; i < w.end; ++i) scored[size_t(i)] += 1;
    }
    EXPECT_EQ(expect_begin, 100);
    for (size_t i = 0; i < text.size(); ++i) EXPECT_EQ(scored[i], (bos < 0 && i == 0) ? 0 : 1) << i;
  }
}

TEST_F(Perplexity, FullPlanEqualsLossFromWholeWindowLogits) {
  ASSERT_GT(text_->size(), 200u);
  const int32_t context = 64;
  PerplexityOptions options;
  options.context = context;
  options.bos_id = tokenizer_->bos_id();
  options.kv.max_chunk = 12;  // several chunks per window
  options.max_windows = 3;
  const AttentionPlan plan = model_->ResolvePlan("full");
  const PerplexityResult r = EvaluatePerplexity(*model_, plan, *text_, options);

  // Reference: each window in one forward pass with every logit.
  const int64_t vocab = model_->config().vocab_size;
  double nll = 0;
  int64_t count = 0;
  std::vector<TextWindow> windows = SplitIntoWindows(*text_, context, options.bos_id);
  windows.resize(3);
  for (const TextWindow& w : windows) {
    std::vector<int32_t> tokens{w.lead};
    tokens.insert(tokens.end(), text_->begin() + w.begin, text_->begin() + w.end);
    std::vector<int32_t> pos(tokens.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
    KvCacheOptions kv;
    kv.max_chunk = context;
    auto session = model_->NewSession(plan, kv);
    std::vector<float> logits(tokens.size() * size_t(vocab));  // [n, vocab]
    model_->Forward(logits.data(), Batch{tokens.data(), pos.data(), int64_t(tokens.size()), true}, *session);
    for (size_t p = 1; p < tokens.size(); ++p) {
      const float* row = &logits[(p - 1) * size_t(vocab)];
      double max = row[0], sum = 0;
      for (int64_t v = 0; v < vocab; ++v) max = std::max(max, double(row[v]));
      for (int64_t v = 0; v < vocab; ++v) sum += std::exp(double(row[v]) - max);
      nll += std::log(sum) + max - double(row[tokens[p]]);
      ++count;
    }
  }
  EXPECT_EQ(r.tokens_scored, 3 * (context - 1));
  EXPECT_EQ(r.tokens_scored, count);
  EXPECT_NEAR(r.nll_sum / double(count), nll / double(count), 1e-5);
  // A story model on stories: far better than uniform over 512 tokens.
  EXPECT_LT(r.Perplexity(), 20.0);
  EXPECT_GT(r.Perplexity(), 1.0);
}

TEST_F(Perplexity, BucketsSumToTheTotal) {
  PerplexityOptions options;
  options.context = 100;
  options.bucket_width = 7;
  options.bos_id = tokenizer_->bos_id();
  options.max_windows = 4;
  const PerplexityResult r = EvaluatePerplexity(*model_, model_->ResolvePlan("swa:16"), *text_, options);
  double sum = 0;
  int64_t count = 0;
  int32_t expect_begin = 0;
  for (const PositionBucket& b : r.buckets) {
    EXPECT_EQ(b.begin, expect_begin);
    expect_begin = b.end;
    sum += b.nll_sum;
    count += b.count;
  }
  EXPECT_EQ(expect_begin, 100);
  EXPECT_EQ(r.buckets.size(), 15u);
  EXPECT_EQ(r.count_by_pos[0], 0);  // position 0 holds BOS, never predicted
  int64_t first_bucket = 0;
  for (int p = 0; p < 7; ++p) first_bucket += r.count_by_pos[size_t(p)];
  EXPECT_EQ(r.buckets[0].count, first_bucket);
  EXPECT_EQ(count, r.tokens_scored);
  EXPECT_NEAR(sum, r.nll_sum, 1e-6 * r.nll_sum);
  EXPECT_NEAR(r.MeanNllBetween(0, 100), r.MeanNll(), 1e-9);
}

TEST_F(Perplexity, WindowAsLongAsTheContextEqualsFull) {
  PerplexityOptions options;
  options.context = 64;
  options.bos_id = -1;
  options.max_windows = 3;
  options.kv.max_chunk = 16;
  const PerplexityResult full = EvaluatePerplexity(*model_, model_->ResolvePlan("full"), *text_, options);
  const PerplexityResult swa = EvaluatePerplexity(*model_, model_->ResolvePlan("swa:64"), *text_, options);
  const PerplexityResult narrow = EvaluatePerplexity(*model_, model_->ResolvePlan("swa:4"), *text_, options);
  EXPECT_EQ(full.windows, 3);
  EXPECT_EQ(full.tokens_scored, 63 + 63 + 63);
  EXPECT_NEAR(full.MeanNll(), swa.MeanNll(), 1e-5);
  // A 4-token window loses context: worse after position 4, equal before.
  EXPECT_GT(narrow.MeanNllBetween(8, 64), full.MeanNllBetween(8, 64));
  EXPECT_NEAR(narrow.MeanNllBetween(0, 4), full.MeanNllBetween(0, 4), 1e-5);
}

TEST_F(Perplexity, RejectsTooShortText) {
  PerplexityOptions options;
  options.context = 32;
  const std::vector<int32_t> one{5};
  EXPECT_THROW(EvaluatePerplexity(*model_, model_->ResolvePlan("full"), one, options), std::invalid_argument);
  options.context = 1;
  EXPECT_THROW(EvaluatePerplexity(*model_, model_->ResolvePlan("full"), *text_, options), std::invalid_argument);
}

}  // namespace
}  // namespace swan
