// GGUF: the parser on well-formed and broken files; models of each family
// exported in llama.cpp's layout, F32 and Q8_0, and loaded back to the
// logits of their safetensors.
#include "model/gguf.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "model/gguf_export.h"
#include "model/gguf_test_util.h"
#include "model/gguf_weights.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "model/test_files.h"
#include "model/tiny_reference.h"
#include "ops/dequant_blocks.h"
#include "util/f16.h"

namespace swan {
namespace {

using test::GgufParts;
using test::Logits;
using test::MaxDiff;
using test::PartsOf;

std::string FloatBytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

std::string SmallFile() {
  GgufValue tokens;
  tokens.type = GgufValue::kArray;
  tokens.element = GgufValue::kString;
  tokens.strings = {"<s>", "a", "b"};
  GgufValue scores;
  scores.type = GgufValue::kArray;
  scores.element = GgufValue::kF32;
  scores.numbers = {0, -1.5, -2};
  return GgufBytes(
      {{"general.architecture", GgufString("llama")},
       {"llama.block_count", GgufNumber(GgufValue::kU32, 2)},
       {"tokenizer.ggml.tokens", tokens},
       {"tokenizer.ggml.scores", scores},
       {"llama.rope.freq_base", GgufNumber(GgufValue::kF32, 500000)}},
      {{"a.weight", 0, {3, 2}, FloatBytes({1, 2, 3, 4, 5, 6})}, {"b.weight", 8, {32}, std::string(34, '\1')}});
}

TEST(Gguf, ReadsWhatItWrites) {
  const std::string bytes = SmallFile();
  const GgufFile f(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "small.gguf");
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.String("general.architecture"), "llama");
  EXPECT_EQ(f.Int("llama.block_count"), 2);
  EXPECT_EQ(f.Float("llama.rope.freq_base"), 500000.0);
  EXPECT_EQ(f.Find("tokenizer.ggml.tokens")->strings, (std::vector<std::string>{"<s>", "a", "b"}));
  EXPECT_EQ(f.Find("tokenizer.ggml.scores")->numbers, (std::vector<double>{0, -1.5, -2}));
  ASSERT_EQ(f.tensors().size(), 2u);
  const GgufTensor* a = f.Tensor("a.weight");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->ne, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(a->n_bytes, 24u);
  float v[6];
  std::memcpy(v, a->data, sizeof(v));
  EXPECT_EQ(v[5], 6.0f);
  EXPECT_EQ((a->data - reinterpret_cast<const uint8_t*>(bytes.data())) % 32, 0);
  EXPECT_EQ(f.Tensor("b.weight")->n_bytes, 34u);
  EXPECT_EQ(GgmlTypeName(8), "Q8_0");
  EXPECT_THROW(f.String("llama.block_count"), std::runtime_error);
  EXPECT_THROW(f.Int("missing"), std::runtime_error);
}

// Every cut of a file is refused with a message, never read past its end.
TEST(Gguf, RefusesEveryTruncation) {
  const std::string bytes = SmallFile();
  const size_t data_end = bytes.size() - 32 + 2;  // b.weight's 34 bytes end here
  for (size_t n = 0; n < data_end; ++n) {
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + ptrdiff_t(n));  // [n] a copy, so ASan sees its end
    EXPECT_THROW(GgufFile(cut.data(), cut.size(), "cut.gguf"), std::runtime_error) << n << " bytes";
  }
}

