// Building long prompts out of token pieces with exact lengths: the text
// pieces of a task (instruction, needles, question), filler sentences, and
// a haystack that places needles at chosen token positions.
//
// Pieces are encoded one by one and their tokens concatenated, so a prompt's
// length in tokens and the position of every needle are exact by
// construction, for any tokenizer. PieceEncoder encodes a piece as it reads
// after a space in running text (it finds out once whether the tokenizer
// wants the space written, as byte-level BPE does, or adds it itself, as
// SentencePiece-style tokenizers do).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace swan {

class PieceEncoder {
 public:
  explicit PieceEncoder(const Tokenizer& tokenizer);

  // Tokens of `text` as it reads after a space in running text.
  std::vector<int32_t> Mid(const std::string& text) const;
  // Tokens of `text` at the start of a document (no special tokens).
  std::vector<int32_t> Start(const std::string& text) const;
  // "" or " ": what is written before a piece in Mid().
  const std::string& joiner() const { return joiner_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }

 private:
  const Tokenizer& tokenizer_;
  std::string joiner_ = " ";
};

// Sentences that fill the space between needles, each encoded by Mid().
struct Filler {
  std::vector<std::vector<int32_t>> sentences;  // [n_sentences][tokens]
};

// RULER's noise haystack: "The grass is green. The sky is blue. The sun is
// yellow. Here we go. There and back again." repeated.
Filler NoiseFiller(const PieceEncoder& encoder);
// The sentences of a text (split after '.', '!' or '?' followed by white
// space, and at blank lines). Throws std::invalid_argument when the text
// has no sentence.
Filler TextFiller(const PieceEncoder& encoder, const std::string& text);

// A needle (or any piece) to place at a token position.
struct Insertion {
  int64_t target = 0;           // wanted start position in the haystack
  std::vector<int32_t> tokens;  // must be non-empty
};

struct Haystack {
  std::vector<int32_t> tokens;  // [length]
  std::vector<int64_t> starts;  // [insertions] where each insertion starts, in the order given
};

struct HaystackOptions {
  std::vector<int32_t> prefix;  // tokens at the start (BOS, instruction)
  int64_t length = 0;           // exact length of the result, prefix included
  size_t first_sentence = 0;    // where in the filler to start (it wraps around)
  // true: needles go to the sentence boundary nearest their target (as RULER
  // inserts them); false: exactly at the target, cutting a sentence.
  bool snap_to_sentences = true;
};

// Prefix, then filler sentences with the insertions placed at their targets
// (clamped so that each fits after the prefix and before `length`), the
// last sentence cut to give exactly `length` tokens. Throws
// std::invalid_argument when the prefix and insertions do not fit.
Haystack BuildHaystack(const HaystackOptions& options, const Filler& filler, std::vector<Insertion> insertions);

}  // namespace swan
