// Pre-tokenizers of tokenizer.json ("pre_tokenizer" field): split normalized
// text into pieces that the model encodes independently. Byte-level BPE uses
// Split(regex) then ByteLevel (bytes -> GPT-2 alphabet); SentencePiece-style
// files use Metaspace or no pre-tokenizer at all.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "tokenizer/function_ref.h"

namespace swan {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Calls emit(piece) for each piece of text, in order. A piece is only
  // valid during the call. `first_section` is true when text starts the
  // input (no added token before it); Metaspace's prepend_scheme "first"
  // uses it.
  virtual void Split(std::string_view text, bool first_section, FunctionRef<void(std::string_view)> emit) const = 0;
};

// Returns nullptr for a JSON null. Throws std::invalid_argument naming the
// field for an unknown or malformed pre-tokenizer.
std::unique_ptr<PreTokenizer> MakePreTokenizer(const nlohmann::json& config, const std::string& where);

// How a Split pre-tokenizer treats the matches (HF's SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

}  // namespace swan
