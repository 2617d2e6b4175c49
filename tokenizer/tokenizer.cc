#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/utf8.h"
#include "util/json_integer.h"

namespace swan {

using nlohmann::json;

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Parses an optional JSON file; returns null if it does not exist.
json ReadOptionalJson(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return json();
  try {
    return json::parse(ReadFile(path.string()));
  } catch (const json::exception& e) {
    throw std::runtime_error(path.string() + ": not valid JSON: " + e.what());
  }
}

// A token id from config.json style fields: an integer or a list of them.
int32_t FirstId(const json& j) {
  if (j.is_number_integer()) return j.get<int32_t>();
  if (j.is_array() && !j.empty() && j[0].is_number_integer()) return j[0].get<int32_t>();
  return -1;
}

// A token text from tokenizer_config.json: "<s>" or {"content": "<s>", ...}.
std::string TokenText(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content") && j["content"].is_string()) return j["content"].get<std::string>();
  return {};
}

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::Load(const std::string& path) {
  std::filesystem::path file(path);
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) file /= "tokenizer.json";
  if (!std::filesystem::exists(file, ec))
    throw std::runtime_error(file.string() +
                             ": no such file (expected a tokenizer.json or a "
                             "directory holding one)");
  char magic[4] = {};
  std::ifstream(file, std::ios::binary).read(magic, 4);
  if (std::string(magic, 4) == "GGUF")
    throw std::runtime_error(file.string() +
                             ": a GGUF file: its tokenizer is read with the model (LoadModelTokenizer in "
                             "model/gguf_tokenizer.h), not as a tokenizer.json");
  json j;
  try {
    j = json::parse(ReadFile(file.string()));
  } catch (const json::exception& e) {
    throw std::runtime_error(file.string() + ": not valid JSON: " + e.what());
  }
  Tokenizer tok = FromJson(j, file.string());
  tok.ReadSpecialIds(file.parent_path().string());
  return tok;
}

Tokenizer Tokenizer::FromJson(const json& j, const std::string& source) {
  Tokenizer tok;
  try {
    if (!j.is_object()) throw std::invalid_argument("expected a JSON object at the top level");
    const json& model = j.value("model", json());
    if (!model.is_object()) throw std::invalid_argument("model: expected an object");
    const std::string type = model.value("type", std::string("BPE"));
    if (type != "BPE")
      throw std::invalid_argument("model.type: unsupported model '" + type + "' (swan reads BPE tokenizers)");
    tok.model_ = std::make_unique<BpeModel>(model, "model");
    tok.normalizer_ = MakeNormalizer(j.value("normalizer", json()), "normalizer");
    tok.pre_tokenizer_ = MakePreTokenizer(j.value("pre_tokenizer", json()), "pre_tokenizer");
    tok.decoder_ = MakeDecoder(j.value("decoder", json()), "decoder");
    tok.added_ = ParseAddedTokens(j.value("added_tokens", json()), "added_tokens");

    tok.vocab_size_ = tok.model_->size();
    for (const AddedToken& t : tok.added_) tok.vocab_size_ = std::max(tok.vocab_size_, t.id + 1);
    if (tok.vocab_size_ > 2 * (tok.model_->size() + static_cast<int32_t>(tok.added_.size())) + 65536)
      throw std::invalid_argument("added_tokens: ids are far outside the model's vocabulary of " +
                                  std::to_string(tok.model_->size()));
    tok.added_index_.assign(tok.vocab_size_, -1);
    std::vector<const AddedToken*> raw, normalized;
    std::vector<std::string> raw_contents;
    for (size_t i = 0; i < tok.added_.size(); ++i) {
      AddedToken& t = tok.added_[i];
      tok.added_index_[t.id] = static_cast<int32_t>(i);
      if (t.normalized && tok.normalizer_) {
        normalized.push_back(&t);
        tok.normalized_contents_.push_back(tok.normalizer_->Normalize(t.content));
      } else {
        raw.push_back(&t);
        raw_contents.push_back(t.content);
      }
    }
    tok.raw_matcher_.Build(raw, raw_contents);
    tok.normalized_matcher_.Build(normalized, tok.normalized_contents_);
    tok.ReadPostProcessor(j.value("post_processor", json()), "post_processor");
  } catch (const json::exception& e) {
    throw std::invalid_argument(source + ": malformed tokenizer: " + e.what());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(source + ": " + e.what());
  }
  if (!tok.prefix_ids_.empty()) tok.bos_id_ = tok.prefix_ids_.front();
  return tok;
}

