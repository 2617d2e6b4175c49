#include "train/recall_data.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

namespace swan {
namespace {

RecallOptions Mqar() {
  RecallOptions o;
  o.context = 256;
  o.pairs = 20;
  o.queries = 16;
  o.bins = ParseDistanceBins("2-16:0.25,16-64:0.25,64-251:0.5");
  return o;
}

// Every answer is the value that followed the same key `distance` tokens
// earlier; keys are distinct; the prefix is constant; nothing else counts.
TEST(RecallData, MqarAnswersRecallTheirPairAtTheirDistance) {
  const RecallOptions o = Mqar();
  ValidateRecallOptions(o);
  for (uint64_t index = 0; index < 200; ++index) {
    const RecallSequence s = MakeRecallSequence(o, index);
    ASSERT_EQ(s.tokens.size(), size_t(o.context + 1));
    EXPECT_EQ(s.tokens[0], kRecallBos);
    EXPECT_EQ(s.tokens, MakeRecallSequence(o, index).tokens);  // a pure function of the index
    int answers = 0;
    std::multiset<int32_t> keys_seen;
    for (int32_t i = 0; i <= o.context; ++i) {
      ASSERT_GE(s.tokens[size_t(i)], 0);
      ASSERT_LT(s.tokens[size_t(i)], RecallVocabSize(o));
      if (s.tokens[size_t(i)] >= 4 && s.tokens[size_t(i)] < 4 + o.keys) keys_seen.insert(s.tokens[size_t(i)]);
      if (s.weight[size_t(i)] == 0) {
        EXPECT_EQ(s.distance[size_t(i)], 0);
        continue;
      }
      ++answers;
      EXPECT_EQ(s.weight[size_t(i)], 1.0f);
      const int32_t d = s.distance[size_t(i)];
      ASSERT_GE(i - 1 - d, 4) << "the pair sits after the prefix";
      EXPECT_EQ(s.tokens[size_t(i - 1)], s.tokens[size_t(i - 1 - d)]) << "the query's key";
      EXPECT_EQ(s.tokens[size_t(i)], s.tokens[size_t(i - d)]) << "the pair's value";
    }
    EXPECT_GE(answers, o.queries - 2);  // a placement may rarely fail
    for (int32_t k : keys_seen) EXPECT_LE(keys_seen.count(k), 2u) << "each key in one pair";
  }
  // More queries than pairs: pairs are asked again, every answer still right.
  RecallOptions again = o;
  again.pairs = 8;
  again.queries = 40;
  ValidateRecallOptions(again);
  for (uint64_t index = 0; index < 50; ++index) {
    const RecallSequence s = MakeRecallSequence(again, index);
    int answers = 0;
    for (int32_t i = 0; i <= again.context; ++i) {
      if (s.weight[size_t(i)] == 0) continue;
      ++answers;
      const int32_t d = s.distance[size_t(i)];
      EXPECT_EQ(s.tokens[size_t(i - 1)], s.tokens[size_t(i - 1 - d)]);
      EXPECT_EQ(s.tokens[size_t(i)], s.tokens[size_t(i - d)]);
    }
    EXPECT_GE(answers, 30);
  }
}

// Zoology's layout: the pairs fill the tokens after the prefix, every pair
// is asked once, and each answer's distance is back to its pair.
TEST(RecallData, PairsFirstPutsThePairsAfterThePrefix) {
  RecallOptions o = Mqar();
  o.pairs = 16;
  o.queries = 24;
  o.pairs_first = true;
  ValidateRecallOptions(o);
  EXPECT_TRUE(RecallTaskFromJson(RecallTaskJson(o)).pairs_first);
  for (uint64_t index = 0; index < 50; ++index) {
    const RecallSequence s = MakeRecallSequence(o, index);
    std::set<int32_t> pair_keys;
    for (int32_t i = 0; i < o.pairs; ++i) {
      const int32_t key = s.tokens[size_t(kRecallPrefix + 2 * i)];
      EXPECT_GE(key, 4);
      EXPECT_LT(key, 4 + o.keys);
      EXPECT_GE(s.tokens[size_t(kRecallPrefix + 2 * i + 1)], 4 + o.keys) << "a value";
      EXPECT_EQ(s.weight[size_t(kRecallPrefix + 2 * i + 1)], 0.0f) << "a pair is not an answer";
      pair_keys.insert(key);
    }
    EXPECT_EQ(pair_keys.size(), size_t(o.pairs));
    std::set<int32_t> asked;
    int answers = 0;
    for (int32_t i = kRecallPrefix + 2 * o.pairs; i <= o.context; ++i) {
      if (s.weight[size_t(i)] == 0) continue;
      ++answers;
      const int32_t d = s.distance[size_t(i)];
      EXPECT_EQ(s.tokens[size_t(i - 1)], s.tokens[size_t(i - 1 - d)]);
      EXPECT_EQ(s.tokens[size_t(i)], s.tokens[size_t(i - d)]);
      asked.insert(s.tokens[size_t(i - 1)]);
    }
    EXPECT_GE(answers, o.queries - 2);
    EXPECT_GE(asked.size(), size_t(o.pairs - 2)) << "the first queries ask every pair";
  }
}

// A curriculum's short stage is the same task at its context: pairs,
// queries and distances scale, and every query still has its answer.
TEST(RecallData, TaskAtAShorterContextScales) {
  const RecallOptions o = Mqar();  // 256 tokens, 20 pairs, 16 queries
  EXPECT_EQ(RecallTaskAtContext(o, 256).pairs, 20);
  EXPECT_EQ(RecallTaskAtContext(o, 512).context, 256);
  const RecallOptions half = RecallTaskAtContext(o, 64);
  EXPECT_EQ(half.context, 64);
  EXPECT_EQ(half.pairs, 5);
  EXPECT_EQ(half.queries, 4);
  ASSERT_EQ(half.bins.size(), 3u);
  EXPECT_EQ(half.bins[0].lo, 2);
  EXPECT_EQ(half.bins[1].lo, 4);
  EXPECT_EQ(half.bins[2].hi, 60);  // 251/4 clipped to the longest distance at 64 tokens
  int answers = 0;
  for (uint64_t index = 0; index < 50; ++index) {
    const RecallSequence s = MakeRecallSequence(half, index);
    ASSERT_EQ(s.tokens.size(), 65u);
    for (int32_t i = 0; i <= 64; ++i) answers += s.weight[size_t(i)] > 0;
  }
  EXPECT_GE(answers, 50 * (half.queries - 1));
}

// Distances follow the bins' shares, and the seeds give disjoint sets.
TEST(RecallData, DistancesFollowTheBinsAndSeedsDiffer) {
  RecallOptions o = Mqar();
  std::map<int, int> per_bin;  // bin -> answers
  int total = 0;
  for (uint64_t index = 0; index < 400; ++index) {
    const RecallSequence s = MakeRecallSequence(o, index);
    for (uint16_t d : s.distance) {
      if (d == 0) continue;
      int bin = -1;
      for (size_t b = 0; b < o.bins.size(); ++b)
        if (d >= o.bins[b].lo && d < o.bins[b].hi) bin = int(b);
      ASSERT_GE(bin, 0) << "distance " << d << " outside every bin";
      ++per_bin[bin];
      ++total;
    }
  }
  EXPECT_NEAR(double(per_bin[0]) / total, 0.25, 0.05);
  EXPECT_NEAR(double(per_bin[1]) / total, 0.25, 0.05);
  EXPECT_NEAR(double(per_bin[2]) / total, 0.50, 0.05);
  std::set<std::vector<int32_t>> train;
  for (uint64_t index = 0; index < 100; ++index) train.insert(MakeRecallSequence(o, index).tokens);
  o.seed = 2;
  for (uint64_t index = 0; index < 100; ++index) EXPECT_EQ(train.count(MakeRecallSequence(o, index).tokens), 0u);
}

TEST(RecallData, NeedleIsAskedAtTheEnd) {
  RecallOptions o;
  o.task = RecallTask::kNeedle;
  o.context = 128;
  o.needle_tokens = 3;
  o.bins = ParseDistanceBins("4-121");
  ValidateRecallOptions(o);
  for (uint64_t index = 0; index < 100; ++index) {
    const RecallSequence s = MakeRecallSequence(o, index);
    const int32_t at = o.context - 3;  // the final N
    EXPECT_EQ(s.tokens[size_t(at)], kRecallNeedle);
    const int32_t d = s.distance[size_t(at + 1)];
    ASSERT_GE(d, 4);
    EXPECT_EQ(s.tokens[size_t(at - d)], kRecallNeedle);
    for (int32_t i = 1; i <= 3; ++i) {
      EXPECT_EQ(s.weight[size_t(at + i)], 1.0f);
      EXPECT_EQ(s.distance[size_t(at + i)], d);
      EXPECT_EQ(s.tokens[size_t(at + i)], s.tokens[size_t(at - d + i)]);
    }
  }
}

// Copy: the second span repeats the first, every token of it an answer at
// the distance between the two markers; a copy share mixes copies in.
TEST(RecallData, CopyRepeatsItsSpanAndMixesIn) {
  RecallOptions o;
  o.task = RecallTask::kCopy;
  o.context = 64;
  o.bins = ParseDistanceBins("5-31");
  ValidateRecallOptions(o);
  for (uint64_t index = 0; index < 50; ++index) {
    const RecallSequence s = MakeRecallSequence(o, index);
    int answers = 0, d = 0;
    for (int32_t i = 0; i <= o.context; ++i) {
      if (s.weight[size_t(i)] == 0) continue;
      ++answers;
      d = s.distance[size_t(i)];
      EXPECT_EQ(s.tokens[size_t(i)], s.tokens[size_t(i - d)]);
    }
    ASSERT_GE(d, 5);
    ASSERT_LT(d, 31);
    EXPECT_EQ(answers, d - 1);
    EXPECT_EQ(s.tokens[size_t(o.context - (d - 1))], kRecallNeedle);  // the second marker
    EXPECT_EQ(s.weight[size_t(o.context)], 1.0f);                     // the span ends the sequence
  }
  RecallOptions mixed = Mqar();
  mixed.copy_share = 0.5;
  int copies = 0;
  for (uint64_t index = 0; index < 200; ++index) {
    const RecallSequence s = MakeRecallSequence(mixed, index);
    copies += s.weight.back() == 1.0f && s.tokens[size_t(mixed.context - s.distance.back() + 1)] == kRecallNeedle;
  }
  EXPECT_NEAR(copies / 200.0, 0.5, 0.1);
  mixed.copy_share = 0;
  EXPECT_EQ(MakeRecallSequence(mixed, 3).tokens, MakeRecallSequence(Mqar(), 3).tokens);
}

TEST(RecallData, RefusesWhatCannotFit) {
  RecallOptions o = Mqar();
  o.bins = ParseDistanceBins("2-300");
  EXPECT_NO_THROW(ValidateRecallOptions(o));  // drawn up to the longest that fits
  o.bins = ParseDistanceBins("300-400");
  EXPECT_THROW(ValidateRecallOptions(o), std::invalid_argument);
  o = Mqar();
  o.queries = 80;  // 2 * (20 + 80) tokens of 256
  EXPECT_THROW(ValidateRecallOptions(o), std::invalid_argument);
  EXPECT_THROW(ParseDistanceBins("64"), std::invalid_argument);
  EXPECT_THROW(ParseDistanceBins("64-32"), std::invalid_argument);
  EXPECT_THROW(ParseRecallTask("passkey"), std::invalid_argument);
  EXPECT_EQ(RecallTokenName(o, 4), "k0");
  EXPECT_EQ(RecallTokenName(o, 4 + o.keys + 3), "v3");
  EXPECT_EQ(RecallTokenName(o, kRecallNeedle), "N");
}

}  // namespace
}  // namespace swan