TEST(Gguf, RefusesBrokenFields) {
  const std::string good = SmallFile();
  auto refuses = [](std::string bytes, const std::string& why) {
    try {
      GgufFile(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "bad.gguf");
      ADD_FAILURE() << "accepted: " << why;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  std::string b = good;
  b[0] = 'X';
  refuses(b, "does not start with");
  b = good;
  b[4] = 7;  // version 7
  refuses(b, "version 7");
  b = good;
  b[8] = 99;  // 99 tensors
  refuses(b, "99 tensors cannot fit");
  const std::string unknown = GgufBytes({}, {{"t", 5, {4}, std::string(16, '\0')}});  // type 5 does not exist
  refuses(unknown, "unknown type 5");
  const std::string bad_rows = GgufBytes({}, {{"t", 8, {33}, std::string(40, '\0')}});
  refuses(bad_rows, "not a multiple");
}

// What loading `bytes`, written into dir as a GGUF file, throws; "loaded" when it loads.
std::string LoadError(const std::filesystem::path& dir, const std::string& bytes) {
  const std::string path = (dir / "refused.gguf").string();
  test::WriteFile(path, bytes);
  try {
    LoadModel(path);
    return "loaded";
  } catch (const std::runtime_error& e) {
    return e.what();
  }
}

// WeightSpans: each layer's 7 projections and the head, apart, as many
// bytes as WeightBytes counts but for its float32 vectors (norms, biases).
void ExpectSpansHoldProjections(const LanguageModel& model) {
  const std::vector<ByteSpan> spans = model.WeightSpans();
  ASSERT_EQ(spans.size(), size_t(7 * model.config().n_layers + 1));
  size_t bytes = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    ASSERT_NE(spans[i].data, nullptr) << "span " << i;
    bytes += spans[i].bytes;
    for (size_t j = 0; j < i; ++j) {
      const auto* a = static_cast<const uint8_t*>(spans[i].data);
      const auto* b = static_cast<const uint8_t*>(spans[j].data);
      EXPECT_TRUE(a + spans[i].bytes <= b || b + spans[j].bytes <= a) << "spans " << j << " and " << i << " overlap";
    }
  }
  EXPECT_LE(bytes, model.WeightBytes());
  EXPECT_GE(double(bytes), 0.9 * double(model.WeightBytes()));
}

// Written as GGUF and read back, a model gives the logits it gave from its
// safetensors: the loader undoes what the export (llama.cpp's layout) did.
void ExpectRoundTrip(const std::string& dir, const std::string& name, double tol) {
  for (WeightType type : {WeightType::kF32, WeightType::kQ8_0, WeightType::kQ4_1}) {
    SCOPED_TRACE(name + " " + WeightTypeName(type));
    LoadOptions options;
    if (type != WeightType::kF32) options.weights = type;
    const auto hf = LoadModel(dir, options);
    const std::string path = (test::TempDir("gguf_round_trip") / (name + ".gguf")).string();
    test::WriteFile(path, HfToGgufBytes(dir, type));
    const auto gguf = LoadModel(path);
    EXPECT_EQ(gguf->config().architecture, hf->config().architecture);
    EXPECT_EQ(gguf->WeightBytes(), hf->WeightBytes());
    ExpectSpansHoldProjections(*gguf);
    // the same values in the same order: the same logits up to summation order
    EXPECT_LE(MaxDiff(Logits(*gguf, 24), Logits(*hf, 24)), tol);
  }
}

TEST(Gguf, EveryFamilyRoundTrips) {
  ExpectRoundTrip(test::Stories260K(), "llama", 1e-5);
  const test::TinyLlamaShape shape{61, 32, 64, 4, 2, 8, 2};
  const auto qwen2 = test::TempDir("gguf_qwen2");
  test::TinyCheckpoint q(3);
  test::AddTinyLlamaWeights(q, shape, /*qkv_bias=*/true);
  q.Write(qwen2, R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 32, "intermediate_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 61,
    "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0})");
  ExpectRoundTrip(qwen2.string(), "qwen2", 1e-4);
  const auto gemma3 = test::TempDir("gguf_gemma3");
  test::TinyCheckpoint g(4);
  test::AddTinyGemma3Weights(g, shape);
  g.Write(gemma3, R"({"architectures": ["Gemma3ForCausalLM"], "hidden_size": 32, "intermediate_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
    "vocab_size": 61, "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
    "rope_local_base_freq": 10000.0, "sliding_window": 4, "sliding_window_pattern": 2,
    "query_pre_attn_scalar": 8, "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": true})");
  ExpectRoundTrip(gemma3.string(), "gemma3", 1e-4);
}

