#include "model/config.h"

#include <gtest/gtest.h>

#include <functional>

#include "model/model.h"
#include "model/test_files.h"

namespace swan {
namespace {

namespace fs = std::filesystem;

std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception";
  return "";
}

const char* kLlama = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100,
  "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
  "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
  "bos_token_id": 1, "eos_token_id": [2, 3], "sliding_window": null})";

TEST(Config, ReadsLlamaFieldsAndDefaults) {
  const ModelConfig c = ParseModelConfig(kLlama, R"({"temperature": 0.6, "top_p": 0.9, "eos_token_id": 7})", "t");
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_EQ(c.head_dim, 16);  // hidden / heads
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.rope.base, 500000.0);
  EXPECT_EQ(c.rope.scaling.kind, RopeScaling::Kind::kLlama3);
  EXPECT_EQ(c.rope.scaling.factor, 8.0);
  EXPECT_EQ(c.rope.scaling.original_max_position_embeddings, 8192);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{2, 3, 7}));
  EXPECT_DOUBLE_EQ(c.generation.temperature, 0.6);
  EXPECT_DOUBLE_EQ(c.generation.top_p, 0.9);
}

// Per-frequency RoPE factors (a GGUF file's rope_freqs) are written into
// config.json as transformers' longrope with one set of factors, and read
// back; longrope with two sets, or an attention factor, is refused.
TEST(Config, FrequencyFactorsTravelAsLongrope) {
  ModelConfig c = ParseModelConfig(kLlama, "", "t");
  c.rope.scaling = RopeScaling{};
  c.rope.scaling.kind = RopeScaling::Kind::kFrequencyFactors;
  c.rope.scaling.frequency_factors = {1, 1.5, 4, 8, 8, 8, 8, 8};
  const ModelConfig back = ParseModelConfig(ModelConfigJson(c), "", "written");
  EXPECT_EQ(back.rope.scaling.kind, RopeScaling::Kind::kFrequencyFactors);
  EXPECT_EQ(back.rope.scaling.frequency_factors, c.rope.scaling.frequency_factors);
  std::string two_sets = kLlama;
  two_sets.replace(two_sets.find("{\"rope_type\": \"llama3\""), 0,
                   R"({"rope_type": "longrope", "short_factor": [1, 2], "long_factor": [1, 3]}, "was": )");
  EXPECT_NE(ErrorOf([&] { ParseModelConfig(two_sets, "", "cfg.json"); }).find("long_factor equal to short_factor"),
            std::string::npos);
}

TEST(Config, RejectsMissingAndBadFields) {
  EXPECT_NE(ErrorOf([] {
              ParseModelConfig(R"({"hidden_size": 64})", "", "cfg.json");
            }).find("cfg.json: missing field \"intermediate_size\""),
            std::string::npos);
  EXPECT_NE(ErrorOf([] {
              ParseModelConfig(R"({"hidden_size": "big", "intermediate_size": 1})", "", "cfg.json");
            }).find("\"hidden_size\" has the wrong type"),
            std::string::npos);
  // Whole floats are integers; fractions, out-of-range values (1e26 as an
  // int used to be undefined behaviour) and bad list entries are refused.
  std::string whole = kLlama;
  whole.replace(whole.find("\"hidden_size\": 64"), 17, "\"hidden_size\": 64.0");
  EXPECT_EQ(ParseModelConfig(whole, "", "c").hidden_size, 64);
  for (const char* bad : {"64.5", "1.7e26", "-1e300", "4294967297"}) {
    std::string cfg = kLlama;
    cfg.replace(cfg.find("\"num_hidden_layers\": 2"), 22, std::string("\"num_hidden_layers\": ") + bad);
    EXPECT_NE(
        ErrorOf([&] { ParseModelConfig(cfg, "", "c"); }).find("\"num_hidden_layers\" is not a whole number in range"),
        std::string::npos)
        << bad;
  }
  std::string bad_eos = kLlama;
  bad_eos.replace(bad_eos.find("[2, 3]"), 6, "[2, 3e30]");
  EXPECT_NE(ErrorOf([&] { ParseModelConfig(bad_eos, "", "c"); }).find("\"eos_token_id\" holds an entry"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { ParseModelConfig("{not json", "", "cfg.json"); }).find("not valid JSON"), std::string::npos);
  std::string bad_heads = kLlama;
  bad_heads.replace(bad_heads.find("\"num_key_value_heads\": 2"), 24, "\"num_key_value_heads\": 3");
  EXPECT_NE(ErrorOf([&] { ParseModelConfig(bad_heads, "", "c"); }).find("multiple"), std::string::npos);
  std::string bad_rope = kLlama;
  bad_rope.replace(bad_rope.find("llama3"), 6, "dynamo");
  EXPECT_NE(ErrorOf([&] { ParseModelConfig(bad_rope, "", "c"); }).find("'dynamo'"), std::string::npos);
}

