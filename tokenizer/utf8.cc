#include "tokenizer/utf8.h"

namespace swan {

size_t DecodeUtf8(std::string_view text, size_t pos, char32_t* cp) {
  const auto* s = reinterpret_cast<const uint8_t*>(text.data()) + pos;
  const size_t left = text.size() - pos;
  const uint8_t b0 = s[0];
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  size_t len;
  char32_t value;
  char32_t min;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, value = b0 & 0x1F, min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, value = b0 & 0x0F, min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, value = b0 & 0x07, min = 0x10000;
  } else {
    *cp = kInvalidCodePoint;
    return 1;
  }
  if (left < len) {
    *cp = kInvalidCodePoint;
    return 1;
  }
  for (size_t i = 1; i < len; ++i) {
    if ((s[i] & 0xC0) != 0x80) {
      *cp = kInvalidCodePoint;
      return 1;
    }
    value = (value << 6) | (s[i] & 0x3F);
  }
  if (value < min || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
    *cp = kInvalidCodePoint;
    return 1;
  }
  *cp = value;
  return len;
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool IsValidUtf8(std::string_view text) {
  char32_t cp;
  for (size_t pos = 0; pos < text.size();) {
    pos += DecodeUtf8(text, pos, &cp);
    if (cp == kInvalidCodePoint) return false;
  }
  return true;
}

// Length a sequence starting with lead byte b claims, or 0 if b cannot lead.
static size_t ClaimedLength(uint8_t b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

size_t CompleteUtf8Prefix(std::string_view text) {
  // Look back at most 3 bytes for a lead byte whose sequence runs past the end.
  const size_t n = text.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto b = static_cast<uint8_t>(text[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking
    const size_t want = ClaimedLength(b);
    if (want > back) {
      // Incomplete only if what is there is a valid start of a sequence.
      std::string padded(text.substr(n - back));
      // Complete it with the smallest continuation bytes that are valid.
      const uint8_t lo = b == 0xE0 ? 0xA0 : b == 0xF0 ? 0x90 : 0x80;
      const uint8_t hi = b == 0xED ? 0x9F : b == 0xF4 ? 0x8F : 0xBF;
      if (back >= 2) {
        const auto b1 = static_cast<uint8_t>(padded[1]);
        if (b1 < lo || b1 > hi) return n;
      }
      return n - back;
    }
    return n;
  }
  return n;
}

std::string ToValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  char32_t cp;
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = DecodeUtf8(text, pos, &cp);
    if (cp != kInvalidCodePoint) {
      out.append(text.substr(pos, len));
      pos += len;
      continue;
    }
    // Skip the maximal subpart: a lead byte followed by the continuation
    // bytes that were still valid for it.
    const auto b = static_cast<uint8_t>(text[pos]);
    const size_t want = ClaimedLength(b);
    size_t skip = 1;
    if (want > 1) {
      const uint8_t lo = b == 0xE0 ? 0xA0 : b == 0xF0 ? 0x90 : 0x80;
      const uint8_t hi = b == 0xED ? 0x9F : b == 0xF4 ? 0x8F : 0xBF;
      for (size_t i = 1; i < want && pos + i < text.size(); ++i) {
        const auto c = static_cast<uint8_t>(text[pos + i]);
        if (i == 1 ? (c < lo || c > hi) : (c & 0xC0) != 0x80) break;
        skip = i + 1;
      }
    }
    out.append("\xEF\xBF\xBD");
    pos += skip;
  }
  return out;
}

const ByteLevelAlphabet& ByteLevelAlphabet::Get() {
  static const ByteLevelAlphabet alphabet;
  return alphabet;
}

ByteLevelAlphabet::ByteLevelAlphabet() {
  to_byte_.fill(-1);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(next++);
    std::string utf8;
    AppendUtf8(cp, &utf8);
    lengths_[b] = static_cast<uint8_t>(utf8.size());
    chars_[b] = {utf8[0], utf8.size() > 1 ? utf8[1] : '\0'};
    to_byte_[cp] = static_cast<int16_t>(b);
  }
}

void ByteLevelAlphabet::EncodeAll(std::string_view text, std::string* out) const {
  for (const char c : text) out->append(Encode(static_cast<uint8_t>(c)));
}

}  // namespace swan
