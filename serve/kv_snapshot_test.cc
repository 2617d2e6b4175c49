// Restoring a KV snapshot and continuing gives the logits of never having
// left, for ring (window) layers, full layers truncated to a shorter
// prefix, per-head layers, sinks, bf16 and q8_0 storage.
#include "kv/kv_snapshot.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "model/model.h"
#include "model/test_files.h"

namespace swan {
namespace {

class Snapshot : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Hundreds of tiny steps: one thread is faster than a parallel region each.
    omp_set_num_threads(1);
    model_ = LoadModel(test::Stories260K()).release();
    const nlohmann::json greedy = nlohmann::json::parse(std::ifstream(test::Stories260K() + "/golden/greedy.json"));
    tokens_ = greedy["results"][0]["prompt_ids"].get<std::vector<int32_t>>();
    for (int32_t id : greedy["results"][0]["new_ids"].get<std::vector<int32_t>>()) tokens_.push_back(id);
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }

  // Feeds tokens [begin, end) in steps of `chunk`; returns their logits [end - begin, vocab].
  static std::vector<float> Feed(Session& session, int64_t begin, int64_t end, int64_t chunk) {
    const int64_t vocab = model_->config().vocab_size;
    std::vector<int32_t> pos(tokens_.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
    std::vector<float> logits(size_t((end - begin) * vocab));  // [end - begin, vocab]
    for (int64_t s = begin; s < end; s += chunk) {
      const int64_t len = std::min(chunk, end - s);
      model_->Forward(&logits[size_t((s - begin) * vocab)], Batch{&tokens_[size_t(s)], &pos[size_t(s)], len}, session);
    }
    return logits;
  }

  static double MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
    return m;
  }

  static LanguageModel* model_;
  static std::vector<int32_t> tokens_;
};
LanguageModel* Snapshot::model_ = nullptr;
std::vector<int32_t> Snapshot::tokens_;

TEST_F(Snapshot, RestoreAndContinueEqualsNeverLeaving) {
  const int64_t n = int64_t(tokens_.size()), cut = 37;
  ASSERT_GT(n, cut + 10);
  for (const char* spec : {"swa:16", "hybrid:3:1,window:16", "swa:8,sinks:4", "swa:8,sinks:4,pos:cache", "full",
                           "swa:8,sinks:2,layer1:heads:0+3,layer4:heads:2"}) {
    for (KvType type : {KvType::kF32, KvType::kBF16}) {
      SCOPED_TRACE(std::string(spec) + (type == KvType::kF32 ? " f32" : " bf16"));
      KvCacheOptions options;
      options.max_chunk = 8;
      options.type = type;
      const AttentionPlan plan = model_->ResolvePlan(spec);
      auto original = model_->NewSession(plan, options);
      Feed(*original, 0, 32, 8);
      Feed(*original, 32, cut, 5);  // a step that ends exactly at the cut
      const KvSnapshot snap = TakeSnapshot(original->cache, model_->kv_shape(), cut);
      const std::vector<float> expected = Feed(*original, cut, n, 3);

      // Into a session that has seen other tokens at the same positions.
      auto other = model_->NewSession(plan, options);
      Feed(*other, 0, n, 8);
      RestoreSnapshot(snap, model_->kv_shape(), other->cache);
      EXPECT_LE(MaxDiff(Feed(*other, cut, n, 3), expected), 1e-5);
    }
  }
}

