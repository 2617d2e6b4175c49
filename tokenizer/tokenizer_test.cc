#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"
#include "util/test_paths.h"

namespace swan {
namespace {

using nlohmann::json;

std::filesystem::path Stories() { return test::Stories260K(); }

json ReadJson(const std::filesystem::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

// A tiny byte-level BPE tokenizer (GPT-2 style) written inline.
json TinyByteLevel() {
  json vocab = json::object();
  const ByteLevelAlphabet& a = ByteLevelAlphabet::Get();
  for (int b = 0; b < 256; ++b) vocab[std::string(a.Encode(static_cast<uint8_t>(b)))] = b;
  vocab["he"] = 256;
  vocab["ll"] = 257;
  vocab["hell"] = 258;
  vocab["hello"] = 259;
  vocab
      ["\xC4\xA0"
       "w"] = 260;  // "Ġw"
  return {{"version", "1.0"},
          {"added_tokens", {{{"id", 261}, {"content", "<|endoftext|>"}, {"special", true}, {"normalized", false}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern", {{"Regex", "'s|'t| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+"}}},
               {"behavior", "Isolated"}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
          {"post_processor", {{"type", "ByteLevel"}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"h e", "l l", "he ll", "hell o", "\xC4\xA0 w"}}}}};
}

TEST(Stories260K, EncodesTheGoldenPrompt) {
  const Tokenizer tok = Tokenizer::Load(Stories().string());
  const json golden = ReadJson(Stories() / "golden" / "tokens.json");
  EXPECT_EQ(tok.Encode(golden["prompt"].get<std::string>()), golden["input_ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(tok.bos_id(), 1);
  EXPECT_EQ(tok.eos_id(), 2);
  EXPECT_EQ(tok.eos_ids(), std::vector<int32_t>({2}));
  EXPECT_EQ(tok.vocab_size(), 512);
}

TEST(Stories260K, GreedyPromptsAndDecodedText) {
  const Tokenizer tok = Tokenizer::Load(Stories().string());
  const json greedy = ReadJson(Stories() / "golden" / "greedy.json");
  for (const auto& r : greedy["results"]) {
    EXPECT_EQ(tok.Encode(r["prompt"].get<std::string>()), r["prompt_ids"].get<std::vector<int32_t>>());
    std::vector<int32_t> all = r["prompt_ids"].get<std::vector<int32_t>>();
    for (const auto& id : r["new_ids"]) all.push_back(id.get<int32_t>());
    EXPECT_EQ(tok.Decode(all, /*skip_special=*/true), r["text"].get<std::string>());
  }
}

TEST(Stories260K, SpecialTokensAndByteFallback) {
  const Tokenizer tok = Tokenizer::Load(Stories().string());
  // "<s>" in the text is the special token; the text after it gets its own ▁.
  const auto ids = tok.Encode("a<s>b", {.add_special_tokens = false});
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 1);
  // Characters outside the vocabulary fall back to <0xHH> tokens (ids 3..258).
  const auto emoji = tok.Encode("🤖", {.add_special_tokens = false});
  ASSERT_EQ(emoji.size(), 5u);  // ▁ then 4 bytes
  EXPECT_EQ(emoji[1], 3 + 0xF0);
  EXPECT_EQ(tok.Decode(emoji), "🤖");
  EXPECT_EQ(tok.Decode(tok.Encode("a<s>b"), true), "a b");  // "b" got its own ▁
  // Parsing special tokens can be turned off.
  const auto plain = tok.Encode("<s>", {.add_special_tokens = false, .parse_special = false});
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
}

// The same SentencePiece model written the Mistral way (Metaspace
// pre-tokenizer and decoder instead of normalizer + Replace/Strip decoders)
// gives the same ids and text.
TEST(Stories260K, MetaspaceFormGivesTheSameIds) {
  const Tokenizer normalizer_form = Tokenizer::Load(Stories().string());
  json j = ReadJson(Stories() / "tokenizer.json");
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {
      {"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}, {"split", true}};
  j["decoder"] = {
      {"type", "Sequence"},
      {"decoders",
       {{{"type", "ByteFallback"}}, {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}}}}};
  const Tokenizer metaspace_form = Tokenizer::FromJson(j, "metaspace");
  for (const char* text :
       {"Once upon a time, there was a little girl named Lily.", "tabs\tand\nnewlines", "a 🤖 b", "The cat sat."}) {
    const auto ids = normalizer_form.Encode(text);
    EXPECT_EQ(metaspace_form.Encode(text), ids) << text;
    EXPECT_EQ(metaspace_form.Decode(ids, true), normalizer_form.Decode(ids, true)) << text;
  }
  // Metaspace adds no ▁ to text that already starts with a space (Prepend does).
  EXPECT_EQ(metaspace_form.Encode(" a").size() + 1, normalizer_form.Encode(" a").size());
  // prepend_scheme "first": only the text at the start of the input gets ▁.
  j["pre_tokenizer"]["prepend_scheme"] = "first";
  const Tokenizer first = Tokenizer::FromJson(j, "metaspace-first");
  const auto a = first.Encode("a</s>a", {.add_special_tokens = false});
  const auto b = normalizer_form.Encode("a", {.add_special_tokens = false});
  ASSERT_GE(a.size(), 3u);
  EXPECT_EQ(a.front(), b.front());  // "▁a"
  EXPECT_NE(a.back(), b.front());   // "a" without ▁
  EXPECT_EQ(a[a.size() - 2], 2);    // </s>
}

TEST(ByteLevel, MergesByRankAndRoundTrips) {
  const Tokenizer tok = Tokenizer::FromJson(TinyByteLevel(), "tiny");
  EXPECT_EQ(tok.Encode("hello"), std::vector<int32_t>({259}));
  EXPECT_EQ(tok.Encode("hello world<|endoftext|>"), std::vector<int32_t>({259, 260, 'o', 'r', 'l', 'd', 261}));
  EXPECT_EQ(tok.Decode(tok.Encode("hello world<|endoftext|>")), "hello world<|endoftext|>");
  EXPECT_EQ(tok.Decode(tok.Encode("hello<|endoftext|>"), true), "hello");
  EXPECT_EQ(tok.eos_id(), -1);  // FromJson reads no config files
}

TEST(ByteLevel, InvalidUtf8FallsBackToBytes) {
  const Tokenizer tok = Tokenizer::FromJson(TinyByteLevel(), "tiny");
  const std::string bad = std::string("ab\xFF\xC3(he\xE2\x82", 9) + "llo";
  const auto ids = tok.Encode(bad);
  EXPECT_EQ(tok.DecodeRaw(ids), bad);  // every byte is kept
  EXPECT_TRUE(IsValidUtf8(tok.Decode(ids)));
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    std::string s(rng() % 40, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    EXPECT_EQ(tok.DecodeRaw(tok.Encode(s)), s);
  }
}

TEST(StreamDecoder, NeverEmitsHalfACharacter) {
  const Tokenizer tok = Tokenizer::FromJson(TinyByteLevel(), "tiny");
  const std::string text = "hello wörld 🤖 <|endoftext|> 日本";
  const auto ids = tok.Encode(text);
  StreamDecoder stream(tok);
  std::string out;
  for (const int32_t id : ids) {
    const std::string piece = stream.Step(id);
    EXPECT_TRUE(IsValidUtf8(piece)) << piece;
    out += piece;
  }
  out += stream.Flush();
  EXPECT_EQ(out, text);
}

TEST(StreamDecoder, SentencePieceSpacesMatchFullDecode) {
  const Tokenizer tok = Tokenizer::Load(Stories().string());
  const std::string text = "Once upon a time, 🤖 said ünïcode.\nLily";
  const auto ids = tok.Encode(text);
  StreamDecoder stream(tok, /*skip_special=*/true);
  std::string out;
  for (const int32_t id : ids) {
    const std::string piece = stream.Step(id);
    EXPECT_TRUE(IsValidUtf8(piece));
    out += piece;
  }
  out += stream.Flush();
  EXPECT_EQ(out, tok.Decode(ids, true));
  EXPECT_EQ(out, text);
}

TEST(Errors, NotJsonUnsupportedModelUnknownMergeToken) {
  const auto dir = std::filesystem::temp_directory_path() / "swan_tokenizer_test";
  std::filesystem::create_directories(dir);
  auto expect_error = [&](const std::string& content, const std::string& needle) {
    std::ofstream(dir / "tokenizer.json") << content;
    try {
      Tokenizer::Load(dir.string());
      ADD_FAILURE() << "no error for " << content.substr(0, 60);
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("tokenizer.json"), std::string::npos) << e.what();
    }
  };
  expect_error("this is not json", "not valid JSON");
  expect_error(R"({"model": {"type": "Unigram", "vocab": []}})", "model.type");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})", "model.merges[0]: token 'b'");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "normalizer": {"type": "Foo"}})", "normalizer.type");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": "x"}}})", "model.vocab");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "pre_tokenizer":
                 {"type": "Split", "pattern": {"Regex": "(unclosed"}}})",
               "pre_tokenizer.pattern");
  std::filesystem::remove_all(dir);
  EXPECT_THROW(Tokenizer::Load("/nonexistent/swan/tokenizer"), std::runtime_error);
}

