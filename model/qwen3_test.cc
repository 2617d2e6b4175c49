// Qwen3 on a tiny random checkpoint against a float64 forward written from
// HF's modeling_qwen3 (Llama with an RMSNorm over each head of q and k
// before RoPE, a head_dim of its own, no biases), and through GGUF.
#include <gtest/gtest.h>

#include <cstdio>

#include "model/gguf_export.h"
#include "model/model.h"
#include "model/tiny_reference.h"

namespace swan {
namespace {

namespace fs = std::filesystem;
using test::Vec;

// heads x head_dim (32) is not the hidden size (16), as in Qwen3's models
constexpr int64_t kHidden = 16, kInter = 32, kHeads = 4, kKvHeads = 2, kHeadDim = 8, kVocab = 50;
constexpr int32_t kLayers = 3;
constexpr double kEps = 1e-6, kTheta = 1000000.0;

const char* kConfig = R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 16,
  "intermediate_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
  "head_dim": 8, "vocab_size": 50, "max_position_embeddings": 128, "rms_norm_eps": 1e-6,
  "rope_theta": 1000000.0, "hidden_act": "silu", "attention_bias": false, "tie_word_embeddings": false,
  "sliding_window": null, "use_sliding_window": false, "max_window_layers": 3,
  "layer_types": ["full_attention", "full_attention", "full_attention"]})";

const test::TinyLlamaShape kShape{kVocab, kHidden, kInter, kHeads, kKvHeads, kHeadDim, kLayers};

// A Llama's tensors and each layer's q and k norms.
test::TinyCheckpoint MakeCheckpoint() {
  test::TinyCheckpoint w(13);
  test::AddTinyLlamaWeights(w, kShape, /*qkv_bias=*/false, [&](const std::string& p, int32_t) {
    w.Add(p + "self_attn.q_norm.weight", {kHeadDim}, 0.3, 1.0);
    w.Add(p + "self_attn.k_norm.weight", {kHeadDim}, 0.3, 1.0);
  });
  return w;
}

// Qwen3ForCausalLM.forward in float64: logits [n, vocab] for tokens at 0..n-1
// (`qk_norm` false: the same network without its q/k norms, to show they count).
Vec ReferenceLogits(const test::TinyCheckpoint& w, const std::vector<int32_t>& ids, bool qk_norm = true) {
  test::RefLlamaOptions o;
  o.qk_norm = qk_norm;
  o.eps = kEps, o.theta = kTheta;
  return test::RefLlamaLogits(w, ids, kShape, o);
}

std::vector<int32_t> Tokens(int64_t n) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(int32_t((i * 19 + 2) % kVocab));
  return ids;
}

std::vector<float> EngineLogits(const LanguageModel& model, const std::vector<int32_t>& ids) {
  const int64_t n = int64_t(ids.size());
  std::vector<int32_t> pos(ids.size());
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
  auto session = model.NewSession(model.ResolvePlan(""));
  std::vector<float> logits(size_t(n * kVocab));  // [n, vocab]
  model.Forward(logits.data(), Batch{ids.data(), pos.data(), n}, *session);
  return logits;
}

TEST(Qwen3, MatchesFloat64Reference) {
  const test::TinyCheckpoint w = MakeCheckpoint();
  const std::vector<int32_t> ids = Tokens(14);
  const fs::path dir = test::TempDir("qwen3");
  w.Write(dir, kConfig);
  const auto model = LoadModel(dir.string());
  const Vec want = ReferenceLogits(w, ids);
  const double d = test::MaxAbsDiff(EngineLogits(*model, ids), want);
  std::printf("qwen3 max |logit - float64 reference| = %.3g\n", d);
  EXPECT_LT(d, 1e-4);
  // the q/k norms count: without them the reference moves by far more
  EXPECT_GT(test::MaxAbsDiff(std::vector<float>(want.begin(), want.end()), ReferenceLogits(w, ids, false)), 1e-2);
  // and through GGUF (llama.cpp's qwen3: attn_q_norm, attn_k_norm, no q/k row permutation)
  const std::string path = (dir / "qwen3.gguf").string();
  test::WriteFile(path, HfToGgufBytes(dir.string(), WeightType::kF32));
  const auto gguf = LoadModel(path);
  EXPECT_EQ(gguf->config().architecture, "Qwen3ForCausalLM");
  EXPECT_LT(test::MaxAbsDiff(EngineLogits(*gguf, ids), want), 1e-4);
}

}  // namespace
}  // namespace swan
