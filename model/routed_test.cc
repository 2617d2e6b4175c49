// Switch Attention inference (routed layers, docs/design.md §4) on a tiny random
// Llama with random routers, against a float64 forward written out here:
// each token's route from its router (w · xn + b > 0), then full causal or
// windowed attention by an explicit mask.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>

#include "model/blocks.h"
#include "model/model.h"
#include "model/tiny_reference.h"

namespace swan {
namespace {

namespace fs = std::filesystem;
using test::Vec;

constexpr int64_t kHidden = 16, kInter = 32, kHeads = 4, kKvHeads = 2, kHeadDim = 4, kVocab = 50;
constexpr int32_t kLayers = 3;
constexpr double kEps = 1e-6, kTheta = 10000.0;

const char kConfig[] = R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4,
  "num_key_value_heads": 2, "vocab_size": 50, "max_position_embeddings": 4096,
  "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": false})";

std::string RouterName(int32_t layer, const char* what) {
  return "model.layers." + std::to_string(layer) + ".self_attn.router." + what;
}

// Every layer has a router; `bias` < infinity replaces the random biases.
test::TinyCheckpoint MakeCheckpoint(double bias = NAN) {
  test::TinyCheckpoint w(11);
  test::AddTinyLlamaWeights(w, {kVocab, kHidden, kInter, kHeads, kKvHeads, kHeadDim, kLayers}, false,
                            [&](const std::string&, int32_t i) {
                              // Logits of about ±2: a mix of both routes.
                              w.Add(RouterName(i, "weight"), {1, kHidden}, 0.5);
                              if (std::isnan(bias))
                                w.Add(RouterName(i, "bias"), {1}, 0.3);
                              else
                                w.Add(RouterName(i, "bias"), {1}, 0.0, bias);
                            });
  return w;
}

// Softmax attention of tokens at positions 0..n-1 where query i sees key j
// iff visible(i, j) (the explicit mask), with GQA.
//   q [n, heads, d], k, v [n, kv_heads, d] -> out [n, heads, d]
Vec MaskedAttention(const Vec& q, const Vec& k, const Vec& v, int64_t n,
                    const std::function<bool(int64_t, int64_t)>& visible) {
  Vec out(static_cast<size_t>(n * kHeads * kHeadDim), 0.0);
  const double scale = 1.0 / std::sqrt(double(kHeadDim));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t h = 0; h < kHeads; ++h) {
      const int64_t kh = h / (kHeads / kKvHeads);
      std::vector<double> logits(static_cast<size_t>(n), -INFINITY);  // [n]
      double top = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        if (!visible(i, j)) continue;
        double s = 0;
        for (int64_t c = 0; c < kHeadDim; ++c)
          s += q[size_t((i * kHeads + h) * kHeadDim + c)] * k[size_t((j * kKvHeads + kh) * kHeadDim + c)];
        logits[size_t(j)] = s * scale;
        top = std::max(top, s * scale);
      }
      double sum = 0;
      for (double& l : logits) sum += (l = std::exp(l - top));
      for (int64_t j = 0; j < n; ++j)
        for (int64_t c = 0; c < kHeadDim; ++c)
          out[size_t((i * kHeads + h) * kHeadDim + c)] +=
              logits[size_t(j)] / sum * v[size_t((j * kKvHeads + kh) * kHeadDim + c)];
    }
  return out;
}

struct Reference {
  Vec logits;                                // [n, vocab]
  std::vector<std::vector<uint8_t>> routes;  // [n_layers][n] on routed layers, else empty
  double min_abs_router_logit = INFINITY;    // how far the closest route is from flipping
};

