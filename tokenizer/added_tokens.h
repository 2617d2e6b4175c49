// Added tokens of tokenizer.json ("added_tokens": <s>, <|endoftext|>,
// <start_of_turn>, ...): found in the text before the model runs, by
// leftmost-longest match, and emitted as their own id.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace swan {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;      // a control token (skipped by Decode(skip_special))
  bool normalized = false;   // matched in normalized text rather than raw text
  bool lstrip = false;       // absorbs whitespace on its left
  bool rstrip = false;       // absorbs whitespace on its right
  bool single_word = false;  // only matches when not inside a word
};

// Reads the "added_tokens" array. Throws std::invalid_argument naming the
// field.
std::vector<AddedToken> ParseAddedTokens(const nlohmann::json& list, const std::string& where);

// One stretch of the input: either plain text or an added token.
struct TextSection {
  std::string_view text;
  int32_t token_index = -1;  // index into the matcher's tokens, or -1 for plain text
};

// Finds a set of added tokens in text (a byte trie, leftmost-longest).
class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // `tokens` holds the tokens to look for; `contents` the text to match for
  // each (its content, or its normalized content). Both outlive the matcher.
  void Build(const std::vector<const AddedToken*>& tokens, const std::vector<std::string>& contents);
  bool empty() const { return tokens_.empty(); }
  const AddedToken& token(int32_t index) const { return *tokens_[index]; }

  // Splits text into plain sections and added tokens, in order. Sections may
  // be empty after lstrip/rstrip. `skip_special`: ignore special tokens.
  std::vector<TextSection> Split(std::string_view text, bool skip_special) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // sorted by byte
    int32_t token = -1;                                 // token ending here, or -1
  };
  int32_t Child(int32_t node, uint8_t byte) const;
  // Length and token index of the longest match at text[pos], or {0, -1}.
  std::pair<size_t, int32_t> LongestAt(std::string_view text, size_t pos, bool skip_special) const;

  std::vector<Node> nodes_;
  std::vector<const AddedToken*> tokens_;
  bool first_byte_[256] = {};
};

}  // namespace swan