// The export holds llama.cpp's layout: a "llama" q/k head's row 2i + j is
// Hugging Face's row j * head_dim / 2 + i; Gemma 3's norms hold 1 + w.
TEST(Gguf, ExportUsesLlamaCppsLayout) {
  const std::string path = (test::TempDir("gguf_layout") / "stories.gguf").string();
  test::WriteFile(path, HfToGgufBytes(test::Stories260K(), WeightType::kF32));
  const GgufFile file(path);
  const TensorStore store = TensorStore::OpenDirectory(test::Stories260K());
  const TensorInfo& hf = store.Info("model.layers.1.self_attn.k_proj.weight");  // [4 heads * 8, 64]
  const GgufTensor* k = file.Tensor("blk.1.attn_k.weight");
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(k->ne, (std::vector<int64_t>{64, 32}));
  const size_t row = 64 * sizeof(float);
  for (int64_t h = 0; h < 4; ++h)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 2; ++j)
        EXPECT_EQ(std::memcmp(k->data + (h * 8 + 2 * i + j) * row, hf.data + (h * 8 + j * 4 + i) * row, row), 0)
            << "head " << h << " pair " << i << " half " << j;
  EXPECT_EQ(file.Tensor("output.weight"), nullptr);  // tied
  EXPECT_EQ(file.Int("llama.attention.head_count_kv"), 4);
}

// A "llama" file whose matrices are of `formats` in turn (random blocks of
// weight-sized values) and the F32 file of the values they dequantize to:
// bytes of each.
struct DequantPair {
  std::string blocks, f32;
};

// ggml's id of each format.
uint32_t GgmlTypeOf(DequantFormat f) {
  switch (f) {
    case DequantFormat::kQ5_0: return uint32_t(GgmlType::kQ5_0);
    case DequantFormat::kQ5_1: return uint32_t(GgmlType::kQ5_1);
    case DequantFormat::kQ4_K: return uint32_t(GgmlType::kQ4_K);
    case DequantFormat::kQ5_K: return uint32_t(GgmlType::kQ5_K);
    case DequantFormat::kQ6_K: return uint32_t(GgmlType::kQ6_K);
    case DequantFormat::kQ3_K: return uint32_t(GgmlType::kQ3_K);
  }
  return 0;
}

DequantPair DequantFiles(const std::string& dir, const std::vector<DequantFormat>& formats) {
  const std::string f32 = HfToGgufBytes(dir, WeightType::kF32);
  const GgufFile file(reinterpret_cast<const uint8_t*>(f32.data()), f32.size(), "f32.gguf");
  std::vector<std::pair<std::string, GgufValue>> metadata(file.metadata().begin(), file.metadata().end());
  std::vector<GgufTensorBytes> block_tensors, f_tensors;
  std::mt19937 rng(11);
  int next = 0;
  for (const GgufTensor& t : file.tensors()) {
    GgufTensorBytes k{t.name, t.type, t.ne, std::string(reinterpret_cast<const char*>(t.data), t.n_bytes)};
    GgufTensorBytes f = k;
    if (t.ne.size() == 2 && t.ne[0] % 256 == 0) {
      const DequantFormat type = formats[size_t(next++) % formats.size()];
      const int64_t blocks = t.numel() / DequantBlockValues(type);
      const size_t block_bytes = DequantBlockBytes(type);
      std::string bytes(size_t(blocks) * block_bytes, '\0');  // [blocks, block_bytes]
      for (char& c : bytes) c = char(rng());
      for (int64_t b = 0; b < blocks; ++b) {  // scales for values of about 0.03
        uint8_t* block = reinterpret_cast<uint8_t*>(bytes.data()) + size_t(b) * block_bytes;
        const bool k_quant = DequantBlockValues(type) == 256;
        const bool six = type == DequantFormat::kQ6_K, three = type == DequantFormat::kQ3_K;
        const uint16_t d = F32ToF16(six ? 3e-5f : three ? 2.5e-4f : k_quant ? 1e-4f : 4e-3f);
        const uint16_t min = F32ToF16(k_quant ? 1e-3f : -0.03f);
        std::memcpy(block + (six ? 208 : three ? 108 : 0), &d, 2);
        if (!six && !three && type != DequantFormat::kQ5_0) std::memcpy(block + 2, &min, 2);
      }
      std::vector<float> values(size_t(t.numel()));  // [numel]
      const size_t row_bytes = size_t(t.ne[0] / DequantBlockValues(type)) * block_bytes;
      for (int64_t r = 0; r < t.ne[1]; ++r)
        DequantizeFormatRow(type, values.data() + r * t.ne[0],
                            reinterpret_cast<const uint8_t*>(bytes.data()) + size_t(r) * row_bytes, t.ne[0]);
      k.type = GgmlTypeOf(type);
      k.bytes = bytes;
      f.bytes = FloatBytes(values);
    }
    block_tensors.push_back(k);
    f_tensors.push_back(f);
  }
  return {GgufBytes(metadata, block_tensors), GgufBytes(metadata, f_tensors)};
}

