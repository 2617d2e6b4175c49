// Training on recall data: labelled token files (weights, distances,
// fixed-length documents), recall accuracy by distance, the context
// curriculum and their resume.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/test_files.h"
#include "tokenizer/token_file.h"
#include "tokenizer/token_labels.h"
#include "train/data.h"
#include "train/recall_data.h"
#include "train/recall_eval.h"
#include "train/recall_log.h"
#include "train/run_log.h"
#include "train/trainer.h"
#include "util/bf16.h"

namespace swan {
namespace {

namespace fs = std::filesystem;

std::string TempDir(const std::string& name) { return test::TempDir("recall_" + name).string(); }

RecallOptions SmallMqar(int32_t context) {
  RecallOptions o;
  o.context = context;
  o.keys = 8;
  o.values = 8;
  o.filler = 8;
  o.pairs = 3;
  o.queries = 3;
  o.bins = ParseDistanceBins("2-" + std::to_string(context - 5));
  return o;
}

std::string WriteRecall(const std::string& path, const RecallOptions& o, int64_t count) {
  WriteRecallFiles(path, o, count);
  return path;
}

TEST(RecallDataLoader, SequencesStartAtDocumentsAndCarryTheirLabels) {
  const std::string dir = TempDir("loader");
  const RecallOptions o = SmallMqar(32);
  DataOptions d;
  d.train_path = WriteRecall(dir + "/train.bin", o, 50);
  d.seq = 32;
  d.seed = 3;
  DataLoader loader(d);
  ASSERT_TRUE(loader.has_labels());
  EXPECT_EQ(loader.train_sequences(), 50);
  const int64_t B = 5, T = 32;
  std::vector<int32_t> tokens(size_t(B * T)), targets(size_t(B * T));
  std::vector<float> weights(size_t(B * T));
  std::vector<uint16_t> distances(size_t(B * T));
  loader.TrainBatch(7, B, {tokens.data(), targets.data(), weights.data(), distances.data()});
  for (int64_t s = 0; s < B; ++s) {
    EXPECT_EQ(tokens[size_t(s * T)], kRecallBos) << "a sequence starts at a document";
    // Find the document it is, and compare labels with the generator's.
    bool found = false;
    for (uint64_t doc = 0; doc < 50 && !found; ++doc) {
      const RecallSequence r = MakeRecallSequence(o, doc);
      if (!std::equal(r.tokens.begin(), r.tokens.begin() + T, tokens.begin() + s * T)) continue;
      found = true;
      for (int64_t t = 0; t < T; ++t) {
        EXPECT_EQ(targets[size_t(s * T + t)], r.tokens[size_t(t + 1)]);
        EXPECT_EQ(weights[size_t(s * T + t)], r.weight[size_t(t + 1)]);
        EXPECT_EQ(distances[size_t(s * T + t)], r.distance[size_t(t + 1)]);
      }
    }
    EXPECT_TRUE(found) << "sequence " << s;
  }
  // A shorter context reads the same documents' beginnings.
  loader.set_context(16);
  std::vector<int32_t> short_tokens(size_t(B * 16)), short_targets(size_t(B * 16));
  loader.TrainBatch(7, B, short_tokens.data(), short_targets.data());
  for (int64_t s = 0; s < B; ++s)
    EXPECT_TRUE(std::equal(short_tokens.begin() + s * 16, short_tokens.begin() + (s + 1) * 16, tokens.begin() + s * T));
  EXPECT_THROW(loader.set_context(33), std::invalid_argument);
  // Documents shorter than the context, and labels of another length, are refused.
  d.seq = 40;
  EXPECT_THROW(DataLoader{d}, std::runtime_error);
  d.seq = 32;
  TokenLabels wrong = ReadTokenLabels(LabelsPath(d.train_path));
  wrong.weight.pop_back();
  wrong.distance.pop_back();
  WriteTokenLabels(LabelsPath(d.train_path), wrong);
  EXPECT_THROW(DataLoader{d}, std::runtime_error);
}

// A recall task made on the fly: every index its own fresh sequence, the
// held-out ones from the task's val_seed, labels included.
TEST(RecallDataLoader, MakesSequencesOnTheFlyFromTheTask) {
  const std::string dir = TempDir("onthefly");
  RecallOptions o = SmallMqar(32);
  nlohmann::json j = RecallTaskJson(o);
  j["val_seed"] = 4242;
  j["val_sequences"] = 5;
  std::ofstream(dir + "/recall.json") << j.dump();
  DataOptions d;
  d.recall_task = dir + "/recall.json";
  d.seq = 32;
  DataLoader loader(d);
  EXPECT_TRUE(loader.has_labels());
  EXPECT_TRUE(loader.has_val_labels());
  EXPECT_EQ(loader.vocab_size(), uint32_t(RecallVocabSize(o)));
  EXPECT_EQ(loader.val_sequences(), 5);
  const int64_t B = 3, T = 32;
  std::vector<int32_t> tokens(size_t(B * T)), targets(size_t(B * T));
  std::vector<float> weights(size_t(B * T));
  std::vector<uint16_t> distances(size_t(B * T));
  const BatchBuffers out{tokens.data(), targets.data(), weights.data(), distances.data()};
  loader.TrainBatch(1000000, B, out);
  for (int64_t s = 0; s < B; ++s) {
    const RecallSequence r = MakeRecallSequence(o, uint64_t(1000000 + s));
    for (int64_t t = 0; t < T; ++t) {
      EXPECT_EQ(tokens[size_t(s * T + t)], r.tokens[size_t(t)]);
      EXPECT_EQ(targets[size_t(s * T + t)], r.tokens[size_t(t + 1)]);
      EXPECT_EQ(weights[size_t(s * T + t)], r.weight[size_t(t + 1)]);
      EXPECT_EQ(distances[size_t(s * T + t)], r.distance[size_t(t + 1)]);
    }
  }
  loader.ValBatch(6, 1, out);  // wraps to held-out sequence 1
  RecallOptions held_out = o;
  held_out.seed = 4242;
  const RecallSequence v = MakeRecallSequence(held_out, 1);
  EXPECT_TRUE(std::equal(tokens.begin(), tokens.begin() + T, v.tokens.begin()));
  // A shorter stage of a curriculum: the task at that context, not a crop.
  loader.set_context(16);
  const RecallOptions short_task = RecallTaskAtContext(o, 16);
  ASSERT_LT(short_task.pairs, o.pairs);
  loader.TrainBatch(7, 1, out);
  const RecallSequence r = MakeRecallSequence(short_task, 7);
  EXPECT_TRUE(std::equal(tokens.begin(), tokens.begin() + 16, r.tokens.begin()));
  EXPECT_TRUE(std::equal(weights.begin(), weights.begin() + 16, r.weight.begin() + 1));
  loader.set_context(32);
  d.seq = 33;
  EXPECT_THROW(DataLoader{d}, std::runtime_error);
}

// A hand-built case: logits whose greedy predictions are known.
TEST(RecallTally, CountsItemsByDistanceAndNeedsEveryTokenOfAnItem) {
  const int64_t B = 1, T = 10, V = 4;
  std::vector<float> logits(size_t(B * T * V), 0.0f);  // [T, V]
  std::vector<int32_t> targets(size_t(T), 0);
  std::vector<uint16_t> distances(size_t(T), 0);
  auto predict = [&](int64_t t, int32_t id) { logits[size_t(t * V + id)] = 5.0f; };
  // t=1: a near answer, right. t=3: a far answer, wrong.
  targets[1] = 2, distances[1] = 3, predict(1, 2);
  targets[3] = 1, distances[3] = 40, predict(3, 3);
  // t=6..8: a far three-token item, one token wrong: the item is wrong.
  for (int64_t t = 6; t <= 8; ++t) targets[size_t(t)] = 1, distances[size_t(t)] = 50, predict(t, 1);
  predict(7, 0), logits[size_t(7 * V + 1)] = 0;
  RecallTally tally({1, 16, 64});
  tally.Add(logits.data(), targets.data(), distances.data(), B, T, V);
  EXPECT_EQ(tally.items(0), 1);
  EXPECT_EQ(tally.correct(0), 1);
  EXPECT_EQ(tally.items(1), 2);
  EXPECT_EQ(tally.correct(1), 0);
  EXPECT_EQ(tally.Accuracy(0), 1.0);
  EXPECT_EQ(tally.BinName(1), "[16,64)");
  // Fixing the middle token makes the item right.
  logits[size_t(7 * V + 0)] = 0, predict(7, 1);
  RecallTally again({1, 16, 64});
  again.Add(logits.data(), targets.data(), distances.data(), B, T, V);
  EXPECT_EQ(again.correct(1), 1);
  EXPECT_THROW(RecallTally({4, 4}), std::invalid_argument);
  EXPECT_THROW(ParseRecallBins("1,x"), std::invalid_argument);
}

TEST(RecallBins, FollowThePlan) {
  ModelAttentionDefaults d;
  d.n_layers = 4;
  EXPECT_EQ(DefaultRecallBins(ResolvePlan("full", d), 512), (std::vector<int64_t>{1, 64, 256, 513}));
  EXPECT_EQ(DefaultRecallBins(ResolvePlan("hybrid:3:1,window:64", d), 1024),
            (std::vector<int64_t>{1, 16, 64, 189, 1025}));
}

std::vector<double> Losses(const std::string& run_dir) {
  std::vector<double> out;
  const RunLog log(run_dir, 1 << 30);
  for (const LogRow& r : log.rows()) out.push_back(r.loss);
  return out;
}

// A run on recall data with a curriculum logs recall by distance, and a
// resume repeats it.
TEST(RecallTraining, LogsRecallByDistanceAndResumesExactly) {
  const std::string dir = TempDir("train");
  const RecallOptions o = SmallMqar(32);
  TrainOptions t;
  t.run_dir = dir + "/run";
  t.train_data = WriteRecall(dir + "/train.bin", o, 64);
  RecallOptions held_out = o;
  held_out.seed = 99;
  t.val_data = WriteRecall(dir + "/train.val.bin", held_out, 8);
  t.preset = "tiny";
  t.attn = "hybrid:1:1,window:8";
  t.context = 32;
  t.context_schedule = {{3, 16}};
  t.batch = 2;
  t.accum = 2;
  t.steps = 6;
  t.schedule.lr = 1e-2;
  t.schedule.warmup_steps = 1;
  t.schedule.total_steps = t.steps;
  t.eval_every = 3;
  t.checkpoint_every = 2;
  t.recall_chance = 1.0 / 8;
  t.quiet = true;
  const TrainResult r = Train(t);
  EXPECT_EQ(r.recall_bins, (std::vector<int64_t>{1, 2, 8, 33}));  // window 8, 1 window layer
  ASSERT_EQ(r.last_recall.size(), 3u);
  const RecallLog log(t.run_dir, r.recall_bins, 1 << 30);
  ASSERT_EQ(log.rows().size(), 2u);  // steps 3 and 6
  int64_t items = 0;
  for (int64_t n : log.rows()[1].items) items += n;
  EXPECT_GT(items, 8);  // 8 held-out sequences of 3 queries, those inside the bins
  EXPECT_TRUE(fs::exists(t.run_dir + "/recall.svg"));
  const RunLog run_log(t.run_dir, 1 << 30);
  ASSERT_EQ(run_log.rows().size(), 6u);
  EXPECT_EQ(run_log.rows()[2].tokens, 3 * 2 * 2 * 16);  // three steps at the curriculum's 16
  EXPECT_EQ(run_log.rows()[3].tokens, 3 * 2 * 2 * 16 + 2 * 2 * 32);

  TrainOptions part = t;
  part.run_dir = dir + "/run2";
  {
    TrainOptions first = part;  // stops after its first step, inside the curriculum
    first.time_limit_s = 1e-9;
    Train(first);
  }
  part.resume = true;
  Train(part);
  const std::vector<double> a = Losses(t.run_dir), b = Losses(part.run_dir);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << "step " << i + 1;
  EXPECT_EQ(RecallLog(part.run_dir, r.recall_bins, 1 << 30).rows().size(), 2u);
}

}  // namespace
}  // namespace swan
