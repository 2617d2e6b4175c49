#include "model/plan.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace swan {
namespace {

ModelAttentionDefaults Model(int32_t n_layers, int32_t sliding_window = 0) {
  ModelAttentionDefaults m;
  m.n_layers = n_layers;
  m.rope.base = 10000;
  m.spans.assign(size_t(n_layers), Span{sliding_window, 0});
  if (sliding_window > 0) m.default_window = sliding_window;
  return m;
}

// "W" for window layers (with the window), "F" for full ones, "RW" for
// routed ones, "L" for linear ones, e.g. "8 8 8 F".
std::string Kinds(const AttentionPlan& p) {
  std::string s;
  for (const LayerPlan& l : p.layers) {
    if (!s.empty()) s += ' ';
    if (l.kind == LayerKind::kFull) {
      EXPECT_TRUE(l.span.full());
      s += 'F';
    } else {
      if (l.kind == LayerKind::kLinear) {
        s += 'L';
        if (!l.span.full()) s += std::to_string(l.span.window);
        EXPECT_EQ(l.span.sinks, 0);
        continue;
      }
      if (l.kind == LayerKind::kRouted) s += 'R';
      if (l.kind == LayerKind::kPerHead) {
        s += 'H';
        for (const int32_t h : l.full_heads) s += std::to_string(h);
        s += '/';
      }
      s += std::to_string(l.span.window);
      if (l.span.sinks) s += "+" + std::to_string(l.span.sinks);
    }
  }
  return s;
}

std::string Rejection(const std::string& spec, int32_t n_layers = 8) {
  try {
    ResolvePlan(spec, Model(n_layers));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "'" << spec << "' was accepted";
  return "";
}

TEST(Plan, Presets) {
  EXPECT_EQ(Kinds(ResolvePlan("", Model(3))), "F F F");
  EXPECT_EQ(Kinds(ResolvePlan("model", Model(3, 16))), "16 16 16");
  EXPECT_EQ(Kinds(ResolvePlan("full", Model(3, 16))), "F F F");
  EXPECT_EQ(Kinds(ResolvePlan("swa:64", Model(3))), "64 64 64");
  EXPECT_EQ(Kinds(ResolvePlan("swa:64,sinks:4", Model(2))), "64+4 64+4");
  EXPECT_EQ(Kinds(ResolvePlan("hybrid:3:1,window:32", Model(8))), "32 32 32 F 32 32 32 F");
  EXPECT_EQ(Kinds(ResolvePlan("hybrid:1:1,window:8", Model(4))), "8 F 8 F");
  EXPECT_EQ(Kinds(ResolvePlan("hybrid:5:1,window:8", Model(7))), "8 8 8 8 8 F 8");
  EXPECT_EQ(Kinds(ResolvePlan("hybrid:2:2,window:8", Model(4))), "8 8 F F");
}

TEST(Plan, RoutedLayersKeepEveryKey) {
  const AttentionPlan p = ResolvePlan("routed:64,sinks:4", Model(3));
  EXPECT_EQ(Kinds(p), "R64+4 R64+4 R64+4");
  EXPECT_TRUE(p.HasRoutedLayers());
  EXPECT_FALSE(p.HasWindowLayers());
  for (const LayerPlan& l : p.layers) EXPECT_TRUE(l.cache_span().full());
  const AttentionPlan mixed = ResolvePlan("hybrid:1:1,window:8,layer1:routed,layer3:routed:16", Model(4));
  EXPECT_EQ(Kinds(mixed), "8 R8 8 R16");
  EXPECT_EQ(mixed.layers[0].cache_span().window, 8);
  // NoPE on full layers reaches the routed ones (their full branch needs it).
  const AttentionPlan nope = ResolvePlan("full,layer0:routed:8,nope:full", Model(2));
  EXPECT_FALSE(nope.layers[0].rope.enabled);
  EXPECT_NE(p.Describe().find("routed"), std::string::npos);
}

TEST(Plan, LinearLayers) {
  const AttentionPlan all = ResolvePlan("linear", Model(3));
  EXPECT_EQ(Kinds(all), "L L L");
  EXPECT_TRUE(all.HasLinearLayers());
  EXPECT_FALSE(all.HasWindowLayers());
  EXPECT_EQ(all.layers[0].SpanText(), "linear");
  EXPECT_NE(all.Describe().find("linear"), std::string::npos);
  EXPECT_EQ(Kinds(ResolvePlan("full,layer1:linear", Model(3))), "F L F");
  EXPECT_EQ(Kinds(ResolvePlan("swa:8,sinks:2,layer0:linear", Model(2))), "L 8+2");
  EXPECT_FALSE(ResolvePlan("full", Model(2)).HasLinearLayers());
  // A linear layer sees every token: no window, no sinks, nope:full reaches it.
  EXPECT_FALSE(ResolvePlan("linear,nope:full", Model(2)).layers[1].rope.enabled);
  EXPECT_NE(Rejection("linear,sinks:4").find("sinks need a window"), std::string::npos);
  EXPECT_EQ(Kinds(ResolvePlan("linear,window:64", Model(2))), "L64 L64");  // = linear:64
  // LoLCATs' hybrid: a softmax window on the newest keys, the older ones linear; no sinks.
  const AttentionPlan hybrid = ResolvePlan("linear:64", Model(2));
  EXPECT_EQ(Kinds(hybrid), "L64 L64");
  EXPECT_EQ(hybrid.layers[0].SpanText(), "linear + window 64");
  EXPECT_EQ(Kinds(ResolvePlan("full,layer0:linear:16", Model(2, 256))), "L16 F");
  EXPECT_EQ(Kinds(ResolvePlan("swa:8,sinks:2,layer1:linear:4", Model(2))), "8+2 L4");
  EXPECT_NE(Rejection("linear:64,sinks:4").find("sinks need a window"), std::string::npos);
  EXPECT_NE(Rejection("linear:64,window:32").find("given twice"), std::string::npos);
  EXPECT_NE(Rejection("linear:64:2").find("linear:W"), std::string::npos);
  EXPECT_NE(Rejection("full,layer0:linear:0").find("must be positive"), std::string::npos);
}

// A hybrid without window:W takes the model's window; a model without one
// refuses it with the fix, instead of a made-up window.
TEST(Plan, HybridWindowDefaultsToTheModelsOrIsRefused) {
  EXPECT_EQ(Kinds(ResolvePlan("hybrid:1:1", Model(2, 128))), "128 F");
  EXPECT_EQ(Kinds(ResolvePlan("hybrid:1:1,window:64", Model(2))), "64 F");
  for (const char* spec : {"hybrid:1:1", "full,layer1:swa", "full,layer0:routed"}) {
    try {
      ResolvePlan(spec, Model(2));
      ADD_FAILURE() << spec << " resolved on a model without a window";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("e.g. '") + spec + ",window:256'"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(Kinds(ResolvePlan("full,layer1:swa:32", Model(2))), "F 32");
}

TEST(Plan, LayerOverridesAndModifiers) {
  EXPECT_EQ(Kinds(ResolvePlan("hybrid:3:1,window:64,layer0:full,layer3:swa", Model(4))), "F 64 64 64");
  EXPECT_EQ(Kinds(ResolvePlan("full,layer1:swa:16", Model(3))), "F 16 F");
  EXPECT_EQ(Kinds(ResolvePlan("full,layer1:swa:16,sinks:2", Model(3))), "F 16+2 F");
  EXPECT_EQ(Kinds(ResolvePlan("model,window:32", Model(2, 16))), "32 32");
  EXPECT_EQ(Kinds(ResolvePlan("model,sinks:4", Model(2, 16))), "16+4 16+4");
}

// Block windows: chunked aligns every window layer's blocks at 0; staggered
// moves them by a quarter window per layer with a window.
TEST(Plan, ChunkedAndStaggeredWindows) {
  auto offsets = [](const AttentionPlan& p) {
    std::string s;
    for (const LayerPlan& l : p.layers) s += l.span.blocks ? std::to_string(l.span.offset) + " " : "- ";
    return s;
  };
  EXPECT_EQ(offsets(ResolvePlan("swa:64,chunked", Model(3))), "0 0 0 ");
  EXPECT_EQ(offsets(ResolvePlan("swa:64,staggered", Model(5))), "0 16 32 48 0 ");
  EXPECT_EQ(offsets(ResolvePlan("hybrid:3:1,window:64,staggered", Model(8))), "0 16 32 - 48 0 16 - ");
  EXPECT_EQ(offsets(ResolvePlan("swa:10,staggered", Model(4))), "0 2 5 7 ");
  const AttentionPlan sinks = ResolvePlan("routed:64,sinks:4,staggered", Model(2));
  EXPECT_EQ(sinks.layers[1].span, (Span{64, 4, true, 16}));
  EXPECT_EQ(sinks.layers[1].SpanText(), "full | blocks of 64 from 16 + 4 sinks");
  EXPECT_EQ(offsets(ResolvePlan("full,layer1:swa:8,layer3:heads:0:8,chunked", Model(4))), "- 0 - 0 ");
  EXPECT_NE(Rejection("full,chunked").find("has none"), std::string::npos);
  EXPECT_NE(Rejection("swa:8,chunked,staggered").find("given twice"), std::string::npos);
  EXPECT_NE(Rejection("swa:8,staggered:2").find("takes no arguments"), std::string::npos);
  EXPECT_NE(Rejection("swa:8,sinks:2,pos:cache,chunked").find("absolute positions"), std::string::npos);
  EXPECT_NE(Rejection("linear:64,chunked").find("slides"), std::string::npos);
}

TEST(Plan, NopeOnFullLayers) {
  const AttentionPlan p = ResolvePlan("hybrid:1:1,window:8,nope:full", Model(4));
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(p.layers[i].rope.enabled, p.layers[i].kind == LayerKind::kWindow);
  const AttentionPlan all = ResolvePlan("swa:8,nope:all", Model(2));
  EXPECT_FALSE(all.layers[0].rope.enabled);
  const AttentionPlan win = ResolvePlan("hybrid:1:1,window:8,nope:window", Model(2));
  EXPECT_FALSE(win.layers[0].rope.enabled);
  EXPECT_TRUE(win.layers[1].rope.enabled);
  EXPECT_DOUBLE_EQ(win.layers[1].rope.base, 10000);
}

TEST(Plan, RopeBaseAndScalingPerLayerKind) {
  ModelAttentionDefaults m = Model(6);
  m.rope.scaling.kind = RopeScaling::Kind::kYarn;
  m.rope.scaling.factor = 4;
  // Gemma 3: base 10K on local layers, 1M on global ones.
  const AttentionPlan gemma = ResolvePlan("hybrid:5:1,window:8,rope-base:full:1000000", m);
  EXPECT_DOUBLE_EQ(gemma.layers[0].rope.base, 10000);
  EXPECT_DOUBLE_EQ(gemma.layers[5].rope.base, 1000000);
  // Mellum 2: YaRN on the full layers only.
  const AttentionPlan mellum = ResolvePlan("hybrid:3:1,window:8,rope-scaling:full", m);
  EXPECT_EQ(mellum.layers[0].rope.scaling.kind, RopeScaling::Kind::kNone);
  EXPECT_EQ(mellum.layers[3].rope.scaling.kind, RopeScaling::Kind::kYarn);
  EXPECT_DOUBLE_EQ(mellum.layers[3].rope.scaling.factor, 4);
  const AttentionPlan none = ResolvePlan("full,rope-scaling:none,rope-base:window:500", m);
  EXPECT_EQ(none.layers[0].rope.scaling.kind, RopeScaling::Kind::kNone);
  EXPECT_DOUBLE_EQ(none.layers[0].rope.base, 10000);  // no window layers to rebase
  const AttentionPlan plain = ResolvePlan("swa:8", m);
  EXPECT_EQ(plain.layers[0].rope.scaling.kind, RopeScaling::Kind::kYarn);
}

TEST(Plan, CachePositionsOnWindowLayersWithSinks) {
  const AttentionPlan p = ResolvePlan("hybrid:1:1,window:8,sinks:2,pos:cache", Model(2));
  EXPECT_EQ(p.layers[0].position_mode, PositionMode::kCache);
  EXPECT_EQ(p.layers[1].position_mode, PositionMode::kAbsolute);  // full layers keep every key
  EXPECT_EQ(ResolvePlan("swa:8,sinks:2", Model(1)).layers[0].position_mode, PositionMode::kAbsolute);
}

TEST(Plan, DescribeListsEveryLayer) {
  const std::string d = ResolvePlan("hybrid:1:1,window:8,sinks:2", Model(2)).Describe();
  EXPECT_NE(d.find("layer 0"), std::string::npos) << d;
  EXPECT_NE(d.find("window 8 + 2 sinks"), std::string::npos) << d;
  EXPECT_NE(d.find("layer 1\tfull"), std::string::npos) << d;
}

TEST(Plan, RejectsNonsense) {
  struct Case {
    const char* spec;
    const char* message;  // a piece of the expected message
  };
  const Case cases[] = {
      {"full,sinks:4", "sinks need a window"},
      {"sinks:4", "sinks need a window"},  // the model has no window layers
      {"swa:0", "must be positive"},
      {"swa:0,sinks:2", "must be positive"},
      {"hybrid:3:1,window:0", "must be positive"},
      {"full,layer2:swa:0", "must be positive"},
      {"swa:-4", "non-negative integer"},
      {"swa:abc", "non-negative integer"},
      {"swa:12x", "non-negative integer"},
      {"swa", "expected swa:W"},
      {"swa:8:9", "expected swa:W"},
      {"hybrid:3", "expected hybrid:A:B"},
      {"hybrid:0:0", "must be positive"},
      {"hybrid:0:1", "must be positive"},
      {"sliding:8", "unknown word 'sliding:8'"},
      {"full,foo", "unknown word 'foo'"},
      {"swa:8,,sinks:2", "empty item"},
      {"swa:8,", "empty item"},
      {"full,swa:8", "comes once, first"},
      {"sinks:2,swa:8", "comes once, first"},
      {"full:3", "takes no arguments"},
      {"swa:8,window:16", "given twice"},
      {"hybrid:1:1,window:8,window:16", "given twice"},
      {"swa:8,sinks:1,sinks:2", "given twice"},
      {"full,window:64", "no window layers"},
      {"nope:half", "expected nope:full"},
      {"nope", "expected nope:full"},
      {"full,layer8:swa", "layer8 does not exist"},
      {"full,layerx:full", "layer index"},
      {"full,layer1:half", "expected layerN:full"},
      {"full,layer1:full,layer1:swa", "given twice"},
      {"full,rope-base:full:1", "number > 1"},
      {"full,rope-base:full:abc", "number > 1"},
      {"full,rope-base:all:10000", "expected rope-base:full:B"},
      {"full,rope-base:full", "expected rope-base:full:B"},
      {"full,rope-base:full:1e4,rope-base:full:1e5", "given twice"},
      {"full,rope-scaling:yarn", "expected rope-scaling:full"},
      {"swa:8,pos:cache", "add sinks:S"},
      {"full,pos:cache", "add sinks:S"},
      {"swa:8,sinks:2,pos:stream", "expected pos:cache"},
      {"routed", "expected routed:W"},
      {"routed:0", "must be positive"},
      {"routed:8,window:16", "given twice"},
      {"full,layer1:routed:x", "non-negative integer"},
  };
  for (const Case& c : cases) {
    const std::string msg = Rejection(c.spec);
    EXPECT_NE(msg.find(c.message), std::string::npos) << "spec '" << c.spec << "' gave: " << msg;
    EXPECT_NE(msg.find(c.spec[0] == '\0' ? "" : "attention plan"), std::string::npos) << msg;
  }
}

// A model of n layers with 4 KV heads.
ModelAttentionDefaults FourHeads(int32_t n_layers, int32_t sliding_window = 0) {
  ModelAttentionDefaults m = Model(n_layers, sliding_window);
  m.n_kv_heads = 4;
  return m;
}

TEST(Plan, PerHeadLayersOnTheCommandLine) {
  const AttentionPlan p = ResolvePlan("full,window:16,sinks:4,layer1:heads:3+0,layer2:heads:1:8", FourHeads(3));
  EXPECT_EQ(Kinds(p), "F H03/16+4 H1/8+4");
  EXPECT_EQ(p.n_kv_heads, 4);
  EXPECT_EQ(p.layers[1].kind, LayerKind::kPerHead);
  EXPECT_TRUE(p.layers[1].HeadSpan(0).full());
  EXPECT_EQ(p.layers[1].HeadSpan(1), (Span{16, 4}));
  EXPECT_TRUE(p.HasPerHeadLayers());
  EXPECT_TRUE(p.HasWindowLayers());  // their rings
  EXPECT_EQ(p.FullHeads(), (std::vector<std::vector<int32_t>>{{}, {0, 3}, {1}}));
  EXPECT_EQ(p.layers[1].SpanText(), "KV heads 0,3 full | window 16 + 4 sinks");
  EXPECT_NE(p.Describe().find("per-head\tKV heads 0,3 full | window 16 + 4 sinks"), std::string::npos);
  // Every head full is a full layer, and a per-head layer keeps the full
  // layers' RoPE settings (nope:full).
  EXPECT_EQ(Kinds(ResolvePlan("swa:8,layer0:heads:0+1+2+3", FourHeads(2))), "F 8");
  EXPECT_FALSE(ResolvePlan("swa:8,layer0:heads:2,nope:full", FourHeads(1)).layers[0].rope.enabled);
}

TEST(Plan, PerHeadLayersFromAFile) {
  const std::string path = (std::filesystem::temp_directory_path() / "swan_plan_test_heads.json").string();
  std::ofstream(path) << R"({"share": 0.25, "full_heads": [[], [2], [0, 1, 2, 3]]})";
  const AttentionPlan p = ResolvePlan("full,window:32,heads:" + path, FourHeads(3));
  EXPECT_EQ(Kinds(p), "32 H2/32 F");
  // A layer override wins over the file.
  EXPECT_EQ(Kinds(ResolvePlan("full,window:32,heads:" + path + ",layer1:full", FourHeads(3))), "32 F F");
  // The model's own window serves when the plan gives none.
  EXPECT_EQ(Kinds(ResolvePlan("model,heads:" + path, FourHeads(3, 64))), "64 H2/64 F");
  EXPECT_THROW(ResolvePlan("full,window:32,heads:" + path, FourHeads(4)), std::invalid_argument);  // 3 layers of 4
  std::ofstream(path) << R"({"full_heads": [[0], [7], []]})";
  EXPECT_THROW(ResolvePlan("full,window:32,heads:" + path, FourHeads(3)), std::invalid_argument);
  std::ofstream(path) << R"({"heads": 3})";
  EXPECT_THROW(ResolvePlan("full,window:32,heads:" + path, FourHeads(3)), std::invalid_argument);
  std::remove(path.c_str());
  EXPECT_THROW(ResolvePlan("full,window:32,heads:" + path, FourHeads(3)), std::invalid_argument);  // no file
  EXPECT_THROW(ResolvePlan("full,window:32,heads:/dev/zero", FourHeads(3)), std::invalid_argument);
  EXPECT_THROW(ResolvePlan("full,window:32,heads:/tmp", FourHeads(3)), std::invalid_argument);
}

TEST(Plan, PerHeadNonsenseIsRefused) {
  auto rejection = [](const std::string& spec) {
    try {
      ResolvePlan(spec, FourHeads(2));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(rejection("full,layer0:heads:4,window:8").find("KV head 4 is out of range"), std::string::npos);
  EXPECT_NE(rejection("full,layer0:heads:1+1,window:8").find("twice"), std::string::npos);
  EXPECT_NE(rejection("full,layer0:heads:1").find("must give one"), std::string::npos);  // no window
  EXPECT_NE(rejection("full,layer0:heads:,window:8").find("KV head"), std::string::npos);
  EXPECT_NE(rejection("full,layer0:heads:x,window:8").find("KV head"), std::string::npos);
  EXPECT_NE(rejection("full,heads:").find("heads:FILE.json"), std::string::npos);
}

TEST(Plan, ParserAloneRejectsSinksOnFull) {
  EXPECT_THROW(ParsePlanSpec("full,sinks:2"), std::invalid_argument);
  EXPECT_NO_THROW(ParsePlanSpec("full,sinks:0"));
  const PlanSpec p = ParsePlanSpec("hybrid:3:1,window:64,layer3:full,nope:full");
  EXPECT_EQ(p.preset, PlanSpec::Preset::kHybrid);
  EXPECT_EQ(p.hybrid_window_layers, 3);
  EXPECT_EQ(p.hybrid_full_layers, 1);
  EXPECT_EQ(p.window, 64);
  EXPECT_TRUE(p.nope_full);
  EXPECT_EQ(p.overrides.at(3).kind, LayerKind::kFull);
}

}  // namespace
}  // namespace swan