// A tiny Llama of `s`, its weights drawn from `seed`, its config.json from
// the shape and `extra` (more members, each with a leading comma).
std::filesystem::path TinyLlamaDir(const std::string& name, const test::TinyLlamaShape& s, uint64_t seed,
                                   const std::string& extra = "") {
  const auto dir = test::TempDir(name);
  test::TinyCheckpoint c(seed);
  test::AddTinyLlamaWeights(c, s, /*qkv_bias=*/false);
  c.Write(dir, R"({"architectures": ["LlamaForCausalLM"], "hidden_size": )" + std::to_string(s.hidden) +
                   R"(, "intermediate_size": )" + std::to_string(s.inter) + R"(, "num_hidden_layers": )" +
                   std::to_string(s.layers) + R"(, "num_attention_heads": )" + std::to_string(s.heads) +
                   R"(, "num_key_value_heads": )" + std::to_string(s.kv_heads) + R"(, "head_dim": )" +
                   std::to_string(s.head_dim) + R"(, "vocab_size": )" + std::to_string(s.vocab) +
                   R"(, "max_position_embeddings": 512, "rms_norm_eps": 1e-5, "rope_theta": 10000.0)" + extra + "}");
  return dir;
}

// A one-layer Llama 256 wide, every matrix's rows a multiple of 256 values.
std::filesystem::path Llama256(const std::string& name) {
  return TinyLlamaDir(name, test::TinyLlamaShape{61, 256, 256, 4, 2, 64, 1}, 5);
}

// DequantFiles' two files, written into dir.
struct DequantPaths {
  std::string blocks, f32;
};
DequantPaths WriteDequantFiles(const std::filesystem::path& dir, const std::vector<DequantFormat>& formats) {
  const DequantPair files = DequantFiles(dir.string(), formats);
  const DequantPaths paths{(dir / "blocks.gguf").string(), (dir / "f32.gguf").string()};
  test::WriteFile(paths.blocks, files.blocks);
  test::WriteFile(paths.f32, files.f32);
  return paths;
}

// A block format swan does not read is named, with the ones it does.
TEST(Gguf, RefusesBlockFormatsItDoesNotRead) {
  const auto dir = Llama256("gguf_refused");
  const DequantPaths paths = WriteDequantFiles(dir, {DequantFormat::kQ5_0});
  const GgufFile file(paths.blocks);
  GgufParts parts = PartsOf(file);
  for (GgufTensorBytes& t : parts.tensors)
    if (t.name == "blk.0.ffn_up.weight") {
      t.type = uint32_t(GgmlType::kQ2_K);
      t.bytes.assign(size_t(t.ne[0] * t.ne[1] / 256 * 84), '\0');
    }
  const std::string error = LoadError(dir, parts.Bytes());
  EXPECT_NE(
      error.find("of Q2_K is not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q3_K, Q4_K, Q5_K, Q6_K)"),
      std::string::npos)
      << error;
}

// Q5_0, Q5_1 and the K-quants are held as they are (Q3_K as Q6_K of the same values): the file's values (rearranged
// into groups of 16 rows), multiplied as ggml dequantizes them, so the logits are the F32 file's but for the input's
// int8 rounding.
void ExpectHeldAsItIs(DequantFormat format, WeightType type, GgmlType ggml) {
  const auto dir = Llama256(std::string("gguf_") + WeightTypeName(type));
  const DequantPaths paths = WriteDequantFiles(dir, {format});
  const auto k_model = LoadModel(paths.blocks);
  int k_matrices = 0;
  const GgufFile file(paths.blocks);
  for (const GgufTensor& t : file.tensors()) {
    if (t.ne.size() != 2) continue;
    EXPECT_EQ(GgufHeldType(t), t.type == uint32_t(ggml) ? type : WeightType::kF32) << t.name;
    k_matrices += t.type == uint32_t(ggml);
  }
  EXPECT_GE(k_matrices, 7);
  LoadOptions as_type;
  as_type.weights = type;
  EXPECT_EQ(k_model->WeightBytes(), LoadModel(paths.f32, as_type)->WeightBytes());
  const std::vector<float> logits = Logits(*k_model, 24), exact = Logits(*LoadModel(paths.f32), 24);
  EXPECT_LE(test::RelativeRms(logits, exact), 0.02);  // 0.013 for Q6_K here
  // held as Q8_0 (requantized) instead, the logits move further
  LoadOptions q8;
  q8.weights = WeightType::kQ8_0;
  EXPECT_LT(test::RelativeRms(logits, exact), test::RelativeRms(Logits(*LoadModel(paths.f32, q8), 24), exact));
}

