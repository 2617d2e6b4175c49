// A tokenizer read from a Hugging Face tokenizer.json: encode text to token
// ids and decode ids to text with the same results as the `tokenizers`
// library, for BPE models of both families (byte-level: GPT-2, Llama 3,
// Qwen, gpt-oss; SentencePiece-style with byte fallback: Llama 2, Mistral,
// Gemma).
//
//   Tokenizer tok = Tokenizer::Load("models/llama3");   // dir or file
//   std::vector<int32_t> ids = tok.Encode("Hello world");
//   std::string text = tok.Decode(ids);
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/added_tokens.h"

namespace swan {

class BpeModel;
class Decoder;
class Normalizer;
class PreTokenizer;

struct EncodeOptions {
  // Add the post-processor's tokens (e.g. BOS "<s>") around the text.
  bool add_special_tokens = true;
  // Recognize special tokens written in the text ("<|endoftext|>"). When
  // false, such text is encoded as ordinary characters.
  bool parse_special = true;
};

class Tokenizer {
 public:
  // Reads PATH/tokenizer.json if PATH is a directory, else the file PATH.
  // BOS/EOS come from the post-processor, or from config.json,
  // generation_config.json or tokenizer_config.json beside the file.
  // Throws std::runtime_error / std::invalid_argument naming the file and
  // the field when the file is unreadable, not JSON or unsupported.
  static Tokenizer Load(const std::string& path);
  // Builds from the parsed JSON; `source` names it in error messages.
  static Tokenizer FromJson(const nlohmann::json& json, const std::string& source);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  std::vector<int32_t> Encode(std::string_view text, const EncodeOptions& options = {}) const;
  // Text of the ids; ids that name no token are skipped. With
  // skip_special, special added tokens (BOS, EOS, ...) are left out.
  std::string Decode(std::span<const int32_t> ids, bool skip_special = false) const;
  // Like Decode but keeps bytes that are not valid UTF-8 as they are.
  std::string DecodeRaw(std::span<const int32_t> ids, bool skip_special = false) const;

  // Takes BOS/EOS from config.json-style fields ("bos_token_id",
  // "eos_token_id": an id or a list), as Load does from the files beside a
  // tokenizer.json; for tokenizers read from elsewhere (GGUF metadata).
  void UseSpecialIds(const nlohmann::json& config);

  // One past the largest token id (model vocabulary and added tokens).
  int32_t vocab_size() const { return vocab_size_; }
  int32_t bos_id() const { return bos_id_; }  // -1 if none
  int32_t eos_id() const { return eos_id_; }  // -1 if none
  // Every end-of-sequence id a generator should stop at (e.g. Llama 3's
  // generation_config.json lists <|end_of_text|> and <|eot_id|>); eos_id() first.
  const std::vector<int32_t>& eos_ids() const { return eos_ids_; }
  int32_t TokenToId(std::string_view token) const;  // -1 if none
  std::string IdToToken(int32_t id) const;          // "" if none
  bool IsSpecial(int32_t id) const;
  const std::vector<AddedToken>& added_tokens() const { return added_; }
  // Ids the post-processor puts before and after a single sequence.
  const std::vector<int32_t>& prefix_ids() const { return prefix_ids_; }
  const std::vector<int32_t>& suffix_ids() const { return suffix_ids_; }

 private:
  Tokenizer();
  std::vector<std::string> TokenTexts(std::span<const int32_t> ids, bool skip_special) const;
  std::string DecodeTokens(std::vector<std::string> tokens, bool raw) const;
  void EncodeSection(std::string_view text, bool first_section, std::vector<int32_t>* ids) const;
  void ReadPostProcessor(const nlohmann::json& config, const std::string& where);
  void ReadSpecialIds(const std::string& dir);
  void ReadSpecialIds(const nlohmann::json& generation, const nlohmann::json& config,
                      const nlohmann::json& tokenizer_config);

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<Decoder> decoder_;
  std::vector<AddedToken> added_;
  std::vector<int32_t> added_index_;  // [vocab_size_] index into added_ or -1
  std::vector<std::string> normalized_contents_;
  AddedTokenMatcher raw_matcher_;         // tokens matched before normalization
  AddedTokenMatcher normalized_matcher_;  // tokens matched after normalization
  std::vector<int32_t> prefix_ids_, suffix_ids_;
  int32_t vocab_size_ = 0;
  int32_t bos_id_ = -1;
  int32_t eos_id_ = -1;
  std::vector<int32_t> eos_ids_;
};

// Turns ids into text as they arrive (one generated token at a time), never
// emitting half a UTF-8 character when a character spans several tokens.
// The concatenation of every Step() and the final Flush() equals
// Decode(all ids) for valid text.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = false)
      : tokenizer_(tokenizer), skip_special_(skip_special) {}
  // Returns the text that became complete with this token (may be empty).
  std::string Step(int32_t id);
  // Returns what is left (incomplete bytes become U+FFFD).
  std::string Flush();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::vector<int32_t> ids_;  // context tokens, then tokens not yet emitted
  size_t prefix_tokens_ = 0;  // how many of ids_ are context already emitted
  size_t prefix_bytes_ = 0;   // length of DecodeRaw(context)
};

}  // namespace swan
