// UTF-8 helpers and the GPT-2 byte-to-character table used by byte-level BPE.
// Text is std::string holding UTF-8; invalid bytes are tolerated everywhere
// (decoded one byte at a time as kInvalidCodePoint), never a crash.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace swan {

inline constexpr char32_t kInvalidCodePoint = 0xFFFFFFFF;

// Decodes the character starting at text[pos]. Returns its length in bytes
// (1..4) and sets *cp; an invalid or truncated sequence gives length 1 and
// kInvalidCodePoint. Requires pos < text.size().
size_t DecodeUtf8(std::string_view text, size_t pos, char32_t* cp);

// Appends the UTF-8 encoding of cp (a valid scalar value).
void AppendUtf8(char32_t cp, std::string* out);

// True when every byte of text belongs to a well-formed UTF-8 character.
bool IsValidUtf8(std::string_view text);

// Length of the longest prefix of text that ends on a character boundary,
// treating a final incomplete (but so far valid) sequence as not yet ended.
// Invalid bytes count as complete (they will never become valid).
size_t CompleteUtf8Prefix(std::string_view text);

// Replaces ill-formed sequences with U+FFFD, as Rust's from_utf8_lossy and
// the WHATWG decoder do (one U+FFFD per maximal invalid subpart).
std::string ToValidUtf8(std::string_view text);

// GPT-2's byte-level alphabet: every byte maps to one printable character
// (e.g. ' ' -> 'Ġ' U+0120), so any byte string becomes vocabulary text.
class ByteLevelAlphabet {
 public:
  static const ByteLevelAlphabet& Get();
  // UTF-8 text of the character that stands for byte b.
  std::string_view Encode(uint8_t b) const { return {chars_[b].data(), lengths_[b]}; }
  // Appends the byte-level form of every byte of text.
  void EncodeAll(std::string_view text, std::string* out) const;
  // The byte a character stands for, or -1 if cp is not in the alphabet.
  int Decode(char32_t cp) const { return cp < 512 ? to_byte_[cp] : -1; }

 private:
  ByteLevelAlphabet();
  std::array<std::array<char, 2>, 256> chars_;
  std::array<uint8_t, 256> lengths_;
  std::array<int16_t, 512> to_byte_;
};

}  // namespace swan