void Tokenizer::ReadPostProcessor(const json& config, const std::string& where) {
  if (config.is_null()) return;
  if (!config.is_object()) throw std::invalid_argument(where + ": expected an object");
  const std::string type = config.value("type", std::string());
  if (type == "Sequence") {
    const json& list = config.value("processors", json::array());
    for (size_t i = 0; i < list.size(); ++i)
      ReadPostProcessor(list[i], where + ".processors[" + std::to_string(i) + "]");
    return;
  }
  if (type == "ByteLevel") return;  // only adjusts offsets
  auto id_of = [&](const json& pair, const std::string& at) {
    // ["<s>", 1] in BertProcessing / RobertaProcessing.
    if (!pair.is_array() || pair.size() != 2 || !pair[1].is_number_integer())
      throw std::invalid_argument(at + ": expected [token, id]");
    return pair[1].get<int32_t>();
  };
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    prefix_ids_.push_back(id_of(config.value("cls", json()), where + ".cls"));
    suffix_ids_.push_back(id_of(config.value("sep", json()), where + ".sep"));
    return;
  }
  if (type != "TemplateProcessing")
    throw std::invalid_argument(where + ".type: unsupported post-processor '" + type + "'");
  const json& single = config.value("single", json());
  const json& specials = config.value("special_tokens", json::object());
  if (!single.is_array()) throw std::invalid_argument(where + ".single: expected an array");
  bool after_sequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const json& item = single[i];
    const std::string at = where + ".single[" + std::to_string(i) + "]";
    if (item.contains("Sequence")) {
      after_sequence = true;
      continue;
    }
    if (!item.contains("SpecialToken") || !item["SpecialToken"].contains("id"))
      throw std::invalid_argument(at + ": expected SpecialToken or Sequence");
    const std::string name = item["SpecialToken"]["id"].get<std::string>();
    if (!specials.contains(name) || !specials[name].contains("ids"))
      throw std::invalid_argument(at + ": special token '" + name + "' is not listed in special_tokens");
    for (const json& id : specials[name]["ids"]) {
      const std::optional<int32_t> v = JsonInteger<int32_t>(id);
      if (!v || *v < 0 || *v >= vocab_size_)
        throw std::invalid_argument(at + ": id " + id.dump() + " is outside the vocabulary");
      (after_sequence ? suffix_ids_ : prefix_ids_).push_back(*v);
    }
  }
}

void Tokenizer::ReadSpecialIds(const std::string& dir) {
  namespace fs = std::filesystem;
  const json generation = ReadOptionalJson(fs::path(dir) / "generation_config.json");
  const json config = ReadOptionalJson(fs::path(dir) / "config.json");
  const json tok_config = ReadOptionalJson(fs::path(dir) / "tokenizer_config.json");
  ReadSpecialIds(generation, config, tok_config);
}

void Tokenizer::UseSpecialIds(const json& config) { ReadSpecialIds(json(), config, json()); }

void Tokenizer::ReadSpecialIds(const json& generation, const json& config, const json& tok_config) {
  auto from_configs = [&](const char* id_key, const char* text_key) {
    for (const json* j : {&generation, &config}) {
      if (j->is_object() && j->contains(id_key)) {
        const int32_t id = FirstId((*j)[id_key]);
        if (id >= 0 && id < vocab_size_) return id;
      }
    }
    if (tok_config.is_object() && tok_config.contains(text_key)) return TokenToId(TokenText(tok_config[text_key]));
    return int32_t{-1};
  };
  if (bos_id_ < 0) bos_id_ = from_configs("bos_token_id", "bos_token");
  eos_id_ = from_configs("eos_token_id", "eos_token");
  if (eos_id_ < 0) {
    // Last resort: the usual names of an end-of-text token.
    for (const char* name : {"</s>", "<|endoftext|>", "<|end_of_text|>", "<eos>", "<|eot_id|>"}) {
      eos_id_ = TokenToId(name);
      if (eos_id_ >= 0) break;
    }
  }
  eos_ids_.clear();
  if (eos_id_ >= 0) eos_ids_.push_back(eos_id_);
  for (const json* j : {&generation, &config}) {
    if (!j->is_object() || !j->contains("eos_token_id")) continue;
    const json& v = (*j)["eos_token_id"];
    for (const json& id : v.is_array() ? v : json::array({v}))
      if (id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < vocab_size_ &&
          std::find(eos_ids_.begin(), eos_ids_.end(), id.get<int32_t>()) == eos_ids_.end())
        eos_ids_.push_back(id.get<int32_t>());
  }
}

