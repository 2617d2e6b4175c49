// Chunked prefill and decode through the KV caches give the logits of one
// whole prefill, for every kind of plan, across ring wrap-arounds.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <random>
#include <nlohmann/json.hpp>

#include "model/model.h"
#include "model/test_files.h"

namespace swan {
namespace {

class Chunked : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = LoadModel(test::Stories260K()).release();
    // 65 tokens of real text: the first golden prompt and its continuation.
    const nlohmann::json greedy = nlohmann::json::parse(std::ifstream(test::Stories260K() + "/golden/greedy.json"));
    tokens_ = greedy["results"][0]["prompt_ids"].get<std::vector<int32_t>>();
    for (int32_t id : greedy["results"][0]["new_ids"].get<std::vector<int32_t>>()) tokens_.push_back(id);
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }

  // Logits [n, vocab] of the tokens fed in steps of `chunk` tokens.
  static std::vector<float> Run(const std::string& spec, int32_t chunk, const KvCacheOptions& base = {}) {
    const int64_t n = int64_t(tokens_.size()), vocab = model_->config().vocab_size;
    KvCacheOptions options = base;
    options.max_chunk = chunk;
    auto session = model_->NewSession(model_->ResolvePlan(spec), options);
    std::vector<int32_t> pos(tokens_.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
    std::vector<float> logits(size_t(n * vocab));  // [n, vocab]
    for (int64_t start = 0; start < n; start += chunk) {
      const int64_t len = std::min<int64_t>(chunk, n - start);
      model_->Forward(&logits[size_t(start * vocab)], Batch{&tokens_[size_t(start)], &pos[size_t(start)], len},
                      *session);
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
LanguageModel* Chunked::model_ = nullptr;
std::vector<int32_t> Chunked::tokens_;

TEST_F(Chunked, ChunksAndDecodeEqualWholePrefillForEveryPlan) {
  const char* specs[] = {"full",
                         "swa:8",
                         "swa:8,sinks:2",
                         "swa:1",
                         "swa:3,sinks:1",
                         "hybrid:1:1,window:8",
                         "hybrid:3:1,window:5,sinks:2",
                         "hybrid:1:1,window:8,nope:full",
                         "full,layer2:swa:4",
                         "swa:8,sinks:2,pos:cache",
                         "hybrid:1:1,window:6,sinks:1,pos:cache",
                         "full,window:4,sinks:1,layer1:heads:0+3,layer3:heads:2",
                         "swa:5,layer0:heads:1+2+3:3"};
  const int64_t n = int64_t(tokens_.size());
  ASSERT_GE(n, 2 * 8 + 8 + 1);  // past 2W + chunk for W = 8
  double worst = 0;
  for (const char* spec : specs) {
    // Reference: one whole prefill in a cache that keeps every row.
    KvCacheOptions keep_all;
    keep_all.ring_for_window_layers = false;
    const std::vector<float> reference = Run(spec, int32_t(n), keep_all);
    for (int32_t chunk : {int32_t(n), 1, 2, 3, 5, 8, 13}) {
      const double d = MaxDiff(Run(spec, chunk), reference);
      worst = std::max(worst, d);
      EXPECT_LT(d, 1e-4) << spec << " chunk " << chunk;
    }
  }
  std::printf("chunked/decode vs whole prefill: max |diff| = %.3g\n", worst);
}

TEST_F(Chunked, WindowChangesTheLogits) {
  // A window that hides keys must change late logits, and leave the first
  // W positions equal to full attention.
  const int64_t vocab = model_->config().vocab_size;
  const std::vector<float> full = Run("full", 64), window = Run("swa:8", 64);
  double early = 0, late = 0;
  for (int64_t i = 0; i < 8 * vocab; ++i)
    early = std::max(early, double(std::fabs(full[size_t(i)] - window[size_t(i)])));
  for (size_t i = size_t(20 * vocab); i < full.size(); ++i)
    late = std::max(late, double(std::fabs(full[i] - window[i])));
  EXPECT_LT(early, 1e-4);
  EXPECT_GT(late, 1e-2);
}

TEST_F(Chunked, Bf16CacheStaysClose) {
  KvCacheOptions bf16;
  bf16.type = KvType::kBF16;
  const double d = MaxDiff(Run("swa:8,sinks:2", 5, bf16), Run("swa:8,sinks:2", 5));
  std::printf("bf16 KV cache vs f32: max |diff| = %.3g\n", d);
  EXPECT_LT(d, 0.5);  // bf16 keeps 8 bits of mantissa; logits reach 20
}

// q8_0 KV needs heads of whole 32-value blocks: swan-7m (head_dim 32, a 3:1
// hybrid with windows of 256 + 4 sinks), 300 tokens so that the rings wrap.
// Its bf16 weights are held as f32: bf16 products round a prefill's
// activations, and decode's GEMV does not.
TEST(ChunkedQ8_0, ChunksAndDecodeEqualWholePrefillAndStayNearF32) {
  const std::unique_ptr<LanguageModel> model =
      LoadModel(std::string(SWAN_SOURCE_ROOT) + "/models/swan-7m", LoadOptions{WeightType::kF32});
  const int64_t n = 300, vocab = model->config().vocab_size;
  std::vector<int32_t> tokens(static_cast<size_t>(n)), pos(static_cast<size_t>(n));  // [n]
  std::mt19937 rng(3);
  for (int64_t i = 0; i < n; ++i) tokens[size_t(i)] = int32_t(rng() % uint32_t(vocab - 1)), pos[size_t(i)] = int32_t(i);
  auto run = [&](KvType type, int64_t chunk) {
    KvCacheOptions options;
    options.type = type;
    options.max_chunk = int32_t(chunk);
    auto session = model->NewSession(model->ResolvePlan(""), options);
    std::vector<float> logits(size_t(n * vocab));  // [n, vocab]
    for (int64_t start = 0; start < n; start += chunk) {
      const int64_t len = std::min(chunk, n - start);
      model->Forward(&logits[size_t(start * vocab)], Batch{&tokens[size_t(start)], &pos[size_t(start)], len}, *session);
    }
    return logits;
  };
  const std::vector<float> whole = run(KvType::kQ8_0, n), f32 = run(KvType::kF32, n);
  for (int64_t chunk : {1, 7, 64}) {
    double diff = 0;
    const std::vector<float> chunked = run(KvType::kQ8_0, chunk);
    for (size_t i = 0; i < whole.size(); ++i) diff = std::max(diff, double(std::fabs(chunked[i] - whole[i])));
    // Not 1e-5 as with f32: a K or V value that the chunk's products sum in
    // another order can round to the neighbouring q8_0 step.
    EXPECT_LT(diff, 1e-2) << "chunk " << chunk;
  }
  double err = 0, scale = 0;  // RMS of the logit error against f32, and of the logits
  for (size_t i = 0; i < whole.size(); ++i) {
    err += (whole[i] - f32[i]) * (whole[i] - f32[i]);
    scale += f32[i] * f32[i];
  }
  std::printf("q8_0 KV cache vs f32 on swan-7m: relative RMS logit error %.3g\n", std::sqrt(err / scale));
  EXPECT_LT(std::sqrt(err / scale), 2e-2);
  EXPECT_GT(std::sqrt(err / scale), 0.0);  // the cache really stored blocks
}

TEST_F(Chunked, WindowCacheBytesStayFlat) {
  KvCacheOptions options;
  options.max_chunk = 4;
  options.page_rows = 4;
  auto session = model_->NewSession(model_->ResolvePlan("hybrid:1:1,window:8"), options);
  const int64_t vocab = model_->config().vocab_size;
  std::vector<float> logits(static_cast<size_t>(vocab));
  size_t window_bytes = 0, full_bytes = 0;
  for (int32_t p = 0; p < int32_t(tokens_.size()); ++p) {
    model_->Forward(logits.data(), Batch{&tokens_[size_t(p)], &p, 1, false}, *session);
    if (p == 15) window_bytes = session->cache.layer(0).Bytes(), full_bytes = session->cache.layer(1).Bytes();
  }
  EXPECT_EQ(session->cache.layer(0).Bytes(), window_bytes);    // ring of 8 - 1 + 4 slots
  EXPECT_GT(session->cache.layer(1).Bytes(), 3 * full_bytes);  // 65 rows vs 16
}

TEST_F(Chunked, CheckpointRestoresAPromptPrefix) {
  // Prefill a shared prefix, checkpoint, continue with one suffix, restore,
  // continue with another: the same logits as a fresh run of prefix + suffix.
  const int64_t vocab = model_->config().vocab_size;
  KvCacheOptions options;
  options.max_chunk = 4;
  const AttentionPlan plan = model_->ResolvePlan("hybrid:1:1,window:6,sinks:1");
  auto session = model_->NewSession(plan, options);
  std::vector<int32_t> pos(tokens_.size());
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
  const int64_t prefix = 20, suffix = 15;
  std::vector<float> logits(static_cast<size_t>(suffix * vocab));  // [suffix, vocab]
  model_->Forward(logits.data(), Batch{tokens_.data(), pos.data(), prefix, false}, *session);
  const KvCache checkpoint = session->cache.Copy();
  // Another continuation: the last tokens of the text at the same positions.
  model_->Forward(logits.data(), Batch{&tokens_[40], &pos[prefix], suffix}, *session);
  session->cache = checkpoint.Copy();
  model_->Forward(logits.data(), Batch{&tokens_[prefix], &pos[prefix], suffix}, *session);

  auto fresh = model_->NewSession(plan, options);
  std::vector<float> all(static_cast<size_t>((prefix + suffix) * vocab));  // [prefix + suffix, vocab]
  model_->Forward(all.data(), Batch{tokens_.data(), pos.data(), prefix + suffix}, *fresh);
  const std::vector<float> expected(all.begin() + prefix * vocab, all.end());
  EXPECT_LT(MaxDiff(logits, expected), 1e-4);
}

TEST_F(Chunked, FullLayersStopAtMaxContext) {
  KvCacheOptions options;
  options.max_context = 512;
  auto session = model_->NewSession(model_->ResolvePlan("full"), options);
  std::vector<float> logits(512);
  const int32_t token = 1, past = 512;
  EXPECT_THROW(model_->Forward(logits.data(), Batch{&token, &past, 1, false}, *session), std::out_of_range);
  // Window layers have no such limit.
  auto window = model_->NewSession(model_->ResolvePlan("swa:16"), options);
  const int32_t far = 100000;
  EXPECT_NO_THROW(model_->Forward(logits.data(), Batch{&token, &far, 1, false}, *window));
}

}  // namespace
}  // namespace swan
