// Pre-tokenizers of tokenizer.json ("pre_tokenizer" field): split normalized
// text into pieces that the model encodes independently. Byte-level BPE uses
// Split(regex) then ByteLevel (bytes -> GPT-2 alphabet); SentencePiece-style
// files use Metaspace or no pre-tokenizer at all.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace swan {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` by their pre-tokenized pieces, in order. `first_section`
  // is true for the first text section of the input (before any added token);
  // Metaspace's prepend_scheme "first" uses it.
  virtual void Split(std::vector<std::string> *pieces, bool first_section) const = 0;
};

// Returns nullptr for a JSON null. Throws std::invalid_argument naming the
// field for an unknown or malformed pre-tokenizer.
std::unique_ptr<PreTokenizer> MakePreTokenizer(const nlohmann::json &config,
                                               const std::string &where);

// How a Split pre-tokenizer treats the matches (HF's SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

}  // namespace swan
