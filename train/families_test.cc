// Every family trains as the inference model runs it: for Llama, Mistral,
// Qwen2, Qwen3 and Gemma 3 on a tiny model under full, hybrid and routed plans,
// the exported directory keeps the architecture and every tensor of the
// family's table, loads back into the trainer with the same parameters,
// and the inference decoder gives the training forward's logits, whole and
// one token at a time.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "train/hf_io.h"
#include "train/model.h"

namespace swan {
namespace {

struct FamilyCase {
  const char* architecture;
  const char* plan;
};

std::string CaseName(const ::testing::TestParamInfo<FamilyCase>& info) {
  std::string name = std::string(info.param.architecture) + "_" + info.param.plan;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

class Family : public ::testing::TestWithParam<FamilyCase> {};

TEST_P(Family, ExportRunsWithTheTrainingLogits) {
  const FamilyCase& fc = GetParam();
  ModelConfig config = PresetConfig("tiny", 32, 40, fc.architecture);
  config.n_heads = 4;
  config.n_kv_heads = 2;
  config.tie_word_embeddings = std::string(fc.architecture) == "Gemma3ForCausalLM";
  if (config.query_pre_attn_scalar > 0) config.query_pre_attn_scalar = 12;  // not head_dim: the scale shows
  const AttentionPlan plan = ResolvePlan(fc.plan, AttentionDefaultsFor(config));
  TrainModel model(config, plan);
  model.InitRandom(51);
  std::mt19937_64 rng(52);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  for (float& p : model.params()) p += noise(rng);
  // Routers that split the tokens between the branches.
  for (const ParamTensor& t : model.tensors())
    if (t.role == TensorRole::kRouterBias) model.params()[size_t(t.offset)] = 0.0f;

  const std::string dir = (std::filesystem::path(::testing::TempDir()) /
                           ("swan_family_" + CaseName({GetParam(), 0}) + "_" + std::to_string(::getpid())))
                              .string();
  std::filesystem::remove_all(dir);
  ExportHfDirectory(dir, model, ExportOptions{});

  // The architecture and every tensor of the table, nothing else.
  const ModelConfig c = LoadModelConfig(dir);
  EXPECT_EQ(c.architecture, fc.architecture);
  const TensorStore store = TensorStore::OpenDirectory(dir);
  std::set<std::string> names;
  for (const ParamTensor& t : model.tensors()) names.insert(t.name);
  const std::vector<std::string> stored = store.Names();
  EXPECT_EQ(std::set<std::string>(stored.begin(), stored.end()), names);
  TrainModel back(c, ResolvePlan(c.attention_plan, AttentionDefaultsFor(c)));
  EXPECT_EQ(LoadHfWeights(back, dir), 0);
  EXPECT_EQ(back.params(), model.params());

  const int64_t T = 24;
  std::vector<int32_t> tokens(T), targets(T, 0), pos(T);
  for (int64_t i = 0; i < T; ++i) tokens[size_t(i)] = int32_t(rng() % 32), pos[size_t(i)] = int32_t(i);
  model.Forward(tokens.data(), targets.data(), 1, T);
  if (plan.HasRoutedLayers()) {
    ASSERT_GT(model.full_ratio(), 0.0);
    ASSERT_LT(model.full_ratio(), 1.0);
  }
  auto loaded = LoadModel(dir);
  const AttentionPlan own = loaded->ResolvePlan("");
  for (const int64_t piece : {T, int64_t(1)}) {
    auto session = loaded->NewSession(own);
    std::vector<float> logits(size_t(T) * 32);  // [T, vocab]
    for (int64_t at = 0; at < T; at += piece)
      loaded->Forward(logits.data() + at * 32, Batch{tokens.data() + at, pos.data() + at, piece, true}, *session);
    double worst = 0;
    for (size_t i = 0; i < logits.size(); ++i) worst = std::max(worst, double(std::abs(logits[i] - model.logits()[i])));
    EXPECT_LT(worst, 1e-4) << "pieces of " << piece;
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    EveryFamily, Family,
    ::testing::Values(FamilyCase{"LlamaForCausalLM", "full"}, FamilyCase{"LlamaForCausalLM", "routed:4,sinks:1"},
                      FamilyCase{"MistralForCausalLM", "swa:6"}, FamilyCase{"Qwen2ForCausalLM", "full"},
                      FamilyCase{"Qwen2ForCausalLM", "hybrid:1:1,window:5,sinks:1"},
                      FamilyCase{"Qwen2ForCausalLM", "routed:4"}, FamilyCase{"Qwen3ForCausalLM", "full"},
                      FamilyCase{"Qwen3ForCausalLM", "hybrid:1:1,window:5,sinks:1"},
                      FamilyCase{"Gemma3ForCausalLM", "model"},
                      FamilyCase{"Gemma3ForCausalLM", "hybrid:1:1,window:5,sinks:1,nope:full"},
                      FamilyCase{"Gemma3ForCausalLM", "routed:4,sinks:1"}),
    CaseName);

// A family's tensor table is what the inference loader reads: a checkpoint
// without one of them is refused by name.
TEST(FamilyTable, TheLoaderNeedsEveryTensor) {
  ModelConfig config = PresetConfig("tiny", 32, 40, "Gemma3ForCausalLM");
  TrainModel model(config, ResolvePlan("model", AttentionDefaultsFor(config)));
  model.InitRandom(3);
  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / ("swan_family_table_" + std::to_string(::getpid()))).string();
  ExportHfDirectory(dir, model, ExportOptions{});
  // The same file without layer 1's k_norm.
  std::vector<TensorHeader> headers;
  std::vector<std::vector<float>> values;  // [tensors][numel]
  {
    const TensorStore store = TensorStore::OpenDirectory(dir);
    for (const ParamTensor& t : model.tensors()) {
      if (t.name == "model.layers.1.self_attn.k_norm.weight") continue;
      headers.push_back({t.name, "F32", t.shape, size_t(t.numel) * 4});
      values.push_back(store.ReadF32(t.name, t.shape));
    }
  }
  const std::string bytes = SafetensorsBytes(headers, [&](size_t i, std::string& out) {
    out.append(reinterpret_cast<const char*>(values[i].data()), values[i].size() * 4);
  });
  std::filesystem::remove(dir + "/model.safetensors");
  std::ofstream(dir + "/model.safetensors", std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  try {
    LoadModel(dir);
    ADD_FAILURE() << "a Gemma 3 checkpoint without a k_norm loaded";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.1.self_attn.k_norm.weight"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace swan
