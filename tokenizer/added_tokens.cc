#include "tokenizer/added_tokens.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tokenizer/utf8.h"

namespace swan {
namespace {

bool IsSpaceByte(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

bool IsWordChar(char32_t cp) {
  return cp == '_' || (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
         (cp >= 0x80 && cp != kInvalidCodePoint);
}

}  // namespace

std::vector<AddedToken> ParseAddedTokens(const nlohmann::json& list, const std::string& where) {
  std::vector<AddedToken> out;
  if (list.is_null()) return out;
  if (!list.is_array()) throw std::invalid_argument(where + ": expected an array");
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& t = list[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || !t.contains("content") ||
        !t["content"].is_string())
      throw std::invalid_argument(at + ": expected {\"id\": integer, \"content\": string, ...}");
    AddedToken token;
    const auto id = t["id"].get<int64_t>();
    if (id < 0 || id >= (1ll << 30)) throw std::invalid_argument(at + ".id: out of range");
    token.id = static_cast<int32_t>(id);
    token.content = t["content"].get<std::string>();
    if (token.content.empty()) throw std::invalid_argument(at + ".content: empty");
    auto flag = [&](const char* key, bool fallback) {
      return t.contains(key) && t[key].is_boolean() ? t[key].get<bool>() : fallback;
    };
    token.special = flag("special", false);
    token.normalized = flag("normalized", !token.special);
    token.lstrip = flag("lstrip", false);
    token.rstrip = flag("rstrip", false);
    token.single_word = flag("single_word", false);
    out.push_back(std::move(token));
  }
  return out;
}

int32_t AddedTokenMatcher::Child(int32_t node, uint8_t byte) const {
  const auto& c = nodes_[node].children;
  auto it = std::lower_bound(c.begin(), c.end(), std::make_pair(byte, int32_t{-1}));
  return it != c.end() && it->first == byte ? it->second : -1;
}

void AddedTokenMatcher::Build(const std::vector<const AddedToken*>& tokens, const std::vector<std::string>& contents) {
  nodes_.assign(1, Node{});
  tokens_ = tokens;
  std::fill(std::begin(first_byte_), std::end(first_byte_), false);
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::string& s = contents[t];
    if (s.empty()) continue;
    first_byte_[static_cast<uint8_t>(s[0])] = true;
    int32_t node = 0;
    for (const char ch : s) {
      const auto b = static_cast<uint8_t>(ch);
      int32_t next = Child(node, b);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        nodes_.push_back(Node{});
        auto& c = nodes_[node].children;
        c.insert(std::lower_bound(c.begin(), c.end(), std::make_pair(b, int32_t{-1})), {b, next});
      }
      node = next;
    }
    if (nodes_[node].token < 0) nodes_[node].token = static_cast<int32_t>(t);
  }
}

std::pair<size_t, int32_t> AddedTokenMatcher::LongestAt(std::string_view text, size_t pos, bool skip_special) const {
  std::pair<size_t, int32_t> best{0, -1};
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    node = Child(node, static_cast<uint8_t>(text[i]));
    if (node < 0) break;
    const int32_t t = nodes_[node].token;
    if (t < 0 || (skip_special && tokens_[t]->special)) continue;
    if (tokens_[t]->single_word) {
      // Not preceded or followed by a word character.
      char32_t before = 0, after = 0;
      if (pos > 0) {
        size_t start = pos - 1;
        while (start > 0 && pos - start < 4 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
        DecodeUtf8(text, start, &before);
      }
      if (i + 1 < text.size()) DecodeUtf8(text, i + 1, &after);
      if ((pos > 0 && IsWordChar(before)) || (i + 1 < text.size() && IsWordChar(after))) continue;
    }
    best = {i + 1 - pos, t};
  }
  return best;
}

std::vector<TextSection> AddedTokenMatcher::Split(std::string_view text, bool skip_special) const {
  std::vector<TextSection> out;
  if (tokens_.empty()) {
    out.push_back({text, -1});
    return out;
  }
  size_t start = 0;  // start of the current plain section
  size_t pos = 0;
  while (pos < text.size()) {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    const auto [len, t] = LongestAt(text, pos, skip_special);
    if (t < 0) {
      ++pos;
      continue;
    }
    size_t plain_end = pos;
    if (tokens_[t]->lstrip)
      while (plain_end > start && IsSpaceByte(text[plain_end - 1])) --plain_end;
    out.push_back({text.substr(start, plain_end - start), -1});
    out.push_back({text.substr(pos, len), t});
    pos += len;
    if (tokens_[t]->rstrip)
      while (pos < text.size() && IsSpaceByte(text[pos])) ++pos;
    start = pos;
  }
  out.push_back({text.substr(start), -1});
  return out;
}

}  // namespace swan
