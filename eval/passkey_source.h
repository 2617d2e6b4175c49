// Passkey items in RULER's noise for a text model directory, in the model's
// own tokens: what `swan heads` traces and `swan train --head-gates` trains
// the gates on.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "eval/haystack.h"
#include "eval/tasks.h"
#include "tokenizer/tokenizer.h"

namespace swan {

class PasskeySource {
 public:
  // Reads DIR's config and tokenizer; throws as LoadModelConfig and
  // LoadModelTokenizer do.
  explicit PasskeySource(const std::string& model_dir);
  PasskeySource(const PasskeySource&) = delete;  // the encoder refers to the tokenizer
  PasskeySource& operator=(const PasskeySource&) = delete;

  // min(1024, the model's context), or 1024 when the config has none.
  int64_t default_length() const { return default_length_; }
  // A passkey item of `length` prompt tokens with its needle at `depth`
  // (0..1); throws std::invalid_argument below 64 tokens.
  TaskItem Make(int64_t length, double depth, uint64_t seed) const;

 private:
  Tokenizer tokenizer_;
  std::unique_ptr<PieceEncoder> encoder_;
  Filler filler_;
  int32_t bos_ = -1;
  int64_t default_length_ = 1024;
};

}  // namespace swan
