// Generated tokens to text for a client: incremental UTF-8-safe decoding
// and stop sequences. Text that could be the start of a stop sequence is
// held back until it is known not to be one, so a stop sequence never
// reaches the client, even split over several tokens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace swan {

class TextStream {
 public:
  TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop);

  // Adds one token; returns the text that may be sent now (may be empty).
  // After a stop sequence appears, stopped() is true and the text from it
  // on is dropped.
  std::string Add(int32_t id);
  // What is still held back, at the end of generation without a stop.
  std::string Finish();
  bool stopped() const { return stopped_; }

 private:
  StreamDecoder decoder_;
  std::vector<std::string> stop_;
  std::string pending_;  // decoded, not yet sent
  bool stopped_ = false;
};

}  // namespace swan