TEST(Utf8, CompletePrefixAndLossyConversion) {
  EXPECT_EQ(CompleteUtf8Prefix("ab\xE6\x97"), 2u);
  EXPECT_EQ(CompleteUtf8Prefix("ab\xE6\x97\xA5"), 5u);
  EXPECT_EQ(CompleteUtf8Prefix("ab\xFF"), 3u);
  EXPECT_EQ(CompleteUtf8Prefix("\xF0\x9F"), 0u);
  EXPECT_EQ(ToValidUtf8("a\xE6\x97z"), "a\xEF\xBF\xBDz");
  EXPECT_EQ(ToValidUtf8("\xFF\xFE"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_TRUE(IsValidUtf8("日本🤖"));
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));  // a surrogate
}

}  // namespace
}  // namespace swan

namespace swan {
namespace {

// The Oniguruma forms tokenizer.json regexes use compile in PCRE2: Unicode
// properties, case-insensitive groups, possessive quantifiers, lookahead.
TEST(Regex, SplitPatternFormsFromRealFiles) {
  const Regex re(
      "[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+|(?i:'s|'t)| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|"
      "\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
      "test");
  std::vector<std::string> parts;
  const std::string text = "Hello1234 WORLD'S  ünï\n";
  re.ForEachMatch(text, [&](size_t b, size_t e) { parts.push_back(text.substr(b, e - b)); });
  EXPECT_EQ(parts, std::vector<std::string>({"Hello", "123", "4", " WORLD", "'S", " ", " ünï", "\n"}));
  EXPECT_THROW(Regex("(?<!", "pre_tokenizer.pattern"), std::invalid_argument);
}

}  // namespace
}  // namespace swan

namespace swan {
namespace {

// Encode is safe to call from several threads at once (the piece cache is
// shared) and gives the same ids as a single thread.
TEST(Tokenizer, ConcurrentEncodeMatchesSerial) {
  const Tokenizer tok = Tokenizer::FromJson(TinyByteLevel(), "tiny");
  std::vector<std::string> texts;
  std::mt19937 rng(3);
  const char* words[] = {"hello", " world", " wörld", "🤖", "\n", "  ", "123", "he", "ll"};
  for (int t = 0; t < 64; ++t) {
    std::string s;
    for (int w = 0; w < 200; ++w) s += words[rng() % 9];
    texts.push_back(s);
  }
  std::vector<std::vector<int32_t>> serial;
  for (const auto& s : texts) serial.push_back(tok.Encode(s));
  std::vector<std::vector<int32_t>> parallel(texts.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = t; i < texts.size(); i += 4) parallel[i] = tok.Encode(texts[i]);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(parallel, serial);
}

}  // namespace
}  // namespace swan