TEST(Gguf, Q5_0IsHeldAsItIs) { ExpectHeldAsItIs(DequantFormat::kQ5_0, WeightType::kQ5_0, GgmlType::kQ5_0); }
TEST(Gguf, Q5_1IsHeldAsItIs) { ExpectHeldAsItIs(DequantFormat::kQ5_1, WeightType::kQ5_1, GgmlType::kQ5_1); }
TEST(Gguf, Q4KIsHeldAsItIs) { ExpectHeldAsItIs(DequantFormat::kQ4_K, WeightType::kQ4_K, GgmlType::kQ4_K); }
TEST(Gguf, Q5KIsHeldAsItIs) { ExpectHeldAsItIs(DequantFormat::kQ5_K, WeightType::kQ5_K, GgmlType::kQ5_K); }
TEST(Gguf, Q6KIsHeldAsItIs) { ExpectHeldAsItIs(DequantFormat::kQ6_K, WeightType::kQ6_K, GgmlType::kQ6_K); }
// Q3_K as Q6_K, whose values include Q3_K's exactly
TEST(Gguf, Q3KIsHeldAsQ6K) { ExpectHeldAsItIs(DequantFormat::kQ3_K, WeightType::kQ6_K, GgmlType::kQ3_K); }

// A two-layer Llama with 64-wide heads (32 frequencies) and the given
// rope_scaling JSON; the same weights whatever the scaling.
std::filesystem::path Llama64(const std::string& name, const std::string& rope_scaling) {
  return TinyLlamaDir(name, test::TinyLlamaShape{61, 128, 64, 2, 1, 64, 2}, 6, R"(, "rope_scaling": )" + rope_scaling);
}

// The GGUF file `bytes` with one more tensor.
std::string WithTensor(const std::string& bytes, const GgufTensorBytes& extra) {
  GgufParts parts = PartsOf(GgufFile(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "in.gguf"));
  parts.tensors.push_back(extra);
  return parts.Bytes();
}

// Llama 3.1's RoPE scaling goes into the file as llama.cpp's converter
// writes it, a rope_freqs tensor of one factor per frequency, and comes back
// as the same frequencies.
TEST(Gguf, Llama3ScalingTravelsAsRopeFreqs) {
  const auto dir = Llama64("gguf_llama3", R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
    "high_freq_factor": 4.0, "original_max_position_embeddings": 32})");
  const std::string path = (dir / "llama3.gguf").string();
  test::WriteFile(path, HfToGgufBytes(dir.string(), WeightType::kF32));
  const GgufFile file(path);
  EXPECT_EQ(file.Find("llama.rope.scaling.type"), nullptr);  // llama.cpp's converter writes none for llama3
  const GgufTensor* freqs = file.Tensor("rope_freqs.weight");
  ASSERT_NE(freqs, nullptr);
  ASSERT_EQ(freqs->type, uint32_t(GgmlType::kF32));
  ASSERT_EQ(freqs->ne, std::vector<int64_t>{32});
  std::vector<float> factors(32);  // [32] as stored
  std::memcpy(factors.data(), freqs->data, 32 * sizeof(float));
  for (int i = 0; i < 32; ++i) {  // llama.cpp's converter's rule
    const double wavelen = 2 * 3.14159265358979323846 * std::pow(10000.0, 2.0 * i / 64);
    const double smooth = (32 / wavelen - 1) / (4 - 1);
    const double expected = wavelen < 32 / 4.0 ? 1 : wavelen > 32 ? 8 : 1 / ((1 - smooth) / 8 + smooth);
    EXPECT_NEAR(factors[size_t(i)], expected, 1e-6 * expected) << i;
  }
  EXPECT_EQ(factors.front(), 1.0f);  // kept
  EXPECT_GT(factors[3], 1.0f);       // between
  EXPECT_LT(factors[3], 8.0f);
  EXPECT_EQ(factors.back(), 8.0f);  // divided
  const auto gguf = LoadModel(path);
  EXPECT_EQ(gguf->config().rope.scaling.kind, RopeScaling::Kind::kFrequencyFactors);
  const std::vector<float> logits = Logits(*gguf, 48);
  EXPECT_LE(MaxDiff(logits, Logits(*LoadModel(dir.string()), 48)), 1e-4);
  // without the factors the logits would be another model's
  EXPECT_GT(MaxDiff(logits, Logits(*LoadModel(Llama64("gguf_unscaled", "null").string()), 48)), 1e-2);
}

