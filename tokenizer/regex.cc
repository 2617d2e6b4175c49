#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdexcept>

namespace swan {

struct Regex::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
};

Regex::Regex(const std::string& pattern, const std::string& where) : impl_(new Impl) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    throw std::invalid_argument(where + ": regex does not compile at offset " + std::to_string(offset) + ": " +
                                reinterpret_cast<const char*>(message) + " (pattern " + pattern + ")");
  }
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() {
  if (impl_->code) pcre2_code_free(impl_->code);
}

void Regex::ForEachMatch(std::string_view text, FunctionRef<void(size_t, size_t)> on_match) const {
  // One match-data block per thread, reused across calls.
  struct MatchData {
    pcre2_match_data* data = pcre2_match_data_create(4, nullptr);
    ~MatchData() { pcre2_match_data_free(data); }
  };
  thread_local MatchData md;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos <= text.size()) {
    const int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, text.size(), pos, 0, md.data, nullptr)
                              : pcre2_match(impl_->code, subject, text.size(), pos, 0, md.data, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) return;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      throw std::runtime_error(std::string("regex match failed: ") + reinterpret_cast<const char*>(message));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.data);
    const size_t begin = ov[0], end = ov[1];
    if (end > begin) {
      on_match(begin, end);
      pos = end;
    } else {
      // Empty match: step over one character (or one invalid byte).
      pos = begin + 1;
      while (pos < text.size() && (static_cast<uint8_t>(text[pos]) & 0xC0) == 0x80 && pos - begin < 4) ++pos;
    }
  }
}

}  // namespace swan