int32_t Tokenizer::TokenToId(std::string_view token) const {
  for (const AddedToken& t : added_)
    if (t.content == token) return t.id;
  return model_->TokenToId(token);
}

std::string Tokenizer::IdToToken(int32_t id) const {
  if (id >= 0 && id < vocab_size_ && added_index_[id] >= 0) return added_[added_index_[id]].content;
  const std::string* t = model_->IdToToken(id);
  return t ? *t : std::string();
}

bool Tokenizer::IsSpecial(int32_t id) const {
  return id >= 0 && id < vocab_size_ && added_index_[id] >= 0 && added_[added_index_[id]].special;
}

void Tokenizer::EncodeSection(std::string_view text, bool first_section, std::vector<int32_t>* ids) const {
  const std::string normalized = normalizer_ ? normalizer_->Normalize(text) : std::string(text);
  auto encode_piece = [&](std::string_view piece) { model_->Encode(piece, ids); };
  for (const TextSection& s : normalized_matcher_.Split(normalized, false)) {
    if (s.token_index >= 0) {
      ids->push_back(normalized_matcher_.token(s.token_index).id);
    } else if (!s.text.empty()) {
      if (pre_tokenizer_)
        pre_tokenizer_->Split(s.text, first_section, encode_piece);
      else
        encode_piece(s.text);
    }
  }
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, const EncodeOptions& options) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (options.add_special_tokens) ids = prefix_ids_;
  const char* begin = text.data();
  for (const TextSection& s : raw_matcher_.Split(text, !options.parse_special)) {
    if (s.token_index >= 0) {
      ids.push_back(raw_matcher_.token(s.token_index).id);
    } else if (!s.text.empty()) {
      EncodeSection(s.text, s.text.data() == begin, &ids);
    }
  }
  if (options.add_special_tokens) ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
  return ids;
}

std::vector<std::string> Tokenizer::TokenTexts(std::span<const int32_t> ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    if (skip_special && IsSpecial(id)) continue;
    if (id >= 0 && id < vocab_size_ && added_index_[id] >= 0) {
      tokens.push_back(added_[added_index_[id]].content);
    } else if (const std::string* t = model_->IdToToken(id)) {
      tokens.push_back(*t);
    }
  }
  return tokens;
}

std::string Tokenizer::DecodeTokens(std::vector<std::string> tokens, bool raw) const {
  std::string out;
  if (!decoder_) {  // Hugging Face joins with spaces when there is no decoder
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
  } else {
    decoder_->DecodeChain(&tokens, raw);
    for (const std::string& t : tokens) out += t;
  }
  return raw ? out : ToValidUtf8(out);
}

std::string Tokenizer::DecodeRaw(std::span<const int32_t> ids, bool skip_special) const {
  return DecodeTokens(TokenTexts(ids, skip_special), /*raw=*/true);
}

std::string Tokenizer::Decode(std::span<const int32_t> ids, bool skip_special) const {
  return DecodeTokens(TokenTexts(ids, skip_special), /*raw=*/false);
}

std::string StreamDecoder::Step(int32_t id) {
  ids_.push_back(id);
  const std::string text = tokenizer_.DecodeRaw(ids_, skip_special_);
  const size_t complete = CompleteUtf8Prefix(text);
  if (complete <= prefix_bytes_) return {};
  std::string out = ToValidUtf8(std::string_view(text).substr(prefix_bytes_, complete - prefix_bytes_));
  if (complete < text.size()) {
    prefix_bytes_ = complete;  // emitted up to here; keep the tokens for context
    return out;
  }
  // Everything decoded so far is out: keep only the tokens since the last
  // context as the new context (a decoder may treat the first token apart).
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_tokens_));
  prefix_tokens_ = ids_.size();
  prefix_bytes_ = tokenizer_.DecodeRaw(ids_, skip_special_).size();
  return out;
}

std::string StreamDecoder::Flush() {
  const std::string text = tokenizer_.DecodeRaw(ids_, skip_special_);
  std::string out = text.size() > prefix_bytes_ ? ToValidUtf8(text.substr(prefix_bytes_)) : "";
  ids_.clear();
  prefix_tokens_ = prefix_bytes_ = 0;
  return out;
}

}  // namespace swan