// LlamaForCausalLM.forward in float64 under `plan`, routed layers included.
Reference ReferenceForward(const test::TinyCheckpoint& w, const std::vector<int32_t>& ids, const AttentionPlan& plan) {
  const int64_t n = int64_t(ids.size());
  std::vector<int32_t> pos(ids.size());
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
  Reference r;
  r.routes.resize(size_t(kLayers));
  Vec x = test::RefEmbed(w["model.embed_tokens.weight"], ids, kHidden);
  for (int32_t i = 0; i < kLayers; ++i) {
    const LayerPlan& lp = plan.layers[size_t(i)];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    const Vec h = test::RefRmsNorm(x, n, kHidden, w[p + "input_layernorm.weight"], kEps);
    // The router reads the normed input: logit_t = w · h_t + b.
    std::vector<uint8_t> full(static_cast<size_t>(n), lp.kind == LayerKind::kFull);  // [n]
    if (lp.kind == LayerKind::kRouted) {
      const Vec logit = test::RefLinear(h, n, w[RouterName(i, "weight")], 1, kHidden, &w[RouterName(i, "bias")]);
      for (int64_t t = 0; t < n; ++t) {
        full[size_t(t)] = logit[size_t(t)] > 0;
        r.min_abs_router_logit = std::min(r.min_abs_router_logit, std::fabs(logit[size_t(t)]));
      }
      r.routes[size_t(i)] = full;
    }
    Vec q = test::RefLinear(h, n, w[p + "self_attn.q_proj.weight"], kHeads * kHeadDim, kHidden);
    Vec k = test::RefLinear(h, n, w[p + "self_attn.k_proj.weight"], kKvHeads * kHeadDim, kHidden);
    const Vec v = test::RefLinear(h, n, w[p + "self_attn.v_proj.weight"], kKvHeads * kHeadDim, kHidden);
    test::RefRope(q, n, kHeads, kHeadDim, pos, kTheta);
    test::RefRope(k, n, kKvHeads, kHeadDim, pos, kTheta);
    const int64_t window = lp.span.window, sinks = lp.span.sinks;
    const Vec a = MaskedAttention(q, k, v, n, [&](int64_t qi, int64_t kj) {
      if (kj > qi) return false;
      return bool(full[size_t(qi)]) || qi - kj < window || kj < sinks;
    });
    test::AddInto(x, test::RefLinear(a, n, w[p + "self_attn.o_proj.weight"], kHidden, kHeads * kHeadDim));
    const Vec h2 = test::RefRmsNorm(x, n, kHidden, w[p + "post_attention_layernorm.weight"], kEps);
    Vec g = test::RefLinear(h2, n, w[p + "mlp.gate_proj.weight"], kInter, kHidden);
    const Vec u = test::RefLinear(h2, n, w[p + "mlp.up_proj.weight"], kInter, kHidden);
    for (size_t j = 0; j < g.size(); ++j) g[j] = g[j] / (1.0 + std::exp(-g[j])) * u[j];
    test::AddInto(x, test::RefLinear(g, n, w[p + "mlp.down_proj.weight"], kHidden, kInter));
  }
  const Vec xn = test::RefRmsNorm(x, n, kHidden, w["model.norm.weight"], kEps);
  r.logits = test::RefLinear(xn, n, w["lm_head.weight"], kVocab, kHidden);
  return r;
}

std::vector<int32_t> Tokens(int64_t n) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(int32_t((i * 17 + 3) % kVocab));
  return ids;
}

struct EngineRun {
  std::vector<float> logits;                 // [n, vocab]
  std::vector<std::vector<uint8_t>> routes;  // [n_layers][n] as recorded
};

struct RunOptions {
  int32_t chunk = 0;              // tokens per Forward call; 0 = all at once
  double forced_full_ratio = -1;  // RouteOptions::forced_full_ratio
  bool keep_all = false;          // window layers keep every row (no ring)
};

EngineRun RunEngine(const LanguageModel& model, const std::vector<int32_t>& ids, const AttentionPlan& plan,
                    const RunOptions& o = {}) {
  const int64_t n = int64_t(ids.size());
  const int64_t chunk = o.chunk > 0 ? o.chunk : n;
  KvCacheOptions kv;
  kv.max_chunk = int32_t(chunk);
  kv.ring_for_window_layers = !o.keep_all;
  auto session = model.NewSession(plan, kv);
  EngineRun r;
  r.routes.resize(size_t(kLayers));
  for (auto& routes : r.routes) session->routing.record.push_back(&routes);
  session->routing.forced_full_ratio = o.forced_full_ratio;
  std::vector<int32_t> pos(ids.size());
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
  r.logits.resize(size_t(n * kVocab));
  for (int64_t start = 0; start < n; start += chunk) {
    const int64_t len = std::min(chunk, n - start);
    model.Forward(&r.logits[size_t(start * kVocab)], Batch{&ids[size_t(start)], &pos[size_t(start)], len}, *session);
  }
  return r;
}

double MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
  return m;
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

class RoutedLlama : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::TempDir("routed"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::unique_ptr<LanguageModel> Load(const test::TinyCheckpoint& w, const std::set<std::string>& leave_out = {}) {
    w.Write(dir_, kConfig, leave_out);
    return LoadModel(dir_.string());
  }
  fs::path dir_;
};

TEST_F(RoutedLlama, MatchesReferenceWholeChunkedAndDecode) {
  const test::TinyCheckpoint w = MakeCheckpoint();
  const auto model = Load(w);
  const std::vector<int32_t> ids = Tokens(14);
  // A routed layer with a window layer between, and one with a sink.
  for (const char* spec : {"swa:5,layer0:routed:3,layer2:routed:4", "routed:4,sinks:1"}) {
    SCOPED_TRACE(spec);
    const AttentionPlan plan = model->ResolvePlan(spec);
    const Reference ref = ReferenceForward(w, ids, plan);
    // The test needs both routes on every routed layer, and no logit so
    // close to 0 that float rounding could flip it.
    ASSERT_GT(ref.min_abs_router_logit, 1e-3);
    for (int32_t i = 0; i < kLayers; ++i) {
      if (plan.layers[size_t(i)].kind != LayerKind::kRouted) continue;
      int full = 0;
      for (uint8_t g : ref.routes[size_t(i)]) full += g;
      EXPECT_GT(full, 1) << "layer " << i;
      EXPECT_LT(full, int(ids.size()) - 1) << "layer " << i;
    }
    for (int32_t chunk : {0, 5, 3, 1}) {  // whole prefill, chunked prefill, decode
      const EngineRun run = RunEngine(*model, ids, plan, {chunk});
      const double d = test::MaxAbsDiff(run.logits, ref.logits);
      std::printf("%s chunk %d: max |logit - float64 reference| = %.3g\n", spec, chunk, d);
      EXPECT_LT(d, 1e-4) << "chunk " << chunk;
      EXPECT_EQ(run.routes, ref.routes) << "chunk " << chunk;
    }
  }
  // The routes matter: all-full and all-window references differ from routed.
  const AttentionPlan routed = model->ResolvePlan("routed:4,sinks:1");
  const Vec full = ReferenceForward(w, ids, model->ResolvePlan("full")).logits;
  const Vec window = ReferenceForward(w, ids, model->ResolvePlan("swa:4,sinks:1")).logits;
  const std::vector<float> engine = RunEngine(*model, ids, routed).logits;
  EXPECT_GT(test::MaxAbsDiff(engine, full), 1e-2);
  EXPECT_GT(test::MaxAbsDiff(engine, window), 1e-2);
}

TEST_F(RoutedLlama, LargeBiasGivesExactlyFullOrWindowAttention) {
  const std::vector<int32_t> ids = Tokens(20);
  for (double bias : {1e4, -1e4}) {
    SCOPED_TRACE(bias);
    const auto model = Load(MakeCheckpoint(bias));
    const EngineRun routed = RunEngine(*model, ids, model->ResolvePlan("routed:4,sinks:1"));
    // The same attention without routing: full causal, or the window over a
    // cache that keeps every row like the routed layer's.
    const EngineRun plain =
        RunEngine(*model, ids, model->ResolvePlan(bias > 0 ? "full" : "swa:4,sinks:1"), {.keep_all = true});
    EXPECT_EQ(MaxDiff(routed.logits, plain.logits), 0.0);
    for (const auto& routes : routed.routes) EXPECT_EQ(routes, std::vector<uint8_t>(ids.size(), bias > 0 ? 1 : 0));
  }
}

