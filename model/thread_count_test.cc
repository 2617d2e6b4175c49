// A prompt's logits do not depend on how many threads compute them: one,
// two, three, or one each inside a side-by-side region (the server runs
// several prefills that way). The server picks the count per step from the
// load of other programs (util/threads.h), so an answer that depended on
// it would change with whatever else runs on the machine. With float32
// weights below AVX-512 this takes thread-invariant products (swan serve
// --deterministic); the rest holds without them.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "model/model.h"
#include "model/test_files.h"
#include "ops/gemm.h"
#include "util/threads.h"

namespace swan {
namespace {

// Logits [n, vocab] of `tokens` in one prefill, in a fresh session.
std::vector<float> PromptLogits(const LanguageModel& model, const std::vector<int32_t>& tokens) {
  auto session = model.NewSession(model.ResolvePlan("model"), KvCacheOptions{});
  std::vector<int32_t> pos(tokens.size());  // [n]
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
  std::vector<float> logits(tokens.size() * size_t(model.config().vocab_size));  // [n, vocab]
  model.Forward(logits.data(), Batch{tokens.data(), pos.data(), int64_t(tokens.size()), true}, *session);
  return logits;
}

// "" when a and b hold the same bits, else the largest difference.
std::string Difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
  if (std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0) return "";
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::fabs(a[i] - b[i])));
  return "logits differ by up to " + std::to_string(worst);
}

TEST(ThreadCount, PromptLogitsAreTheSameOnAnyNumberOfThreads) {
  LoadOptions bf16, q8;
  bf16.weights = WeightType::kBF16;
  q8.weights = WeightType::kQ8_0;
  struct Case {
    const char* name;
    std::unique_ptr<LanguageModel> model;
  };
  Case cases[] = {
      {"swan-7m (bf16 as stored)", LoadModel(test::SourceRoot() + "/models/swan-7m")},
      {"swan-7m q8_0", LoadModel(test::SourceRoot() + "/models/swan-7m", q8)},
      {"stories260K f32", LoadModel(test::Stories260K())},
      {"stories260K bf16", LoadModel(test::Stories260K(), bf16)},
  };
  const int limit = ThreadLimit();
  SetThreadInvariantProducts(true);
  std::mt19937 rng(7);
  for (const Case& c : cases) {
    // Below and above the 8 rows where prefill leaves the matrix-vector
    // products for the matrix products, and past one attention tile.
    for (int n : {3, 12, 100}) {
      SCOPED_TRACE(std::string(c.name) + ", " + std::to_string(n) + " tokens");
      std::uniform_int_distribution<int32_t> id(0, int32_t(c.model->config().vocab_size) - 1);
      std::vector<int32_t> tokens(static_cast<size_t>(n));  // [n]
      for (int32_t& t : tokens) t = id(rng);
      SetThreadLimit(1);
      const std::vector<float> one = PromptLogits(*c.model, tokens);
      for (int threads : {2, 3}) {
        SetThreadLimit(threads);
        EXPECT_EQ(Difference(PromptLogits(*c.model, tokens), one), "") << threads << " threads";
      }
      // Two prefills side by side, each computing on its own thread.
      SetThreadLimit(2);
      std::vector<float> side_by_side[2];
#pragma omp parallel for num_threads(2)
      for (int i = 0; i < 2; ++i) side_by_side[i] = PromptLogits(*c.model, tokens);
      EXPECT_EQ(Difference(side_by_side[0], one), "") << "side by side, first";
      EXPECT_EQ(Difference(side_by_side[1], one), "") << "side by side, second";
    }
  }
  SetThreadInvariantProducts(false);
  SetThreadLimit(limit);
}

}  // namespace
}  // namespace swan
