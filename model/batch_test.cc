// Batched forward steps (LanguageModel::ForwardBatch): sequences at
// different depths under different plans, stepped together, give the
// logits and leave the caches of stepping each alone with Forward, on tiny
// random Llama (with routers), Qwen2 (q/k/v biases) and Gemma 3
// checkpoints, with float32 and bf16 weights.
#include <gtest/gtest.h>

#include <optional>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/blocks.h"
#include "model/config.h"
#include "model/gemma3.h"
#include "model/llama.h"
#include "model/model.h"
#include "model/tiny_reference.h"
#include "model/weight_source.h"

namespace swan {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kHidden = 32, kInter = 48, kHeads = 4, kKvHeads = 2, kHeadDim = 8, kVocab = 61;
constexpr int32_t kLayers = 4;
constexpr int32_t kMaxChunk = 4;  // small, so that window rings wrap within a few steps

std::string LlamaConfig(const char* architecture) {
  return std::string(R"({"architectures": [")") + architecture + R"("], "model_type": "llama",
    "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 4, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 61, "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": false})";
}

const char kGemma3Config[] = R"({"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
  "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 4, "num_attention_heads": 4,
  "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 61, "max_position_embeddings": 4096,
  "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "sliding_window": 4,
  "sliding_window_pattern": 2, "query_pre_attn_scalar": 8, "hidden_activation": "gelu_pytorch_tanh",
  "tie_word_embeddings": true})";

// Llama layers; with q/k/v biases for Qwen2, and a router per layer.
test::TinyCheckpoint LlamaCheckpoint(bool qkv_bias) {
  test::TinyCheckpoint w(5);
  test::AddTinyLlamaWeights(w, {kVocab, kHidden, kInter, kHeads, kKvHeads, kHeadDim, kLayers}, qkv_bias,
                            [&](const std::string& p, int32_t) {
                              w.Add(p + "self_attn.router.weight", {1, kHidden}, 0.5);
                              w.Add(p + "self_attn.router.bias", {1}, 0.3);
                            });
  return w;
}

test::TinyCheckpoint Gemma3Checkpoint() {
  test::TinyCheckpoint w(9);
  test::AddTinyGemma3Weights(w, {kVocab, kHidden, kInter, kHeads, kKvHeads, kHeadDim, kLayers});
  return w;
}

enum class Family { kLlama, kQwen2, kGemma3 };