TEST_F(RoutedLlama, MissingRouterIsAnErrorUnlessTheRatioIsForced) {
  const auto model = Load(MakeCheckpoint(), {RouterName(1, "weight"), RouterName(1, "bias")});
  const std::vector<int32_t> ids = Tokens(6);
  const std::string msg = ErrorOf([&] { RunEngine(*model, ids, model->ResolvePlan("routed:4")); });
  EXPECT_NE(msg.find((dir_ / "model.safetensors").string() + " has no router for layer 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.layers.1.self_attn.router.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("swan train --init " + dir_.string() + " --attn routed:4"), std::string::npos) << msg;
  // Layers that have routers route; a forced ratio needs none.
  EXPECT_EQ(ErrorOf([&] { RunEngine(*model, ids, model->ResolvePlan("full,layer0:routed:4,layer2:routed:4")); }),
            "(no error)");
  EXPECT_EQ(ErrorOf([&] { RunEngine(*model, ids, model->ResolvePlan("routed:4"), {.forced_full_ratio = 0.5}); }),
            "(no error)");
  EXPECT_NE(ErrorOf([&] {
              RunEngine(*model, ids, model->ResolvePlan("routed:4"), {.forced_full_ratio = 1.5});
            }).find("above 1"),
            std::string::npos);
  // A router weight without its bias does not load.
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  const std::string load = ErrorOf([&] { Load(MakeCheckpoint(), {RouterName(2, "bias")}); });
  EXPECT_NE(load.find("model.layers.2.self_attn.router.bias"), std::string::npos) << load;
}

TEST_F(RoutedLlama, ForcedRatioHitsItsTargetWhateverTheChunks) {
  const auto model = Load(MakeCheckpoint());
  const std::vector<int32_t> ids = Tokens(1000);
  const AttentionPlan plan = model->ResolvePlan("routed:16");
  for (double r : {0.25, 0.7}) {
    const EngineRun a = RunEngine(*model, ids, plan, {.chunk = 512, .forced_full_ratio = r});
    int64_t full = 0, total = 0;
    for (const auto& routes : a.routes) {
      for (uint8_t g : routes) full += g;
      total += int64_t(routes.size());
    }
    ASSERT_EQ(total, int64_t(kLayers) * 1000);
    // 3000 draws: the standard deviation of the ratio is below 0.01.
    EXPECT_NEAR(double(full) / double(total), r, 0.03);
    // A token's draw depends on its position, not on how the text is chunked.
    const EngineRun b = RunEngine(*model, ids, plan, {.chunk = 37, .forced_full_ratio = r});
    EXPECT_EQ(a.routes, b.routes);
    EXPECT_LT(MaxDiff(a.logits, b.logits), 1e-4);
  }
  // Ratio 1 is full attention.
  const std::vector<int32_t> few = Tokens(40);
  EXPECT_EQ(MaxDiff(RunEngine(*model, few, plan, {.forced_full_ratio = 1.0}).logits,
                    RunEngine(*model, few, model->ResolvePlan("full")).logits),
            0.0);
}

TEST(RoutedBlock, RoutedLayerWithoutRoutesIsAnError) {
  // A block given no routes must not run a routed layer as a window layer.
  ModelAttentionDefaults one_layer;
  one_layer.n_layers = 1;
  const AttentionPlan plan = ResolvePlan("routed:4", one_layer);
  Session session(plan, KvShape{1, 4}, {});
  AttentionWeights weights;
  Rope rope(plan.layers[0].rope, 4);
  AttentionLayer layer;
  layer.weights = &weights;
  layer.rope = &rope;
  layer.span = plan.layers[0].span;
  layer.cache = &session.cache.layer(0);
  std::vector<float> residual(4), xn(4);  // [1, hidden]
  const int32_t pos = 0;
  BlockSizes sizes{4, 8, AttentionShape{1, 1, 4}};
  EXPECT_NE(ErrorOf([&] {
              AttentionBlock(residual.data(), xn.data(), &pos, 1, layer, sizes);
            }).find("needs routes, and none were given"),
            std::string::npos);
}

}  // namespace
}  // namespace swan