// A rope_freqs tensor divides each frequency by its factor (all 2: linear
// scaling by 2), and a wrong one is refused with what it should be.
TEST(Gguf, RopeFreqsDivideEachFrequency) {
  const auto plain = Llama64("gguf_freqs_plain", "null");
  const std::string f32 = HfToGgufBytes(plain.string(), WeightType::kF32);
  auto with = [&](uint32_t type, const std::vector<int64_t>& ne, const std::vector<float>& values) {
    return WithTensor(f32, {"rope_freqs.weight", type, ne, FloatBytes(values)});
  };
  const std::string path = (plain / "freqs.gguf").string();
  test::WriteFile(path, with(uint32_t(GgmlType::kF32), {32}, std::vector<float>(32, 2.0f)));
  const auto linear = LoadModel(Llama64("gguf_freqs_linear", R"({"rope_type": "linear", "factor": 2.0})").string());
  EXPECT_LE(MaxDiff(Logits(*LoadModel(path), 48), Logits(*linear, 48)), 1e-5);
  auto refused = [&](uint32_t type, const std::vector<int64_t>& ne, const std::vector<float>& values,
                     const std::string& why) {
    const std::string error = LoadError(plain, with(type, ne, values));
    EXPECT_NE(error.find(why), std::string::npos) << error;
  };
  refused(uint32_t(GgmlType::kF32), {31}, std::vector<float>(31, 2.0f), "expected F32 [32]");
  refused(uint32_t(GgmlType::kF16), {32}, std::vector<float>(16, 2.0f), "expected F32 [32]");
  std::vector<float> zero(32, 1.0f);
  zero[7] = 0;
  refused(uint32_t(GgmlType::kF32), {32}, zero, "must be a positive number");
}

// A Llama whose layers mix full and window attention goes into the file as
// llama.cpp's granite_swa (a window flag per layer, logit scale 1, sink
// logits that count for nothing), and comes back as the same hybrid.
TEST(Gguf, HybridLlamaTravelsAsGraniteSwa) {
  const auto dir =
      TinyLlamaDir("gguf_hybrid", test::TinyLlamaShape{61, 32, 64, 4, 2, 8, 4}, 7, R"(, "sliding_window": 6,
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"])");
  const std::string bytes = HfToGgufBytes(dir.string(), WeightType::kF32);
  const GgufFile file(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "hybrid.gguf");
  EXPECT_EQ(file.String("general.architecture"), "granite_swa");
  EXPECT_EQ(file.Int("granite_swa.attention.sliding_window"), 6);
  EXPECT_EQ(file.Find("granite_swa.attention.sliding_window_pattern")->numbers, (std::vector<double>{1, 1, 1, 0}));
  EXPECT_EQ(file.Float("granite_swa.logit_scale"), 1.0);
  const GgufTensor* sinks = file.Tensor("blk.3.attn_sinks.weight");
  ASSERT_NE(sinks, nullptr);
  EXPECT_EQ(sinks->ne, std::vector<int64_t>{4});
  const std::string path = (dir / "hybrid.gguf").string();
  test::WriteFile(path, bytes);
  const auto gguf = LoadModel(path), hf = LoadModel(dir.string());
  EXPECT_EQ(gguf->config().layer_types, hf->config().layer_types);
  // 24 tokens against a window of 6: the window layers see only the last 6
  const std::vector<float> logits = Logits(*gguf, 24);
  EXPECT_LE(MaxDiff(logits, Logits(*hf, 24)), 1e-5);
  EXPECT_GT(MaxDiff(logits, Logits(*gguf, 24, "full")), 1e-3);  // the windows show in the logits

  // what swan does not run is refused: a learned sink logit, a logit scale
  auto with = [&](const std::string& name, const GgufValue* value, float sink) {
    GgufParts parts = PartsOf(file);
    for (auto& [key, v] : parts.metadata)
      if (value && key == name) v = *value;
    for (GgufTensorBytes& t : parts.tensors)
      if (!value && t.name == name) std::memcpy(t.bytes.data(), &sink, sizeof(sink));
    return LoadError(dir, parts.Bytes());
  };
  EXPECT_NE(with("blk.2.attn_sinks.weight", nullptr, 0.5f).find("learned sink logit 0.5"), std::string::npos);
  const GgufValue scale = GgufNumber(GgufValue::kF32, 0.25);
  EXPECT_NE(with("granite_swa.logit_scale", &scale, 0).find("logit_scale 0.25"), std::string::npos);
}

