// Gemma 3 (text) on a tiny random checkpoint against a float64 forward
// written from HF's modeling_gemma3, and chunked prefill/decode under its
// own 5:1 plan against one whole prefill.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>

#include "model/blocks.h"
#include "model/model.h"
#include "model/tiny_reference.h"
#include "ops/elementwise.h"

namespace swan {
namespace {

namespace fs = std::filesystem;
using test::Vec;

constexpr int64_t kHidden = 24, kInter = 40, kHeads = 4, kKvHeads = 2, kHeadDim = 8, kVocab = 50;
constexpr int32_t kLayers = 6, kWindow = 4;
constexpr double kEps = 1e-6, kGlobalBase = 1e6, kLocalBase = 10000.0, kLinearFactor = 2.0;
constexpr double kQueryPreAttnScalar = 10.0;

// 5 local : 1 global from sliding_window_pattern; linear RoPE scaling x2,
// which HF applies to the global layers only.
const char* kConfig = test::kTinyGemma3Config;

test::TinyCheckpoint MakeCheckpoint() {
  test::TinyCheckpoint w(11);
  const double s_in = 1.0 / std::sqrt(double(kHidden)), s_inter = 1.0 / std::sqrt(double(kInter));
  const double s_q = 1.0 / std::sqrt(double(kHeads * kHeadDim));
  w.Add("model.embed_tokens.weight", {kVocab, kHidden}, 0.5);
  w.Add("model.norm.weight", {kHidden}, 0.2);  // Gemma norms multiply by 1 + weight
  for (int32_t i = 0; i < kLayers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    w.Add(p + "input_layernorm.weight", {kHidden}, 0.2);
    w.Add(p + "self_attn.q_proj.weight", {kHeads * kHeadDim, kHidden}, s_in);
    w.Add(p + "self_attn.k_proj.weight", {kKvHeads * kHeadDim, kHidden}, s_in);
    w.Add(p + "self_attn.v_proj.weight", {kKvHeads * kHeadDim, kHidden}, s_in);
    w.Add(p + "self_attn.o_proj.weight", {kHidden, kHeads * kHeadDim}, s_q);
    w.Add(p + "self_attn.q_norm.weight", {kHeadDim}, 0.5);
    w.Add(p + "self_attn.k_norm.weight", {kHeadDim}, 0.5);
    w.Add(p + "post_attention_layernorm.weight", {kHidden}, 0.2);
    w.Add(p + "pre_feedforward_layernorm.weight", {kHidden}, 0.2);
    w.Add(p + "mlp.gate_proj.weight", {kInter, kHidden}, 2 * s_in);
    w.Add(p + "mlp.up_proj.weight", {kInter, kHidden}, s_in);
    w.Add(p + "mlp.down_proj.weight", {kHidden, kInter}, s_inter);
    w.Add(p + "post_feedforward_layernorm.weight", {kHidden}, 0.2);
  }
  return w;
}

double GeluTanh(double g) { return 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g))); }

// Gemma3ForCausalLM.forward in float64: logits [n, vocab] for tokens at 0..n-1.
Vec ReferenceLogits(const test::TinyCheckpoint& w, const std::vector<int32_t>& ids) {
  const int64_t n = int64_t(ids.size());
  std::vector<int32_t> pos(ids.size());
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
  Vec x = test::RefEmbed(w["model.embed_tokens.weight"], ids, kHidden);
  // Gemma3TextScaledWordEmbedding: sqrt(hidden) in the activation dtype (float32).
  const double embed_scale = double(float(std::sqrt(double(kHidden))));
  for (double& v : x) v *= embed_scale;
  for (int32_t i = 0; i < kLayers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    const bool local = (i + 1) % 6 != 0;
    Vec h = test::RefRmsNorm(x, n, kHidden, w[p + "input_layernorm.weight"], kEps, 1.0);
    Vec q = test::RefLinear(h, n, w[p + "self_attn.q_proj.weight"], kHeads * kHeadDim, kHidden);
    Vec k = test::RefLinear(h, n, w[p + "self_attn.k_proj.weight"], kKvHeads * kHeadDim, kHidden);
    const Vec v = test::RefLinear(h, n, w[p + "self_attn.v_proj.weight"], kKvHeads * kHeadDim, kHidden);
    q = test::RefRmsNorm(q, n * kHeads, kHeadDim, w[p + "self_attn.q_norm.weight"], kEps, 1.0);
    k = test::RefRmsNorm(k, n * kKvHeads, kHeadDim, w[p + "self_attn.k_norm.weight"], kEps, 1.0);
    const double base = local ? kLocalBase : kGlobalBase;
    const double factor = local ? 1.0 : kLinearFactor;
    test::RefRope(q, n, kHeads, kHeadDim, pos, base, factor);
    test::RefRope(k, n, kKvHeads, kHeadDim, pos, base, factor);
    const Vec a = test::RefAttention(q, k, v, n, kHeads, kKvHeads, kHeadDim, local ? kWindow : 0,
                                     1.0 / std::sqrt(kQueryPreAttnScalar));
    Vec o = test::RefLinear(a, n, w[p + "self_attn.o_proj.weight"], kHidden, kHeads * kHeadDim);
    o = test::RefRmsNorm(o, n, kHidden, w[p + "post_attention_layernorm.weight"], kEps, 1.0);
    test::AddInto(x, o);
    h = test::RefRmsNorm(x, n, kHidden, w[p + "pre_feedforward_layernorm.weight"], kEps, 1.0);
    Vec g = test::RefLinear(h, n, w[p + "mlp.gate_proj.weight"], kInter, kHidden);
    const Vec u = test::RefLinear(h, n, w[p + "mlp.up_proj.weight"], kInter, kHidden);
    for (size_t j = 0; j < g.size(); ++j) g[j] = GeluTanh(g[j]) * u[j];
    Vec m = test::RefLinear(g, n, w[p + "mlp.down_proj.weight"], kHidden, kInter);
    m = test::RefRmsNorm(m, n, kHidden, w[p + "post_feedforward_layernorm.weight"], kEps, 1.0);
    test::AddInto(x, m);
  }
  const Vec xn = test::RefRmsNorm(x, n, kHidden, w["model.norm.weight"], kEps, 1.0);
  return test::RefLinear(xn, n, w["model.embed_tokens.weight"], kVocab, kHidden);
}

