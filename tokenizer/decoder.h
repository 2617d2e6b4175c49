// Decoders of tokenizer.json ("decoder" field): token texts -> text, the
// reverse of the normalizer, pre-tokenizer and model. ByteLevel maps the
// GPT-2 alphabet back to bytes; SentencePiece files chain Replace("▁"->" "),
// ByteFallback (<0xHH> -> byte), Fuse and Strip.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace swan {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Transforms the token texts in place (HF's decode_chain). With `raw`, byte
  // decoders keep bytes that are not valid UTF-8 as they are (for streaming);
  // otherwise they replace them as Hugging Face does.
  virtual void DecodeChain(std::vector<std::string>* tokens, bool raw) const = 0;
};

// Returns nullptr for a JSON null. Throws std::invalid_argument naming the
// field for an unknown or malformed decoder.
std::unique_ptr<Decoder> MakeDecoder(const nlohmann::json& config, const std::string& where);

}  // namespace swan
