// A compiled PCRE2 pattern (UTF, Unicode properties, JIT) for the split
// regexes of tokenizer.json files. PCRE2 accepts the Oniguruma forms these
// files use: \p{L}, (?i:...), possessive quantifiers, lookahead.
// Matching tolerates invalid UTF-8: invalid bytes never match a character.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/function_ref.h"

namespace swan {

class Regex {
 public:
  // Throws std::invalid_argument naming `where` if the pattern does not
  // compile.
  Regex(const std::string& pattern, const std::string& where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Calls on_match(begin, end) for each successive non-overlapping,
  // non-empty match in text (byte offsets), left to right.
  void ForEachMatch(std::string_view text, FunctionRef<void(size_t, size_t)> on_match) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace swan