TEST(Config, LoadModelRejectsUnknownArchitecture) {
  const fs::path dir = test::TempDir("cfg_arch");
  std::string cfg = kLlama;
  cfg.replace(cfg.find("LlamaForCausalLM"), 16, "FalconForCausalLM");
  test::WriteFile(dir / "config.json", cfg);
  const std::string msg = ErrorOf([&] { LoadModel(dir.string()); });
  EXPECT_NE(msg.find("FalconForCausalLM"), std::string::npos) << msg;
  EXPECT_NE(msg.find("config.json"), std::string::npos) << msg;
  fs::remove_all(dir);
}

TEST(Config, LoadModelNamesMissingTensor) {
  const fs::path dir = test::TempDir("cfg_missing");
  test::WriteFile(dir / "config.json", kLlama);
  test::WriteFile(
      dir / "model.safetensors",
      test::SafetensorsBytes({test::F32Tensor("model.embed_tokens.weight", {100, 64}, std::vector<float>(6400, 0.f))}));
  const std::string msg = ErrorOf([&] { LoadModel(dir.string()); });
  EXPECT_NE(msg.find("missing tensor 'model.layers.0.input_layernorm.weight'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir.string()), std::string::npos) << msg;
  // No config at all.
  fs::remove(dir / "config.json");
  EXPECT_NE(ErrorOf([&] { LoadModel(dir.string()); }).find("no config.json"), std::string::npos);
  // A file that is not GGUF (a safetensors file given alone), and no file at all.
  const std::string file = (dir / "model.safetensors").string();
  EXPECT_NE(ErrorOf([&] { LoadModel(file); }).find("not a model: a GGUF file begins with \"GGUF\""), std::string::npos);
  EXPECT_NE(ErrorOf([&] { LoadModel((dir / "absent").string()); }).find("no such file or directory"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(Config, RejectsNonPositiveEpsAndContext) {
  std::string eps = kLlama;
  eps.replace(eps.find("\"rms_norm_eps\": 1e-5"), 20, "\"rms_norm_eps\": 0.0");
  EXPECT_NE(ErrorOf([&] { ParseModelConfig(eps, "", "c"); }).find("\"rms_norm_eps\" must be positive"),
            std::string::npos);
  std::string ctx = kLlama;
  ctx.replace(ctx.find("\"vocab_size\": 100"), 17, "\"vocab_size\": 100, \"max_position_embeddings\": 0");
  EXPECT_NE(ErrorOf([&] { ParseModelConfig(ctx, "", "c"); }).find("\"max_position_embeddings\" must be positive"),
            std::string::npos);
  // A window of 0 or -5 ran as full attention, silently.
  for (const char* window : {"0", "-5"}) {
    std::string swa = kLlama;
    swa.replace(swa.find("\"sliding_window\": null"), 22, std::string("\"sliding_window\": ") + window);
    EXPECT_NE(ErrorOf([&] {
                ParseModelConfig(swa, "", "c");
              }).find(std::string("\"sliding_window\" must be positive (null for none), got ") + window),
              std::string::npos);
  }
}

// stories260K's 5-layer weights under a config that says 3 layers: the
// tensors of layers 3 and 4 would go unused; the load is refused.
TEST(Config, LoadModelRefusesTensorsTheConfigDoesNotUse) {
  const fs::path dir = test::TempDir("cfg_unused");
  fs::copy(test::Stories260K(), dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  std::string cfg = test::ReadFile(dir / "config.json");
  cfg.replace(cfg.find("\"num_hidden_layers\": 5"), 22, "\"num_hidden_layers\": 3");
  test::WriteFile(dir / "config.json", cfg);
  const std::string msg = ErrorOf([&] { LoadModel(dir.string()); });
  EXPECT_NE(msg.find("holds 18 tensors that config.json's shape does not use (model.layers.3."), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("different models"), std::string::npos) << msg;
  fs::remove_all(dir);
  EXPECT_NO_THROW(LoadModel(test::Stories260K()));  // all 5 layers read
}

}  // namespace
}  // namespace swan
