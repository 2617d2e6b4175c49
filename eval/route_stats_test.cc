// Routing statistics (`swan route-stats`): the heatmap is well-formed SVG
// with at most the asked number of columns, bins average correctly, the
// text and passkey collectors count what they say; and a stories260K
// checkpoint with random routers for the command-line tests.
#include "eval/route_stats.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "eval/haystack.h"
#include "eval/test_data.h"
#include "model/safetensors.h"
#include "model/test_files.h"

namespace swan {
namespace {

namespace fs = std::filesystem;

// A small XML well-formedness check: tags balanced and properly nested,
// attribute values quoted, '&' only in the predefined entities, text only
// inside one root element. Returns "" or the first problem; `root` and
// `rects` receive the root element's name and the number of <rect>s.
std::string XmlProblem(const std::string& xml, std::string* root, int64_t* rects) {
  std::vector<std::string> open;
  int roots = 0;
  *rects = 0;
  auto is_name = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == ':' || c == '_'; };
  auto entity_ok = [&](size_t at) {
    for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
      if (xml.compare(at, std::strlen(e), e) == 0) return true;
    return false;
  };
  size_t i = 0;
  while (i < xml.size()) {
    const char c = xml[i];
    if (c != '<') {
      if (c == '&' && !entity_ok(i)) return "bad entity at " + std::to_string(i);
      if (open.empty() && !std::isspace(static_cast<unsigned char>(c)))
        return "text outside the root at " + std::to_string(i);
      ++i;
      continue;
    }
    if (xml.compare(i, 2, "</") == 0) {
      const size_t end = xml.find('>', i);
      if (end == std::string::npos) return "unterminated end tag";
      const std::string name = xml.substr(i + 2, end - i - 2);
      if (open.empty() || open.back() != name) return "</" + name + "> does not close the open element";
      open.pop_back();
      i = end + 1;
      continue;
    }
    size_t j = i + 1;
    while (j < xml.size() && is_name(xml[j])) ++j;
    const std::string name = xml.substr(i + 1, j - i - 1);
    if (name.empty()) return "a '<' that starts no tag at " + std::to_string(i);
    if (open.empty() && ++roots > 1) return "a second root element <" + name + ">";
    if (open.empty()) *root = name;
    if (name == "rect") ++*rects;
    for (;;) {
      while (j < xml.size() && std::isspace(static_cast<unsigned char>(xml[j]))) ++j;
      if (j >= xml.size()) return "unterminated <" + name + ">";
      if (xml.compare(j, 2, "/>") == 0) {
        j += 2;
        break;
      }
      if (xml[j] == '>') {
        open.push_back(name);
        ++j;
        break;
      }
      const size_t attr = j;
      while (j < xml.size() && is_name(xml[j])) ++j;
      if (j == attr || xml.compare(j, 2, "=\"") != 0) return "a malformed attribute in <" + name + ">";
      const size_t close = xml.find('"', j + 2);
      if (close == std::string::npos) return "an unterminated attribute value in <" + name + ">";
      for (size_t k = j + 2; k < close; ++k) {
        if (xml[k] == '<') return "'<' in an attribute value of <" + name + ">";
        if (xml[k] == '&' && !entity_ok(k)) return "bad entity in an attribute of <" + name + ">";
      }
      j = close + 1;
    }
    i = j;
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  if (roots != 1) return "no root element";
  return "";
}

TEST(RouteHeatmap, IsWellFormedSvgWithAtMostTheAskedColumns) {
  const int64_t n = 2500;
  std::vector<uint8_t> none(n, 0), all(n, 1), mixed(n);  // [n] each
  std::mt19937 rng(3);
  for (auto& g : mixed) g = rng() % 4 == 0;
  RouteHeatmap h;
  h.title = "Routes <of> a & b";
  h.subtitle = "\"quoted\"";
  h.row_labels = {"layer 0 (W 64)", "layer 1 (W 64)", "layer 2 (W 8 + 4 sinks)"};
  h.rows = {none, all, mixed};
  h.boundaries = {0, 1000, 2000};
  h.boundary_note = "window start";
  h.markers = {{100, "key"}, {2400, "question end"}};
  const std::string svg = RouteHeatmapSvg(h);
  std::string root;
  int64_t rects = 0;
  EXPECT_EQ(XmlProblem(svg, &root, &rects), "");
  EXPECT_EQ(root, "svg");
  // The cells of at most 1000 columns per row, plus background, frame and legend.
  EXPECT_LE(rects, 3 * 1000 + 20);
  EXPECT_GT(rects, 500);  // the random row changes color often
  for (const char* text : {"layer 2 (W 8 + 4 sinks)", "Routes &lt;of&gt; a &amp; b", "0%", "100%", ">key<",
                           "token (2500 tokens; one column = 2.5 tokens)", "full attention", "window start"})
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  // Per-row ratios in the right margin.
  EXPECT_NE(svg.find(">0.0%<"), std::string::npos);
  EXPECT_NE(svg.find(">100.0%<"), std::string::npos);
  // The checker itself catches what it is for.
  EXPECT_NE(XmlProblem("<svg><g></svg>", &root, &rects), "");
  EXPECT_NE(XmlProblem("<svg><text>a & b</text></svg>", &root, &rects), "");
  EXPECT_NE(XmlProblem("<svg x=1></svg>", &root, &rects), "");
}

TEST(RouteHeatmap, BinsAverageTheirTokens) {
  std::vector<uint8_t> gates(2500);  // [n]
  for (size_t i = 0; i < gates.size(); ++i) gates[i] = i % 5 < 2;
  const std::vector<double> bins = BinnedFullRatio(gates, 1000);
  ASSERT_EQ(bins.size(), 1000u);
  double sum = 0;  // bins alternate 2 and 3 tokens: weight each by its size
  for (int64_t b = 0; b < 1000; ++b) sum += bins[size_t(b)] * double((b + 1) * 2500 / 1000 - b * 2500 / 1000);
  EXPECT_NEAR(sum / 2500.0, 0.4, 1e-12);
  // Fewer tokens than columns: one column per token.
  const std::vector<uint8_t> few = {1, 0, 1};
  EXPECT_EQ(BinnedFullRatio(few, 1000), (std::vector<double>{1, 0, 1}));
}

class RouteStatsOnStories : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = LoadModel(test::Stories260K()).release();
    tokenizer_ = new Tokenizer(Tokenizer::Load(test::Stories260K()));
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete model_;
  }
  static LanguageModel* model_;
  static Tokenizer* tokenizer_;
};
LanguageModel* RouteStatsOnStories::model_ = nullptr;
Tokenizer* RouteStatsOnStories::tokenizer_ = nullptr;