std::vector<int32_t> Tokens(int64_t n) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(int32_t((i * 13 + 5) % kVocab));
  return ids;
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

class Gemma3 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    weights_ = new test::TinyCheckpoint(MakeCheckpoint());
    dir_ = test::TempDir("gemma3");
    weights_->Write(dir_, kConfig);
    model_ = LoadModel(dir_.string()).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    delete weights_;
    fs::remove_all(dir_);
  }

  // Logits [n, vocab] of `ids` at 0..n-1 under `spec`, fed `chunk` tokens at
  // a time into a cache of that max_chunk.
  static std::vector<float> Run(const std::vector<int32_t>& ids, const std::string& spec, int64_t chunk,
                                KvCacheOptions options = {}) {
    const int64_t n = int64_t(ids.size());
    std::vector<int32_t> pos(ids.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
    options.max_chunk = int32_t(chunk);
    auto session = model_->NewSession(model_->ResolvePlan(spec), options);
    std::vector<float> logits(size_t(n * kVocab));  // [n, vocab]
    for (int64_t start = 0; start < n; start += chunk) {
      const int64_t len = std::min(chunk, n - start);
      model_->Forward(&logits[size_t(start * kVocab)], Batch{&ids[size_t(start)], &pos[size_t(start)], len}, *session);
    }
    return logits;
  }

  static test::TinyCheckpoint* weights_;
  static fs::path dir_;
  static LanguageModel* model_;
};
test::TinyCheckpoint* Gemma3::weights_ = nullptr;
fs::path Gemma3::dir_;
LanguageModel* Gemma3::model_ = nullptr;

TEST_F(Gemma3, MatchesFloat64Reference) {
  const std::vector<int32_t> ids = Tokens(20);
  const double d = test::MaxAbsDiff(Run(ids, "", 20), ReferenceLogits(*weights_, ids));
  std::printf("gemma3 max |logit - float64 reference| = %.3g\n", d);
  EXPECT_LT(d, 1e-4);
}

TEST_F(Gemma3, DefaultPlanIsFiveLocalToOneGlobal) {
  const AttentionPlan plan = model_->ResolvePlan("");
  ASSERT_EQ(plan.layers.size(), size_t(kLayers));
  for (int32_t i = 0; i < kLayers; ++i) {
    const LayerPlan& l = plan.layers[size_t(i)];
    if (i == 5) {
      EXPECT_EQ(l.kind, LayerKind::kFull);
      EXPECT_EQ(l.rope.base, kGlobalBase);
      EXPECT_EQ(l.rope.scaling.kind, RopeScaling::Kind::kLinear);
    } else {
      EXPECT_EQ(l.kind, LayerKind::kWindow) << i;
      EXPECT_EQ(l.span.window, kWindow);
      EXPECT_EQ(l.rope.base, kLocalBase);
      EXPECT_EQ(l.rope.scaling.kind, RopeScaling::Kind::kNone);
    }
  }
  // The preset by name gives the same layers; layer_types says the same.
  const AttentionPlan preset = model_->ResolvePlan("hybrid:5:1");
  for (int32_t i = 0; i < kLayers; ++i) EXPECT_EQ(preset.layers[size_t(i)].kind, plan.layers[size_t(i)].kind);
  std::string typed = kConfig;
  typed.replace(typed.find("\"sliding_window_pattern\": 6"), 27,
                R"("layer_types": ["sliding_attention", "full_attention", "sliding_attention",
                   "sliding_attention", "sliding_attention", "full_attention"])");
  const AttentionPlan from_types = ResolvePlan("", AttentionDefaultsFor(ParseModelConfig(typed, "", "t")));
  EXPECT_EQ(from_types.layers[1].kind, LayerKind::kFull);
  EXPECT_EQ(from_types.layers[1].rope.base, kGlobalBase);
  EXPECT_EQ(from_types.layers[2].kind, LayerKind::kWindow);
  EXPECT_EQ(from_types.layers[2].rope.base, kLocalBase);
}

