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
  "rope_theta": 1000000.0, "hidden_act": "silu", "attention_bias": false, "tie_word_embeddings": true,
  "sliding_window": null, "use_sliding_window": false, "max_window_layers": 3,
  "layer_types": ["full_attention", "full_attention", "full_attention"]})";

test::TinyCheckpoint MakeCheckpoint() {
  test::TinyCheckpoint w(13);
  const double s_in = 1.0 / std::sqrt(double(kHidden)), s_inter = 1.0 / std::sqrt(double(kInter));
  const double s_q = 1.0 / std::sqrt(double(kHeads * kHeadDim));
  w.Add("model.embed_tokens.weight", {kVocab, kHidden}, 0.5);
  w.Add("model.norm.weight", {kHidden}, 0.2, 1.0);
  for (int32_t i = 0; i < kLayers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    w.Add(p + "input_layernorm.weight", {kHidden}, 0.2, 1.0);
    w.Add(p + "self_attn.q_proj.weight", {kHeads * kHeadDim, kHidden}, s_in);
    w.Add(p + "self_attn.k_proj.weight", {kKvHeads * kHeadDim, kHidden}, s_in);
    w.Add(p + "self_attn.v_proj.weight", {kKvHeads * kHeadDim, kHidden}, s_in);
    w.Add(p + "self_attn.o_proj.weight", {kHidden, kHeads * kHeadDim}, s_q);
    w.Add(p + "self_attn.q_norm.weight", {kHeadDim}, 0.3, 1.0);
    w.Add(p + "self_attn.k_norm.weight", {kHeadDim}, 0.3, 1.0);
    w.Add(p + "post_attention_layernorm.weight", {kHidden}, 0.2, 1.0);
    w.Add(p + "mlp.gate_proj.weight", {kInter, kHidden}, 2 * s_in);
    w.Add(p + "mlp.up_proj.weight", {kInter, kHidden}, s_in);
    w.Add(p + "mlp.down_proj.weight", {kHidden, kInter}, s_inter);
  }
  return w;
}

// Qwen3ForCausalLM.forward in float64: logits [n, vocab] for tokens at 0..n-1
// (`qk_norm` false: the same network without its q/k norms, to show they count).
Vec ReferenceLogits(const test::TinyCheckpoint& w, const std::vector<int32_t>& ids, bool qk_norm = true) {
  const int64_t n = int64_t(ids.size());
  std::vector<int32_t> pos(ids.size());
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
  Vec x = test::RefEmbed(w["model.embed_tokens.weight"], ids, kHidden);
  for (int32_t i = 0; i < kLayers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    const Vec h = test::RefRmsNorm(x, n, kHidden, w[p + "input_layernorm.weight"], kEps);
    Vec q = test::RefLinear(h, n, w[p + "self_attn.q_proj.weight"], kHeads * kHeadDim, kHidden);
    Vec k = test::RefLinear(h, n, w[p + "self_attn.k_proj.weight"], kKvHeads * kHeadDim, kHidden);
    const Vec v = test::RefLinear(h, n, w[p + "self_attn.v_proj.weight"], kKvHeads * kHeadDim, kHidden);
    if (qk_norm) {
      q = test::RefRmsNorm(q, n * kHeads, kHeadDim, w[p + "self_attn.q_norm.weight"], kEps);
      k = test::RefRmsNorm(k, n * kKvHeads, kHeadDim, w[p + "self_attn.k_norm.weight"], kEps);
    }
    test::RefRope(q, n, kHeads, kHeadDim, pos, kTheta);
    test::RefRope(k, n, kKvHeads, kHeadDim, pos, kTheta);
    const Vec a = test::RefAttention(q, k, v, n, kHeads, kKvHeads, kHeadDim, 0, 1.0 / std::sqrt(double(kHeadDim)));
    test::AddInto(x, test::RefLinear(a, n, w[p + "self_attn.o_proj.weight"], kHidden, kHeads * kHeadDim));
    const Vec h2 = test::RefRmsNorm(x, n, kHidden, w[p + "post_attention_layernorm.weight"], kEps);
    Vec g = test::RefLinear(h2, n, w[p + "mlp.gate_proj.weight"], kInter, kHidden);
    const Vec u = test::RefLinear(h2, n, w[p + "mlp.up_proj.weight"], kInter, kHidden);
    for (size_t j = 0; j < g.size(); ++j) g[j] = g[j] / (1.0 + std::exp(-g[j])) * u[j];
    test::AddInto(x, test::RefLinear(g, n, w[p + "mlp.down_proj.weight"], kHidden, kInter));
  }
  const Vec xn = test::RefRmsNorm(x, n, kHidden, w["model.norm.weight"], kEps);
  return test::RefLinear(xn, n, w["model.embed_tokens.weight"], kVocab, kHidden);  // tied head
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
