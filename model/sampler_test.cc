#include "model/sampler.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace swan {
namespace {

// Draw counts of each token over `n` samples.
std::map<int32_t, int> Counts(const SamplerOptions& o, const std::vector<float>& logits, int n = 4000) {
  Sampler s(o);
  std::map<int32_t, int> counts;
  for (int i = 0; i < n; ++i) ++counts[s.Sample(logits.data(), int64_t(logits.size()))];
  return counts;
}

const std::vector<float> kLogits = {0.0f, 2.0f, 1.0f, 1.9f, -1.0f};

TEST(Sampler, GreedyAtTemperatureZero) {
  SamplerOptions o;
  o.temperature = 0;
  EXPECT_EQ(Counts(o, kLogits, 10), (std::map<int32_t, int>{{1, 10}}));
}

TEST(Sampler, TopKTopPMinPRestrictTheCandidates) {
  SamplerOptions o;
  o.top_k = 2;
  auto c = Counts(o, kLogits);
  EXPECT_EQ(c.size(), 2u);
  EXPECT_TRUE(c.count(1) && c.count(3));
  o = {};
  o.top_p = 0.3;  // the top token alone has p ≈ 0.36
  EXPECT_EQ(Counts(o, kLogits).size(), 1u);
  o = {};
  o.min_p = 0.5;  // keeps tokens with p >= half the top one's: ids 1, 3, (2: e^-1 ≈ 0.37 < 0.5)
  c = Counts(o, kLogits);
  EXPECT_EQ(c.size(), 2u);
  o = {};
  c = Counts(o, kLogits);
  EXPECT_EQ(c.size(), 5u);
}

TEST(Sampler, SeedMakesItRepeatable) {
  SamplerOptions o;
  o.seed = 42;
  Sampler a(o), b(o);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(a.Sample(kLogits.data(), 5), b.Sample(kLogits.data(), 5));
}

TEST(Sampler, RejectsBadOptions) {
  SamplerOptions o;
  o.top_p = 0;
  EXPECT_THROW(Sampler{o}, std::invalid_argument);
  o = {};
  o.temperature = -1;
  EXPECT_THROW(Sampler{o}, std::invalid_argument);
  o = {};
  o.min_p = 2;
  EXPECT_THROW(Sampler{o}, std::invalid_argument);
}

}  // namespace
}  // namespace swan
