#include "model/gguf_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "tokenizer/utf8.h"

namespace swan {

using nlohmann::json;

namespace {

enum TokenType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

const char* const kMetaspace = "\xE2\x96\x81";  // "▁", SentencePiece's space

// The byte-level pre-tokenizers llama.cpp knows by name (tokenizer.ggml.pre),
// as Hugging Face's tokenizer.json files spell them. `regex` null: GPT-2's
// own, built into the ByteLevel pre-tokenizer.
struct PreTokenizerForm {
  const char* name;
  const char* regex;
  bool nfc;            // an NFC normalizer runs first (Qwen 2)
  bool ignore_merges;  // a piece that is a token is taken whole (Llama 3)
};
constexpr PreTokenizerForm kPreTokenizers[] = {
    {"gpt-2", nullptr, false, false},
    {"llama-bpe",
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     false, true},
    {"qwen2",
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     true, false},
    {"gpt-4o",
     "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|"
     "'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}"
     "\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*["
     "\\r\\n]+|\\s+(?!\\S)|\\s+",
     false, true},
};

const PreTokenizerForm* PreTokenizerNamed(const std::string& name) {
  const std::string canonical = name == "llama3" ? "llama-bpe" : name;
  for (const PreTokenizerForm& f : kPreTokenizers)
    if (canonical == f.name) return &f;
  return nullptr;
}

std::string KnownPreTokenizerNames() {
  std::string names;
  for (const PreTokenizerForm& f : kPreTokenizers) names += (names.empty() ? "" : ", ") + std::string(f.name);
  return names;
}

json StringPattern(const std::string& s) { return {{"String", s}}; }

json AddedTokenJson(int32_t id, const std::string& content, bool special) {
  return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", special}};
}

// Hugging Face's SentencePiece converter: every split of a token into two
// tokens is a merge; merges are ordered by the score of the token they
// make (highest first; ties in id order), and a token's own splits by the
// ids of their two sides.
json MergesFromScores(const std::vector<std::string>& tokens, const std::vector<double>& scores,
                      const std::vector<bool>& in_vocab) {
  std::unordered_map<std::string_view, int32_t> id_of;
  for (int32_t id = 0; id < int32_t(tokens.size()); ++id)
    if (in_vocab[id]) id_of.emplace(tokens[id], id);
  struct Merge {
    int32_t left, right, made;
  };
  std::vector<Merge> merges;
  for (int32_t id = 0; id < int32_t(tokens.size()); ++id) {
    if (!in_vocab[id]) continue;
    const std::string_view t = tokens[id];
    const size_t first = merges.size();
    char32_t cp;
    for (size_t cut = DecodeUtf8(t, 0, &cp); cut < t.size(); cut += DecodeUtf8(t, cut, &cp)) {
      auto l = id_of.find(t.substr(0, cut)), r = id_of.find(t.substr(cut));
      if (l != id_of.end() && r != id_of.end()) merges.push_back({l->second, r->second, id});
    }
    std::sort(merges.begin() + std::ptrdiff_t(first), merges.end(),
              [](const Merge& a, const Merge& b) { return a.left != b.left ? a.left < b.left : a.right < b.right; });
  }
  std::stable_sort(merges.begin(), merges.end(),
                   [&](const Merge& a, const Merge& b) { return scores[a.made] > scores[b.made]; });
  json out = json::array();
  for (const Merge& m : merges) out.push_back(json::array({tokens[m.left], tokens[m.right]}));
  return out;
}

const std::vector<double>* NumberArray(const GgufFile& file, const std::string& key, size_t n) {
  const GgufValue* v = file.Find(key);
  if (!v) return nullptr;
  if (v->type != GgufValue::kArray || v->element == GgufValue::kString || v->numbers.size() != n)
    throw std::runtime_error(file.origin() + ": " + key + " is not an array of " + std::to_string(n) +
                             " numbers (one per token)");
  return &v->numbers;
}

bool Flag(const GgufFile& file, const std::string& key, bool fallback) {
  const std::optional<int64_t> v = file.OptionalInt(key);
  return v ? *v != 0 : fallback;
}

}  // namespace

// What still runs a model without a tokenizer.
constexpr char kIdsOnly[] = "; it runs on token ids: swan generate --ids, swan score --ids, swan bench";

GgufTokenizerParts ReadGgufTokenizer(const GgufFile& file) {
  const std::string& where = file.origin();
  const GgufValue* model_value = file.Find("tokenizer.ggml.model");
  if (!model_value) throw std::runtime_error(where + ": holds no tokenizer (no tokenizer.ggml.model)" + kIdsOnly);
  const std::string model = file.String("tokenizer.ggml.model");
  if (model == "none" || model == "no_vocab")
    throw std::runtime_error(where + ": holds no tokenizer (tokenizer.ggml.model is '" + model + "')" + kIdsOnly);
  if (model != "llama" && model != "gpt2")
    throw std::runtime_error(where + ": tokenizer.ggml.model '" + model +
                             "' is not read by swan (llama: SentencePiece BPE; gpt2: byte-level BPE)");
  const GgufValue* tokens_value = file.Find("tokenizer.ggml.tokens");
  if (!tokens_value || tokens_value->type != GgufValue::kArray || tokens_value->element != GgufValue::kString)
    throw std::runtime_error(where + ": tokenizer.ggml.tokens is missing or not an array of strings");
  const std::vector<std::string>& tokens = tokens_value->strings;  // [n] token texts by id
  const size_t n = tokens.size();
  const std::vector<double>* types = NumberArray(file, "tokenizer.ggml.token_type", n);  // [n] or null
  auto type_of = [&](size_t id) { return types ? int((*types)[id]) : int(kNormal); };

  json vocab = json::object();
  json added = json::array();
  std::vector<bool> in_vocab(n, false);  // [n] whether the BPE model holds the token
  std::string unk_token;
  for (size_t id = 0; id < n; ++id) {
    const int type = type_of(id);
    if (type == kUnused || vocab.contains(tokens[id])) continue;  // padding; a repeated text keeps its first id
    vocab[tokens[id]] = int32_t(id);
    in_vocab[id] = true;
    if (type == kUnknown && unk_token.empty()) unk_token = tokens[id];
    if (type == kUnknown || type == kControl || type == kUserDefined)
      added.push_back(AddedTokenJson(int32_t(id), tokens[id], type != kUserDefined));
  }
  if (const auto unk = file.OptionalInt("tokenizer.ggml.unknown_token_id"); unk && *unk >= 0 && size_t(*unk) < n)
    unk_token = tokens[size_t(*unk)];

  json bpe = {{"type", "BPE"},
              {"dropout", nullptr},
              {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr},
              {"vocab", vocab}};
  json tok = {{"version", "1.0"}, {"added_tokens", added}};
  const bool spm = model == "llama";
  if (spm) {
    const std::vector<double>* scores = NumberArray(file, "tokenizer.ggml.scores", n);
    if (!scores) throw std::runtime_error(where + ": a SentencePiece (llama) tokenizer needs tokenizer.ggml.scores");
    bpe["merges"] = MergesFromScores(tokens, *scores, in_vocab);
    bpe["unk_token"] = unk_token.empty() ? json() : json(unk_token);
    bpe["fuse_unk"] = true;
    bpe["byte_fallback"] = true;
    const bool space_prefix = Flag(file, "tokenizer.ggml.add_space_prefix", true);
    const json to_metaspace = {{"type", "Replace"}, {"pattern", StringPattern(" ")}, {"content", kMetaspace}};
    tok["normalizer"] = space_prefix
                            ? json{{"type", "Sequence"},
                                   {"normalizers", {{{"type", "Prepend"}, {"prepend", kMetaspace}}, to_metaspace}}}
                            : to_metaspace;
    tok["pre_tokenizer"] = nullptr;
    json decoders = {{{"type", "Replace"}, {"pattern", StringPattern(kMetaspace)}, {"content", " "}},
                     {{"type", "ByteFallback"}},
                     {{"type", "Fuse"}}};
    if (space_prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1u}, {"stop", 0u}});
    tok["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
  } else {
    const GgufValue* merges = file.Find("tokenizer.ggml.merges");
    if (!merges || merges->type != GgufValue::kArray || merges->element != GgufValue::kString)
      throw std::runtime_error(where + ": a byte-level BPE (gpt2) tokenizer needs tokenizer.ggml.merges (strings)");
    bpe["merges"] = merges->strings;
    const std::string pre_name =
        file.Find("tokenizer.ggml.pre") ? file.String("tokenizer.ggml.pre") : std::string("default");
    const PreTokenizerForm* pre = PreTokenizerNamed(pre_name);
    if (!pre)
      throw std::runtime_error(where + ": tokenizer.ggml.pre '" + pre_name + "' is not a pre-tokenizer swan knows (" +
                               KnownPreTokenizerNames() + ")");
    bpe["unk_token"] = nullptr;
    bpe["fuse_unk"] = false;
    bpe["byte_fallback"] = false;
    bpe["ignore_merges"] = Flag(file, "swan.tokenizer.ignore_merges", pre->ignore_merges);
    tok["normalizer"] = pre->nfc ? json{{"type", "NFC"}} : json();
    const json byte_level = {{"type", "ByteLevel"},
                             {"add_prefix_space", false},
                             {"trim_offsets", true},
                             {"use_regex", pre->regex == nullptr}};
    tok["pre_tokenizer"] = pre->regex ? json{{"type", "Sequence"},
                                             {"pretokenizers",
                                              {{{"type", "Split"},
                                                {"pattern", {{"Regex", pre->regex}}},
                                                {"behavior", "Isolated"},
                                                {"invert", false}},
                                               byte_level}}}
                                      : byte_level;
    tok["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  }
  tok["model"] = std::move(bpe);

  // BOS/EOS and what a single sequence gets around it.
  GgufTokenizerParts parts;
  auto id_key = [&](const char* key) -> int32_t {
    const std::optional<int64_t> v = file.OptionalInt(key);
    return v && *v >= 0 && size_t(*v) < n ? int32_t(*v) : -1;
  };
  const int32_t bos = id_key("tokenizer.ggml.bos_token_id");
  json eos_ids = json::array();
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"})
    if (const int32_t id = id_key(key); id >= 0 && std::find(eos_ids.begin(), eos_ids.end(), id) == eos_ids.end())
      eos_ids.push_back(id);
  parts.special_ids = {{"bos_token_id", bos}, {"eos_token_id", eos_ids}};
  json single = json::array();
  json special_tokens = json::object();
  auto special = [&](int32_t id) {
    single.push_back({{"SpecialToken", {{"id", tokens[size_t(id)]}, {"type_id", 0}}}});
    special_tokens[tokens[size_t(id)]] = {{"id", tokens[size_t(id)]}, {"ids", {id}}, {"tokens", {tokens[size_t(id)]}}};
  };
  if (bos >= 0 && Flag(file, "tokenizer.ggml.add_bos_token", spm)) special(bos);
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  if (!eos_ids.empty() && Flag(file, "tokenizer.ggml.add_eos_token", false)) special(eos_ids[0].get<int32_t>());
  tok["post_processor"] = {{"type", "TemplateProcessing"}, {"single", single}, {"special_tokens", special_tokens}};
  parts.tokenizer = std::move(tok);
  if (file.Find("tokenizer.chat_template")) parts.chat_template = file.String("tokenizer.chat_template");
  return parts;
}

Tokenizer GgufTokenizer(const GgufFile& file) {
  const GgufTokenizerParts parts = ReadGgufTokenizer(file);
  Tokenizer tok = Tokenizer::FromJson(parts.tokenizer, file.origin());
  tok.UseSpecialIds(parts.special_ids);
  return tok;
}

Tokenizer LoadModelTokenizer(const std::string& path) {
  if (IsGgufFile(path)) return GgufTokenizer(GgufFile(path));
  return Tokenizer::Load(path);
}

namespace {

json ReadJsonFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open file");
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::exception& e) {
    throw std::runtime_error(path.string() + ": not valid JSON: " + e.what());
  }
}

// The pre-tokenizer's name for a byte-level tokenizer.json, or "" when
// llama.cpp names none like it.
std::string PreTokenizerName(const json& tok) {
  const json& pre = tok.value("pre_tokenizer", json());
  const bool nfc = tok.value("normalizer", json()).is_object() && tok["normalizer"].value("type", "") == "NFC";
  std::string regex;
  if (pre.is_object() && pre.value("type", "") == "ByteLevel" && pre.value("use_regex", true)) {
    regex.clear();  // GPT-2's own
  } else if (pre.is_object() && pre.value("type", "") == "Sequence" && pre.value("pretokenizers", json()).size() == 2) {
    const json& split = pre["pretokenizers"][0];
    const json& level = pre["pretokenizers"][1];
    if (split.value("type", "") != "Split" || split.value("behavior", "") != "Isolated" ||
        split.value("invert", false) || !split.value("pattern", json()).contains("Regex") ||
        level.value("type", "") != "ByteLevel" || level.value("use_regex", true) ||
        level.value("add_prefix_space", false))
      return "";
    regex = split["pattern"]["Regex"].get<std::string>();
  } else {
    return "";
  }
  if (tok.value("normalizer", json()).is_object() && !nfc) return "";
  for (const PreTokenizerForm& f : kPreTokenizers)
    if ((f.regex ? regex == f.regex : regex.empty()) && f.nfc == nfc) return f.name;
  return "";
}

}  // namespace

