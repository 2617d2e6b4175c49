// Qwen2 on a tiny random checkpoint against a float64 forward written from
// HF's modeling_qwen2 (Llama plus q/k/v biases, windows on the layers with
// index >= max_window_layers when use_sliding_window).
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>

#include "model/model.h"
#include "model/tiny_reference.h"

namespace swan {
namespace {

namespace fs = std::filesystem;
using test::Vec;

constexpr int64_t kHidden = 16, kInter = 32, kHeads = 4, kKvHeads = 2, kHeadDim = 4, kVocab = 50;
constexpr int32_t kLayers = 3, kWindow = 5, kMaxWindowLayers = 1;
constexpr double kEps = 1e-6, kTheta = 10000.0;

std::string Config(bool use_sliding_window) {
  return R"({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 16,
    "intermediate_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4,
    "num_key_value_heads": 2, "vocab_size": 50, "max_position_embeddings": 128,
    "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu",
    "tie_word_embeddings": false, "sliding_window": 5, "max_window_layers": 1,
    "use_sliding_window": )" +
         std::string(use_sliding_window ? "true" : "false") + "}";
}

test::TinyCheckpoint MakeCheckpoint() {
  test::TinyCheckpoint w(7);
  test::AddTinyLlamaWeights(w, {kVocab, kHidden, kInter, kHeads, kKvHeads, kHeadDim, kLayers}, /*qkv_bias=*/true);
  return w;
}

// Qwen2ForCausalLM.forward in float64: logits [n, vocab] for tokens at 0..n-1.
Vec ReferenceLogits(const test::TinyCheckpoint& w, const std::vector<int32_t>& ids, bool use_sliding_window) {
  test::RefLlamaOptions o;
  o.qkv_bias = true;
  o.eps = kEps, o.theta = kTheta;
  for (int32_t i = 0; i < kLayers; ++i) o.windows.push_back(use_sliding_window && i >= kMaxWindowLayers ? kWindow : 0);
  return test::RefLlamaLogits(w, ids, {kVocab, kHidden, kInter, kHeads, kKvHeads, kHeadDim, kLayers}, o);
}

std::vector<int32_t> Tokens(int64_t n) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(int32_t((i * 17 + 3) % kVocab));
  return ids;
}

std::vector<float> EngineLogits(const LanguageModel& model, const std::vector<int32_t>& ids,
                                const std::string& spec = "") {
  const int64_t n = int64_t(ids.size());
  std::vector<int32_t> pos(ids.size());
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
  auto session = model.NewSession(model.ResolvePlan(spec));
  std::vector<float> logits(size_t(n * kVocab));  // [n, vocab]
  model.Forward(logits.data(), Batch{ids.data(), pos.data(), n}, *session);
  return logits;
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Qwen2, MatchesFloat64Reference) {
  const test::TinyCheckpoint w = MakeCheckpoint();
  const std::vector<int32_t> ids = Tokens(14);
  for (bool sliding : {false, true}) {
    const fs::path dir = test::TempDir("qwen2");
    w.Write(dir, Config(sliding));
    const auto model = LoadModel(dir.string());
    const double d = test::MaxAbsDiff(EngineLogits(*model, ids), ReferenceLogits(w, ids, sliding));
    std::printf("qwen2 (use_sliding_window %d) max |logit - float64 reference| = %.3g\n", sliding, d);
    EXPECT_LT(d, 1e-4);
    fs::remove_all(dir);
  }
  // The window matters: the two references differ.
  const Vec full = ReferenceLogits(w, ids, false), windowed = ReferenceLogits(w, ids, true);
  double diff = 0;
  for (size_t i = 0; i < full.size(); ++i) diff = std::max(diff, std::fabs(full[i] - windowed[i]));
  EXPECT_GT(diff, 1e-2);
  // The same weights under a Llama config would run without their biases:
  // refused, naming them.
  const fs::path dir = test::TempDir("qwen2_llama");
  std::string llama = Config(false);
  llama.replace(llama.find("Qwen2ForCausalLM"), 16, "LlamaForCausalLM");
  w.Write(dir, llama);
  const std::string msg = ErrorOf([&] { LoadModel(dir.string()); });
  EXPECT_NE(msg.find("tensors that config.json's shape does not use (model.layers.0.self_attn.k_proj.bias"),
            std::string::npos)
      << msg;
  fs::remove_all(dir);
}

TEST(Qwen2, WindowOnlyFromMaxWindowLayers) {
  const ModelConfig off = ParseModelConfig(Config(false), "", "qwen2");
  const ModelConfig on = ParseModelConfig(Config(true), "", "qwen2");
  const AttentionPlan full = ResolvePlan("", AttentionDefaultsFor(off));
  for (const LayerPlan& l : full.layers) EXPECT_EQ(l.kind, LayerKind::kFull);
  const AttentionPlan plan = ResolvePlan("", AttentionDefaultsFor(on));
  EXPECT_EQ(plan.layers[0].kind, LayerKind::kFull);
  for (int32_t i = kMaxWindowLayers; i < kLayers; ++i) {
    EXPECT_EQ(plan.layers[size_t(i)].kind, LayerKind::kWindow);
    EXPECT_EQ(plan.layers[size_t(i)].span.window, kWindow);
  }
}

TEST(Qwen2, MissingBiasNamesFileAndTensor) {
  const fs::path dir = test::TempDir("qwen2_missing");
  MakeCheckpoint().Write(dir, Config(true), {"model.layers.1.self_attn.q_proj.bias"});
  const std::string msg = ErrorOf([&] { LoadModel(dir.string()); });
  EXPECT_NE(msg.find((dir / "model.safetensors").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.layers.1.self_attn.q_proj.bias"), std::string::npos) << msg;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace swan