// A count past 32 bits is reported as the file gives it: cut to its low 32
// bits, 2^40 + 4 heads loaded as a model of 4.
TEST(Gguf, ACountPast32BitsIsReportedAsItself) {
  const auto dir = TinyLlamaDir("gguf_counts", test::TinyLlamaShape{61, 32, 64, 4, 2, 8, 2}, 9);
  const std::string bytes = HfToGgufBytes(dir.string(), WeightType::kF32);
  GgufParts parts = PartsOf(GgufFile(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "counts.gguf"));
  for (auto& [key, v] : parts.metadata)
    if (key == "llama.attention.head_count") v = GgufNumber(GgufValue::kU64, double((uint64_t(1) << 40) + 4));
  const std::string error = LoadError(dir, parts.Bytes());
  EXPECT_NE(error.find("metadata 'llama.attention.head_count' is 1099511627780, not a count"), std::string::npos)
      << error;
}

// A hybrid trained with NoPE on its full layers keeps them NoPE through
// granite_swa's per-layer RoPE flags; a pattern no plan of swan's says is
// refused.
TEST(Gguf, NopeLayersTravelAsRopePattern) {
  const std::string plan = "full,layer0:swa:6,layer1:swa:6,layer2:swa:6,nope:full";
  const auto dir = TinyLlamaDir("gguf_nope", test::TinyLlamaShape{61, 32, 64, 4, 2, 8, 4}, 8, R"(, "sliding_window": 6,
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],
    "swan_attention_plan": ")" + plan + "\"");
  const std::string bytes = HfToGgufBytes(dir.string(), WeightType::kF32);
  const GgufFile file(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "nope.gguf");
  EXPECT_EQ(file.Find("granite_swa.attention.rope_pattern")->numbers, (std::vector<double>{1, 1, 1, 0}));
  const std::string path = (dir / "nope.gguf").string();
  test::WriteFile(path, bytes);
  const auto gguf = LoadModel(path), hf = LoadModel(dir.string());
  EXPECT_EQ(gguf->config().attention_plan, plan);
  const std::vector<float> logits = Logits(*gguf, 24);
  EXPECT_LE(MaxDiff(logits, Logits(*hf, 24)), 1e-5);
  // RoPE on the full layer too: other logits
  EXPECT_GT(MaxDiff(logits, Logits(*gguf, 24, "full,layer0:swa:6,layer1:swa:6,layer2:swa:6")), 1e-3);

  GgufParts parts = PartsOf(file);
  for (auto& [key, v] : parts.metadata)
    if (key == "granite_swa.attention.rope_pattern") v.numbers = {0, 1, 1, 1};  // one window layer of three
  const std::string error = LoadError(dir, parts.Bytes());
  EXPECT_NE(error.find("neither every full layer"), std::string::npos) << error;
}

// Block windows have no GGUF spelling: writing one as a sliding window would
// run other attention than the model's, so the export is refused.
TEST(Gguf, RefusesBlockWindows) {
  const auto dir = TinyLlamaDir("gguf_blocks", test::TinyLlamaShape{61, 32, 64, 4, 2, 8, 2}, 8,
                                R"(, "swan_attention_plan": "swa:6,staggered")");
  try {
    HfToGgufBytes(dir.string(), WeightType::kF32);
    ADD_FAILURE() << "a staggered plan was written to GGUF";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 0 attends in blocks of 6;"), std::string::npos) << e.what();
  }
}

TEST(Gguf, RefusesArchitecturesItDoesNotRun) {
  const std::string error =
      LoadError(test::TempDir("gguf_arch"), GgufBytes({{"general.architecture", GgufString("mamba")}}, {}));
  EXPECT_NE(error.find("'mamba' is not supported"), std::string::npos) << error;
}

}  // namespace
}  // namespace swan