std::vector<std::pair<std::string, GgufValue>> GgufTokenizerMetadata(const std::string& dir, int64_t n_tokens) {
  namespace fs = std::filesystem;
  const fs::path file = fs::path(dir) / "tokenizer.json";
  const json tok = ReadJsonFile(file);
  const Tokenizer loaded = Tokenizer::Load(dir);  // BOS/EOS from the config files too
  const json& model = tok.value("model", json());
  if (!model.is_object() || model.value("type", "BPE") != "BPE")
    throw std::runtime_error(file.string() + ": only BPE tokenizers have a GGUF form here");
  if (loaded.vocab_size() > n_tokens)
    throw std::runtime_error(file.string() + ": " + std::to_string(loaded.vocab_size()) +
                             " tokens, more than the model's " + std::to_string(n_tokens) + " embedding rows");
  const bool spm = model.value("byte_fallback", false);
  std::string pre;
  if (!spm) {
    pre = PreTokenizerName(tok);
    if (pre.empty())
      throw std::runtime_error(file.string() + ": its pre-tokenizer is none that llama.cpp names (" +
                               KnownPreTokenizerNames() + ")");
  }

  // Token texts and types by id; ids the tokenizer does not use are padding.
  GgufValue tokens, types, scores;
  tokens.type = types.type = scores.type = GgufValue::kArray;
  tokens.element = GgufValue::kString;
  types.element = GgufValue::kI32;
  scores.element = GgufValue::kF32;
  tokens.strings.resize(size_t(n_tokens));          // [n_tokens]
  types.numbers.assign(size_t(n_tokens), kUnused);  // [n_tokens]
  std::unordered_map<int32_t, bool> added_special;  // added token id -> special
  for (const AddedToken& t : loaded.added_tokens()) added_special[t.id] = t.special;
  for (int64_t id = 0; id < n_tokens; ++id) {
    const std::string text = loaded.IdToToken(int32_t(id));
    if (text.empty() && id >= loaded.vocab_size()) {
      tokens.strings[size_t(id)] = "[PAD" + std::to_string(id) + "]";
      continue;
    }
    tokens.strings[size_t(id)] = text;
    int type = kNormal;
    if (auto added = added_special.find(int32_t(id)); added != added_special.end())
      type = added->second ? kControl : kUserDefined;
    if (spm && type == kNormal && text.size() == 6 && text.starts_with("<0x") && text.ends_with(">")) type = kByte;
    if (spm && model.value("unk_token", json()).is_string() && text == model["unk_token"].get<std::string>())
      type = kUnknown;
    types.numbers[size_t(id)] = type;
  }

  using V = GgufValue;
  std::vector<std::pair<std::string, GgufValue>> meta = {{"tokenizer.ggml.model", GgufString(spm ? "llama" : "gpt2")}};
  if (!spm) meta.push_back({"tokenizer.ggml.pre", GgufString(pre)});
  meta.push_back({"tokenizer.ggml.tokens", tokens});
  if (spm) {
    // A merge's priority is the score of the token it makes: the rank of
    // the first merge that makes a token, negated, keeps their order.
    // Tokens no merge makes come last, so that reading the scores back
    // adds no merge ahead of the tokenizer's own.
    const json& merges = model.value("merges", json::array());
    scores.numbers.assign(size_t(n_tokens), -double(merges.size() + 1));
    std::vector<bool> scored(size_t(n_tokens), false);
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const json& m = merges[rank];
      const std::string made = m.is_string() ? [&] {
        std::string s = m.get<std::string>();
        s.erase(s.find(' '), 1);
        return s;
      }() : m[0].get<std::string>() + m[1].get<std::string>();
      const int32_t id = loaded.TokenToId(made);
      if (id < 0 || id >= n_tokens || scored[size_t(id)]) continue;
      scored[size_t(id)] = true;
      scores.numbers[size_t(id)] = -double(rank + 1);
    }
    meta.push_back({"tokenizer.ggml.scores", scores});
  }
  meta.push_back({"tokenizer.ggml.token_type", types});
  if (!spm) {
    GgufValue merges;
    merges.type = GgufValue::kArray;
    merges.element = GgufValue::kString;
    for (const json& m : model.value("merges", json::array())) {
      const std::string pair =
          m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>();
      merges.strings.push_back(pair);
    }
    meta.push_back({"tokenizer.ggml.merges", merges});
    meta.push_back({"swan.tokenizer.ignore_merges", GgufNumber(V::kBool, model.value("ignore_merges", false))});
  } else {
    const json& normalizer = tok.value("normalizer", json());
    const json& pre_tok = tok.value("pre_tokenizer", json());
    const bool prepends = normalizer.dump().find("\"Prepend\"") != std::string::npos ||
                          (pre_tok.is_object() && pre_tok.value("type", "") == "Metaspace" &&
                           pre_tok.value("prepend_scheme", "always") != "never");
    meta.push_back({"tokenizer.ggml.add_space_prefix", GgufNumber(V::kBool, prepends)});
  }
  if (loaded.bos_id() >= 0) meta.push_back({"tokenizer.ggml.bos_token_id", GgufNumber(V::kU32, loaded.bos_id())});
  if (loaded.eos_id() >= 0) meta.push_back({"tokenizer.ggml.eos_token_id", GgufNumber(V::kU32, loaded.eos_id())});
  if (loaded.eos_ids().size() > 1)
    meta.push_back({"tokenizer.ggml.eot_token_id", GgufNumber(V::kU32, loaded.eos_ids()[1])});
  const bool adds_bos = loaded.bos_id() >= 0 && loaded.prefix_ids() == std::vector<int32_t>{loaded.bos_id()};
  const bool adds_eos = loaded.eos_id() >= 0 && loaded.suffix_ids() == std::vector<int32_t>{loaded.eos_id()};
  meta.push_back({"tokenizer.ggml.add_bos_token", GgufNumber(V::kBool, adds_bos)});
  meta.push_back({"tokenizer.ggml.add_eos_token", GgufNumber(V::kBool, adds_eos)});

  const fs::path config_path = fs::path(dir) / "tokenizer_config.json";
  std::error_code error;
  if (fs::is_regular_file(config_path, error)) {
    const json config = ReadJsonFile(config_path);
    if (config.is_object() && config.value("chat_template", json()).is_string())
      meta.push_back({"tokenizer.chat_template", GgufString(config["chat_template"].get<std::string>())});
  }
  return meta;
}

}  // namespace swan
