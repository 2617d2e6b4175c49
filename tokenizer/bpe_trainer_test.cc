#include "tokenizer/bpe_trainer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "tokenizer/tokenizer.h"

namespace swan {
namespace {

namespace fs = std::filesystem;

// A deterministic corpus with a skewed word distribution and some code.
std::string Corpus() {
  const char* words[] = {"the", "cat",  "sat",   "on",    "mat",  "dog",   "ran",  "fast",
                         "and", "then", "slept", "under", "tree", "naïve", "日本", "42"};
  std::mt19937 rng(1);
  std::string text;
  for (int i = 0; i < 20000; ++i) {
    text += words[std::min<size_t>(rng() % 16, rng() % 16)];
    text += i % 13 == 0 ? ".\n" : " ";
    if (i % 97 == 0) text += "def f(x):\n    return x + 1\n";
  }
  return text;
}

fs::path TempDir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("swan_bpe_trainer_test_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(BpeTrainer, ReachesTheVocabularyAndRoundTrips) {
  BpeTrainerOptions options;
  options.vocab_size = 320;
  BpeTrainer trainer(options);
  const std::string corpus = Corpus();
  trainer.AddText(corpus);
  const TrainedBpe bpe = trainer.Train();
  EXPECT_EQ(bpe.tokens.size() + bpe.special_tokens.size(), 320u);
  // The most frequent pair comes first: "at" (cat, sat, mat).
  ASSERT_FALSE(bpe.merges.empty());
  EXPECT_EQ(bpe.tokens[bpe.merges[0].first] + bpe.tokens[bpe.merges[0].second], "at");

  const fs::path dir = TempDir("roundtrip");
  WriteTokenizerDir(bpe, options, dir.string());
  const Tokenizer tok = Tokenizer::Load(dir.string());
  EXPECT_EQ(tok.vocab_size(), 320);
  EXPECT_EQ(tok.eos_id(), 319);
  EXPECT_EQ(tok.TokenToId("<|endoftext|>"), 319);
  const auto ids = tok.Encode(corpus.substr(0, 5000));
  EXPECT_LT(ids.size(), 2500u);  // it compresses
  EXPECT_EQ(tok.Decode(ids), corpus.substr(0, 5000));
  EXPECT_EQ(tok.Encode("the cat<|endoftext|>").back(), 319);
  fs::remove_all(dir);
}

TEST(BpeTrainer, IsDeterministic) {
  BpeTrainerOptions options;
  options.vocab_size = 300;
  BpeTrainer t1(options), t2(options);
  t1.AddText(Corpus());
  t2.AddText(Corpus());
  EXPECT_EQ(t1.Train().merges, t2.Train().merges);
}

TEST(BpeTrainer, RejectsATooSmallVocabulary) {
  BpeTrainerOptions options;
  options.vocab_size = 100;
  EXPECT_THROW(BpeTrainer{options}, std::invalid_argument);
}

// The written tokenizer.json is accepted by Hugging Face's JS port, which
// gives the same ids as swan.
TEST(BpeTrainer, JsPortReadsTheTrainedTokenizer) {
  const char* src = std::getenv("SWAN_SOURCE_DIR");
  const fs::path root = src ? src : SWAN_SOURCE_ROOT;
  const fs::path js = root / ".cache" / "tokenizers" / "js" / "package";
  if (!fs::exists(js / "dist" / "tokenizers.mjs") || std::system("node --version >/dev/null 2>&1"))
    GTEST_SKIP() << "node or the JS port (" << js.string() << ") is missing: run scripts/fetch_test_tokenizers.sh";
  BpeTrainerOptions options;
  options.vocab_size = 600;
  BpeTrainer trainer(options);
  trainer.AddText(Corpus());
  const fs::path dir = TempDir("js");
  WriteTokenizerDir(trainer.Train(), options, dir.string());
  const fs::path out = dir / "expected.json";
  const std::string cmd = "node '" + (root / "scripts" / "tokenizer_cases.mjs").string() + "' '" + js.string() + "' '" +
                          dir.string() + "' '" + out.string() + "' 500 >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const Tokenizer tok = Tokenizer::Load(dir.string());
  std::ifstream in(out);
  const auto expected = nlohmann::json::parse(in);
  int mismatches = 0;
  for (const auto& c : expected["cases"]) {
    const auto text = c["text"].get<std::string>();
    if (tok.Encode(text) != c["ids"].get<std::vector<int32_t>>()) {
      if (++mismatches < 5) ADD_FAILURE() << "ids differ for " << nlohmann::json(text).dump();
    }
  }
  EXPECT_EQ(mismatches, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace swan