// q8_0 storage needs heads of whole blocks: swan-7m (head_dim 32). A
// snapshot holds the values the blocks stand for, and restoring writes the
// same blocks back.
TEST(SnapshotQ8_0, RestoreAndContinueEqualsNeverLeaving) {
  const std::unique_ptr<LanguageModel> model = LoadModel(std::string(SWAN_SOURCE_ROOT) + "/models/swan-7m");
  const int64_t n = 60, cut = 37, vocab = model->config().vocab_size;
  std::vector<int32_t> tokens(static_cast<size_t>(n)), pos(static_cast<size_t>(n));  // [n]
  for (int64_t i = 0; i < n; ++i) tokens[size_t(i)] = int32_t((i * 7919) % vocab), pos[size_t(i)] = int32_t(i);
  auto feed = [&](Session& session, int64_t begin, int64_t end, int64_t chunk) {
    std::vector<float> logits(size_t((end - begin) * vocab));  // [end - begin, vocab]
    for (int64_t s = begin; s < end; s += chunk)
      model->Forward(&logits[size_t((s - begin) * vocab)],
                     Batch{&tokens[size_t(s)], &pos[size_t(s)], std::min(chunk, end - s)}, session);
    return logits;
  };
  for (const char* spec : {"swa:16,sinks:4", "full"}) {
    SCOPED_TRACE(spec);
    KvCacheOptions options;
    options.max_chunk = 8;
    options.type = KvType::kQ8_0;
    const AttentionPlan plan = model->ResolvePlan(spec);
    auto original = model->NewSession(plan, options);
    feed(*original, 0, cut, 8);
    const KvSnapshot snap = TakeSnapshot(original->cache, model->kv_shape(), cut);
    const std::vector<float> expected = feed(*original, cut, n, 3);
    auto other = model->NewSession(plan, options);
    feed(*other, 0, n, 8);
    RestoreSnapshot(snap, model->kv_shape(), other->cache);
    const std::vector<float> got = feed(*other, cut, n, 3);
    double diff = 0;
    for (size_t i = 0; i < got.size(); ++i) diff = std::max(diff, double(std::fabs(got[i] - expected[i])));
    EXPECT_LE(diff, 1e-5);
  }
}

TEST_F(Snapshot, FullLayersRestoreAnyShorterPrefix) {
  const int64_t n = int64_t(tokens_.size()), cut = 21;
  KvCacheOptions options;
  options.max_chunk = 16;
  // A per-head layer's full heads restore like full layers, its ring like window layers.
  for (const char* spec : {"hybrid:3:1,window:16", "swa:16,layer0:heads:1,layer3:heads:0+2"}) {
    SCOPED_TRACE(spec);
    const AttentionPlan plan = model_->ResolvePlan(spec);
    // The window layers' state at `cut`, the full layers' at n.
    auto first = model_->NewSession(plan, options);
    Feed(*first, 0, cut, 7);
    const KvSnapshot rings = TakeSnapshot(first->cache, model_->kv_shape(), cut, SnapshotLayers::kWindow);
    const std::vector<float> expected = Feed(*first, cut, n, 16);
    const KvSnapshot fulls = TakeSnapshot(first->cache, model_->kv_shape(), n, SnapshotLayers::kFull);

    auto second = model_->NewSession(plan, options);
    RestoreSnapshot(fulls, model_->kv_shape(), second->cache, cut);
    RestoreSnapshot(rings, model_->kv_shape(), second->cache);
    EXPECT_LE(MaxDiff(Feed(*second, cut, n, 16), expected), 1e-5);
  }
}

TEST_F(Snapshot, RingCheckpointIsSmallAndStaleRingsAreRefused) {
  KvCacheOptions options;
  options.max_chunk = 4;
  const AttentionPlan plan = model_->ResolvePlan("swa:16");
  auto session = model_->NewSession(plan, options);
  Feed(*session, 0, 40, 4);
  const KvSnapshot snap = TakeSnapshot(session->cache, model_->kv_shape(), 40);
  for (const LayerKvSnapshot& l : snap.layers) EXPECT_EQ(l.stores[0].pos.size(), 15u);  // W - 1 rows
  Feed(*session, 40, 60, 4);
  EXPECT_THROW(TakeSnapshot(session->cache, model_->kv_shape(), 40), std::runtime_error);
}

}  // namespace
}  // namespace swan