// Writes the family's tiny checkpoint into `dir` and loads it, the linear
// layers held as `weights` (as stored when unset).
std::unique_ptr<LanguageModel> TinyModel(Family family, const fs::path& dir,
                                         std::optional<WeightType> weights = std::nullopt) {
  if (family == Family::kGemma3)
    Gemma3Checkpoint().Write(dir, kGemma3Config);
  else
    LlamaCheckpoint(family == Family::kQwen2)
        .Write(dir, LlamaConfig(family == Family::kQwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"));
  LoadOptions options;
  options.weights = weights;
  return LoadModel(dir.string(), options);
}

// The token fed to sequence `seq` at position `pos`.
int32_t TokenAt(int64_t seq, int64_t pos) { return int32_t((seq * 31 + pos * 17 + 3) % kVocab); }

// One sequence, and its twin that runs alone.
struct Sequence {
  std::unique_ptr<Session> batched, alone;
  std::vector<std::vector<uint8_t>> routes_batched, routes_alone;  // [n_layers][tokens]
  int64_t depth = 0;                                               // tokens processed
};

std::unique_ptr<Session> NewSession(const LanguageModel& model, const std::string& spec,
                                    std::vector<std::vector<uint8_t>>* routes, bool forced_routes) {
  KvCacheOptions options;
  options.max_chunk = kMaxChunk;
  auto session = model.NewSession(model.ResolvePlan(spec), options);
  routes->resize(size_t(kLayers));
  for (auto& r : *routes) session->routing.record.push_back(&r);
  if (forced_routes) {
    session->routing.forced_full_ratio = 0.4;
    session->routing.seed = 3;
  }
  return session;
}

// Feeds tokens [depth, depth + n) of sequence `seq` to `session` with Forward.
void FeedAlone(const LanguageModel& model, Session& session, int64_t seq, int64_t depth, int64_t n, bool all_logits,
               float* logits) {
  std::vector<int32_t> tokens, pos;  // [n]
  for (int64_t p = depth; p < depth + n; ++p) {
    tokens.push_back(TokenAt(seq, p));
    pos.push_back(int32_t(p));
  }
  model.Forward(logits, Batch{tokens.data(), pos.data(), n, all_logits}, session);
}

// max |a - b| / max(1, max |b|) over each vocab row.
double MaxRelDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t row = 0; row + kVocab <= std::min(a.size(), b.size()); row += kVocab) {
    double scale = 1, diff = 0;
    for (size_t i = row; i < row + kVocab; ++i) {
      scale = std::max(scale, double(std::fabs(b[i])));
      diff = std::max(diff, double(std::fabs(a[i] - b[i])));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

// Same positions in the same slots, and the same keys and values, store by
// store (a per-head layer has two).
void ExpectSameCache(const KvCache& a, const KvCache& b, double tol) {
  ASSERT_EQ(a.n_layers(), b.n_layers());
  for (int32_t l = 0; l < a.n_layers(); ++l) {
    ASSERT_EQ(a.layer(l).n_stores(), b.layer(l).n_stores());
    double diff = 0;
    for (int32_t s = 0; s < a.layer(l).n_stores(); ++s) {
      const KvView va = a.layer(l).store(s).View(), vb = b.layer(l).store(s).View();
      ASSERT_EQ(va.n_rows, vb.n_rows) << "layer " << l;
      ASSERT_EQ(va.type, KvType::kF32);
      const int64_t row = int64_t(a.layer(l).store(s).heads().size()) * kHeadDim;
      for (int64_t r = 0; r < va.n_rows; ++r) {
        ASSERT_EQ(va.pos[r], vb.pos[r]) << "layer " << l << " slot " << r;
        if (va.pos[r] < 0) continue;
        for (int64_t c = 0; c < row; ++c) {
          diff = std::max(diff, double(std::fabs(static_cast<const float*>(va.k)[r * row + c] -
                                                 static_cast<const float*>(vb.k)[r * row + c])));
          diff = std::max(diff, double(std::fabs(static_cast<const float*>(va.v)[r * row + c] -
                                                 static_cast<const float*>(vb.v)[r * row + c])));
        }
      }
    }
    EXPECT_LE(diff, tol) << "layer " << l;
  }
}

struct BatchCase {
  std::vector<std::string> specs;  // sequence i runs specs[i % size]
  std::vector<int64_t> depths;     // sequence i is prefilled to depths[i]
  int32_t steps = 12;
  // Tokens sequence i feeds per step, and whether it wants all their logits.
  std::function<int64_t(int64_t seq)> tokens = [](int64_t) { return int64_t(1); };
  std::function<bool(int64_t seq)> all_logits = [](int64_t) { return false; };
  bool forced_routes = true;  // routed layers: a seeded draw rather than the routers
  double tol = 1e-5;          // relative, on logits; absolute on cached keys and values
};

// Steps the sequences together with ForwardBatch and their twins one by one
// with Forward, and compares logits, recorded routes and caches.
void ExpectBatchMatchesAlone(const LanguageModel& model, const BatchCase& c) {
  const int64_t n_seq = int64_t(c.depths.size());
  std::vector<Sequence> seqs(c.depths.size());
  for (int64_t i = 0; i < n_seq; ++i) {
    Sequence& s = seqs[size_t(i)];
    const std::string& spec = c.specs[size_t(i) % c.specs.size()];
    s.batched = NewSession(model, spec, &s.routes_batched, c.forced_routes);
    s.alone = NewSession(model, spec, &s.routes_alone, c.forced_routes);
    s.depth = c.depths[size_t(i)];
    std::vector<float> unused(static_cast<size_t>(kVocab));  // [1, vocab]
    FeedAlone(model, *s.batched, i, 0, s.depth, false, unused.data());
    FeedAlone(model, *s.alone, i, 0, s.depth, false, unused.data());
  }
  for (int32_t step = 0; step < c.steps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    std::vector<std::vector<int32_t>> tokens(seqs.size()), pos(seqs.size());  // [n_seq][n_i]
    std::vector<SequenceStep> steps(seqs.size());                             // [n_seq]
    std::vector<float> expected;                                              // [rows, vocab]
    for (int64_t i = 0; i < n_seq; ++i) {
      Sequence& s = seqs[size_t(i)];
      const int64_t n = c.tokens(i);
      const bool all = c.all_logits(i);
      for (int64_t p = s.depth; p < s.depth + n; ++p) {
        tokens[size_t(i)].push_back(TokenAt(i, p));
        pos[size_t(i)].push_back(int32_t(p));
      }
      steps[size_t(i)] = SequenceStep{Batch{tokens[size_t(i)].data(), pos[size_t(i)].data(), n, all}, s.batched.get()};
      std::vector<float> alone(size_t((all ? n : 1) * kVocab));  // [n or 1, vocab]
      FeedAlone(model, *s.alone, i, s.depth, n, all, alone.data());
      expected.insert(expected.end(), alone.begin(), alone.end());
      s.depth += n;
    }
    std::vector<float> logits(expected.size());  // [rows, vocab]
    model.ForwardBatch(logits.data(), steps);
    EXPECT_LE(MaxRelDiff(logits, expected), c.tol);
  }
  for (int64_t i = 0; i < n_seq; ++i) {
    SCOPED_TRACE("sequence " + std::to_string(i));
    const Sequence& s = seqs[size_t(i)];
    EXPECT_EQ(s.routes_batched, s.routes_alone);
    ExpectSameCache(s.batched->cache, s.alone->cache, c.tol);
  }
}

class ForwardBatchTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::TempDir("forward_batch"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// Plans of every kind, across sequences of one batch: full, a window whose
// ring wraps, sinks, cache positions, hybrids, routed and per-head layers.
const std::vector<std::string> kLlamaSpecs = {"full",
                                              "swa:4",
                                              "hybrid:1:1,window:3,sinks:1",
                                              "swa:5,sinks:2,pos:cache",
                                              "routed:3,sinks:1",
                                              "full,layer1:swa:2,layer3:routed:4",
                                              "swa:3,sinks:1,layer0:heads:1,layer2:heads:0"};
// Each sequence's depth before the batched steps, for batches of 1, 3 and 5.
const std::vector<std::vector<int64_t>> kDepths = {{9}, {3, 17, 1}, {12, 5, 30, 2, 8}};
const std::vector<std::string> kGemma3Specs = {
    "model", "swa:3", "full", "hybrid:1:1,window:3,sinks:2", "swa:4,sinks:1,pos:cache", "model,layer1:heads:0:2"};

TEST_F(ForwardBatchTest, LlamaDecodeMatchesForwardPerSequence) {
  const auto model = TinyModel(Family::kLlama, dir_);
  // 1, 3 and 5 sequences.
  for (const std::vector<int64_t>& depths : kDepths) {
    SCOPED_TRACE(std::to_string(depths.size()) + " sequences");
    BatchCase c;
    c.specs = kLlamaSpecs;
    c.depths = depths;
    ExpectBatchMatchesAlone(*model, c);
  }
}

TEST_F(ForwardBatchTest, LlamaLearnedRoutesMatch) {
  const auto model = TinyModel(Family::kLlama, dir_);
  BatchCase c;
  c.specs = {"routed:3", "swa:4,layer0:routed:2,layer2:routed:5,sinks:1", "full"};
  c.depths = {7, 2, 11, 4};
  c.forced_routes = false;
  ExpectBatchMatchesAlone(*model, c);
}

TEST_F(ForwardBatchTest, StepsOfSeveralTokensAndAllLogits) {
  // Steps of 1 to 3 tokens (chunked prefill, speculative decoding), every
  // logit row for some: 12 rows go through the GEMM rather than the GEMV.
  const auto model = TinyModel(Family::kLlama, dir_);
  BatchCase c;
  c.specs = kLlamaSpecs;
  c.depths = {12, 5, 30, 2, 8, 1};
  c.steps = 6;
  c.tokens = [](int64_t seq) { return 1 + seq % 3; };
  c.all_logits = [](int64_t seq) { return seq % 2 == 0; };
  ExpectBatchMatchesAlone(*model, c);
}

TEST_F(ForwardBatchTest, Qwen2DecodeMatchesForwardPerSequence) {
  const auto model = TinyModel(Family::kQwen2, dir_);
  BatchCase c;
  c.specs = kLlamaSpecs;
  c.depths = {12, 5, 30, 2, 8};
  ExpectBatchMatchesAlone(*model, c);
}

TEST_F(ForwardBatchTest, Gemma3DecodeMatchesForwardPerSequence) {
  const auto model = TinyModel(Family::kGemma3, dir_);
  for (const std::vector<int64_t>& depths : kDepths) {
    SCOPED_TRACE(std::to_string(depths.size()) + " sequences");
    BatchCase c;
    c.specs = kGemma3Specs;
    c.depths = depths;
    ExpectBatchMatchesAlone(*model, c);
  }
}

// bf16, and the block formats (whose GEMV quantizes each row of x on its
// own, so a row's result does not depend on its batch).
TEST_F(ForwardBatchTest, HalfAndBlockWeightsMatchForwardPerSequence) {
  for (WeightType type : {WeightType::kBF16, WeightType::kQ8_0, WeightType::kQ4_0})
    for (Family family : {Family::kLlama, Family::kGemma3}) {
      SCOPED_TRACE(std::string(family == Family::kLlama ? "llama " : "gemma3 ") + WeightTypeName(type));
      const auto model = TinyModel(family, dir_, type);
      BatchCase c;
      c.specs = family == Family::kLlama ? kLlamaSpecs : kGemma3Specs;
      c.depths = {12, 5, 30, 2, 8};
      ExpectBatchMatchesAlone(*model, c);
    }
}

TEST_F(ForwardBatchTest, StepLongerThanTheChunkAndTheDefaultLoop) {
  const auto model = TinyModel(Family::kLlama, dir_);
  // 9 tokens > max_chunk 4: the batch falls back to one Forward per step.
  BatchCase c;
  c.specs = {"swa:4", "full"};
  c.depths = {3, 6};
  c.steps = 3;
  c.tokens = [](int64_t seq) { return seq == 0 ? int64_t(9) : int64_t(1); };
  ExpectBatchMatchesAlone(*model, c);

  // The base class's loop gives what the batched pass gives.
  KvCacheOptions options;
  options.max_chunk = kMaxChunk;
  std::vector<std::unique_ptr<Session>> a, b;
  for (const char* spec : {"swa:3", "full", "hybrid:1:1,window:2"}) {
    a.push_back(model->NewSession(model->ResolvePlan(spec), options));
    b.push_back(model->NewSession(model->ResolvePlan(spec), options));
  }
  const std::vector<int32_t> tokens = {4, 9, 17};
  std::vector<float> batched(size_t(3 * kVocab)), looped(size_t(3 * kVocab));  // [3, vocab]
  for (int32_t p = 0; p < 6; ++p) {
    std::vector<SequenceStep> sa, sb;
    for (size_t i = 0; i < 3; ++i) {
      sa.push_back(SequenceStep{Batch{&tokens[i], &p, 1, false}, a[i].get()});
      sb.push_back(SequenceStep{Batch{&tokens[i], &p, 1, false}, b[i].get()});
    }
    model->ForwardBatch(batched.data(), sa);
    model->LanguageModel::ForwardBatch(looped.data(), sb);
    EXPECT_LE(MaxRelDiff(batched, looped), 1e-5) << "position " << p;
  }
}

TEST_F(ForwardBatchTest, RejectsEmptyStepsAndRepeatedSessions) {
  const auto model = TinyModel(Family::kLlama, dir_);
  auto session = model->NewSession(model->ResolvePlan("full"));
  const int32_t token = 1, pos = 0;
  std::vector<float> logits(size_t(2 * kVocab));  // [2, vocab]
  const SequenceStep step{Batch{&token, &pos, 1, false}, session.get()};
  EXPECT_THROW(model->ForwardBatch(logits.data(), {step, step}), std::invalid_argument);
  const SequenceStep empty{Batch{&token, &pos, 0, false}, session.get()};
  EXPECT_THROW(model->ForwardBatch(logits.data(), {empty}), std::invalid_argument);
  EXPECT_THROW(model->ForwardBatch(logits.data(), {SequenceStep{Batch{&token, &pos, 1, false}, nullptr}}),
               std::invalid_argument);
  model->ForwardBatch(logits.data(), {});  // nothing to do
}

}  // namespace
}  // namespace swan