TEST_F(RouteStatsOnStories, TextRoutesCountEveryTokenOfEveryRoutedLayer) {
  const std::vector<int32_t> text = test::EncodePlain(*tokenizer_, test::StoryText());
  TextRouteOptions o;
  o.context = 64;
  o.bos_id = 1;
  o.max_windows = 4;
  o.run.forced_full_ratio = 0.3;  // stories260K has no routers
  const AttentionPlan plan = model_->ResolvePlan("full,layer1:routed:16,layer3:routed:8,sinks:2");
  const TextRouteStats s = CollectTextRoutes(*model_, plan, text, o);
  EXPECT_EQ(s.layers, (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(s.spans[1], (Span{8, 2}));
  EXPECT_EQ(s.windows, 4);
  EXPECT_EQ(s.tokens(), 4 * 64);  // BOS + 63 text tokens per window
  EXPECT_EQ(s.window_starts, (std::vector<int64_t>{0, 64, 128, 192}));
  EXPECT_NEAR(s.Overall().Ratio(), 0.3, 0.1);
  const nlohmann::json j = TextRouteJson(s);
  EXPECT_EQ(j["layers"].size(), 2u);
  EXPECT_EQ(j["layers"][0]["routes"].get<std::string>().size(), 256u);
  EXPECT_EQ(j["token_full_ratio"].size(), 256u);
  EXPECT_EQ(j["overall"]["tokens"], 512);
  EXPECT_NE(TextRouteTable(s).find("window 8 + 2 sinks"), std::string::npos);
  std::string root;
  int64_t rects = 0;
  EXPECT_EQ(XmlProblem(RouteHeatmapSvg(TextRouteHeatmap(s, "t")), &root, &rects), "");
  // A plan that routes nothing has nothing to record.
  EXPECT_THROW(CollectTextRoutes(*model_, model_->ResolvePlan("swa:16"), text, o), std::invalid_argument);
}

TEST_F(RouteStatsOnStories, PasskeyAnswerTokensSplitByWhereTheKeyIs) {
  const PieceEncoder encoder(*tokenizer_);
  const Filler noise = NoiseFiller(encoder);
  PasskeyRouteOptions o;
  o.length = 200;
  o.depths = {0, 1};
  o.samples = 2;
  o.run.forced_full_ratio = 0.5;
  const AttentionPlan plan = model_->ResolvePlan("routed:64");
  const PasskeyRouteStats s = CollectPasskeyRoutes(*model_, plan, TaskContext{&encoder, &noise, 1}, o);
  EXPECT_EQ(s.items, 4);
  ASSERT_EQ(s.layers.size(), 5u);
  for (const PasskeyLayerRoutes& r : s.layers) {
    // Depth 0 puts the key ~150 tokens back (outside 64), depth 1 right before the question.
    EXPECT_GT(r.outside.tokens, 0);
    EXPECT_GT(r.inside.tokens, 0);
    EXPECT_GT(r.haystack.tokens, 150 * 4);
  }
  EXPECT_EQ(s.answers_inside + s.answers_outside, 4);
  EXPECT_EQ(s.answers_outside, 2);
  ASSERT_EQ(s.example_gates.size(), 5u);
  EXPECT_LT(s.example_key, s.example_question);
  EXPECT_GE(s.example_question - s.example_key, 64);  // the example's key is outside the window
  const nlohmann::json j = PasskeyRouteJson(s);
  EXPECT_EQ(j["layers"][0]["answer_key_outside_window"]["tokens"], s.layers[0].outside.tokens);
  std::string root;
  int64_t rects = 0;
  EXPECT_EQ(XmlProblem(RouteHeatmapSvg(PasskeyRouteHeatmap(s, "p")), &root, &rects), "");
  o.length = 10;
  EXPECT_THROW(CollectPasskeyRoutes(*model_, plan, TaskContext{&encoder, &noise, 1}, o), std::invalid_argument);
}

// stories260K with a random router on every layer and routed:16 as its own
// plan: a model `swan route-stats` can run with learned (here: random)
// routers. Writes to $SWAN_FIXTURE_DIR when set (the command-line tests),
// else to a temporary directory, and checks that both routes occur.
TEST(RoutedFixture, WriteForCli) {
  const char* env = std::getenv("SWAN_FIXTURE_DIR");
  const fs::path dir = env ? fs::path(env) : test::TempDir("routed_stories");
  fs::create_directories(dir);
  const std::string src = test::Stories260K();
  const TensorStore store = TensorStore::OpenDirectory(src);
  std::vector<test::RawTensor> tensors;
  for (const std::string& name : store.Names()) {
    const TensorInfo& t = store.Info(name);
    tensors.push_back({name, t.dtype, t.shape, std::vector<uint8_t>(t.data, t.data + t.n_bytes)});
  }
  nlohmann::json config = nlohmann::json::parse(std::ifstream(src + "/config.json"));
  const int64_t hidden = config["hidden_size"].get<int64_t>();
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(float(hidden)));
  for (int64_t l = 0; l < config["num_hidden_layers"].get<int64_t>(); ++l) {
    std::vector<float> w(static_cast<size_t>(hidden));  // [1, hidden]
    for (float& x : w) x = normal(rng);
    const std::string p = "model.layers." + std::to_string(l) + ".self_attn.router.";
    tensors.push_back(test::F32Tensor(p + "weight", {1, hidden}, w));
    tensors.push_back(test::F32Tensor(p + "bias", {1}, {-0.2f}));
  }
  config["swan_attention_plan"] = "routed:16";
  test::WriteFile(dir / "model.safetensors", test::SafetensorsBytes(tensors));
  test::WriteFile(dir / "config.json", config.dump(2));
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(fs::path(src) / f, dir / f, fs::copy_options::overwrite_existing);

  const auto model = LoadModel(dir.string());
  const AttentionPlan plan = model->ResolvePlan("");
  ASSERT_TRUE(plan.HasRoutedLayers());
  const Tokenizer tokenizer = Tokenizer::Load(dir.string());
  TextRouteOptions o;
  o.context = 128;
  o.bos_id = 1;
  o.max_windows = 1;
  const TextRouteStats s = CollectTextRoutes(*model, plan, test::EncodePlain(tokenizer, test::StoryText()), o);
  std::printf("random routers on stories260K: %.1f%% full\n", 100.0 * s.Overall().Ratio());
  EXPECT_GT(s.Overall().full, 0);
  EXPECT_LT(s.Overall().full, s.Overall().tokens);
  if (!env) fs::remove_all(dir);
}

}  // namespace
}  // namespace swan