TEST_F(Gemma3, ChunksAndDecodeEqualWholePrefill) {
  const std::vector<int32_t> ids = Tokens(23);
  const int64_t n = int64_t(ids.size());
  KvCacheOptions keep_all;
  keep_all.ring_for_window_layers = false;
  double worst = 0;
  for (const char* spec : {"", "hybrid:5:1,window:3,sinks:1"}) {
    const std::vector<float> whole = Run(ids, spec, n, keep_all);
    for (int64_t chunk : {int64_t(1), int64_t(2), int64_t(3), int64_t(5), int64_t(7), n}) {
      const std::vector<float> got = Run(ids, spec, chunk);
      double d = 0;
      for (size_t i = 0; i < got.size(); ++i) d = std::max(d, double(std::fabs(got[i] - whole[i])));
      worst = std::max(worst, d);
      EXPECT_LT(d, 1e-4) << "plan '" << spec << "' chunk " << chunk;
    }
  }
  std::printf("gemma3 chunked/decode vs whole prefill: max |diff| = %.3g\n", worst);
  // The window hides keys from late tokens: full attention differs.
  const std::vector<float> full = Run(ids, "full", n);
  const std::vector<float> local = Run(ids, "", n);
  double late = 0;
  for (size_t i = size_t(10 * kVocab); i < full.size(); ++i)
    late = std::max(late, double(std::fabs(full[i] - local[i])));
  EXPECT_GT(late, 1e-3);
}

TEST_F(Gemma3, LastLogitsOnlyMatch) {
  const std::vector<int32_t> ids = Tokens(9);
  std::vector<int32_t> pos(ids.size());
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
  KvCacheOptions options;
  options.max_chunk = 4;
  auto session = model_->NewSession(model_->ResolvePlan(""), options);
  std::vector<float> last(static_cast<size_t>(kVocab));  // [1, vocab]
  model_->Forward(last.data(), Batch{ids.data(), pos.data(), 9, false}, *session);
  const Vec ref = ReferenceLogits(*weights_, ids);
  const Vec ref_last(ref.end() - kVocab, ref.end());
  EXPECT_LT(test::MaxAbsDiff(last, ref_last), 1e-4);
}

TEST(Gemma3Load, MissingQNormNamesFileAndTensor) {
  const fs::path dir = test::TempDir("gemma3_missing");
  MakeCheckpoint().Write(dir, kConfig, {"model.layers.2.self_attn.q_norm.weight"});
  const std::string msg = ErrorOf([&] { LoadModel(dir.string()); });
  EXPECT_NE(msg.find((dir / "model.safetensors").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.layers.2.self_attn.q_norm.weight"), std::string::npos) << msg;
  fs::remove_all(dir);
}

TEST(Gemma3Load, RejectsSoftCapping) {
  const fs::path dir = test::TempDir("gemma3_softcap");
  std::string config = kConfig;
  config.replace(config.find("\"final_logit_softcapping\": null"), 31, "\"final_logit_softcapping\": 30.0");
  MakeCheckpoint().Write(dir, config);
  const std::string msg = ErrorOf([&] { LoadModel(dir.string()); });
  EXPECT_NE(msg.find("soft-capping"), std::string::npos) << msg;
  fs::remove_all(dir);
}

// Writes the tiny checkpoint to $SWAN_FIXTURE_DIR for the command-line
// tests (model/CMakeLists.txt), or to a temporary directory without it, and
// checks that the written directory loads as a Gemma 3 model.
TEST(Gemma3Fixture, WriteForCli) {
  const char* env = std::getenv("SWAN_FIXTURE_DIR");
  const fs::path dir = env ? fs::path(env) : fs::temp_directory_path() / "swan_gemma3_fixture";
  fs::create_directories(dir);
  MakeCheckpoint().Write(dir.string(), kConfig);
  const auto model = LoadModel(dir.string());
  EXPECT_EQ(model->config().architecture, "Gemma3ForCausalLM");
  if (!env) fs::remove_all(dir);
}

TEST(Gemma3Ops, GeluTanhMulMatchesFormula) {
  std::vector<float> gate, up;
  for (int i = -40; i <= 40; ++i) gate.push_back(float(i) * 0.15f), up.push_back(0.5f + float(i) * 0.01f);
  std::vector<float> out(gate.size());
  GeluTanhMul(out.data(), gate.data(), up.data(), int64_t(gate.size()));
  for (size_t i = 0; i < gate.size(); ++i) EXPECT_NEAR(out[i], GeluTanh(gate[i]) * up[i], 1e-6) << gate[i];
  EXPECT_EQ(GemmaNormWeight({0.0f, -0.5f, 2.0f}), (std::vector<float>{1.0f, 0.5f, 3.0f}));
}

}  // namespace
}  // namespace swan
