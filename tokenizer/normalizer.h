// Normalizers of tokenizer.json ("normalizer" field): text -> text before the
// pre-tokenizer runs, e.g. Llama 2's Prepend("▁") + Replace(" " -> "▁"),
// Qwen's NFC. Built from the JSON by MakeNormalizer.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace swan {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string Normalize(std::string_view text) const = 0;
};

// Returns nullptr for a JSON null. Throws std::invalid_argument naming the
// field for an unknown or malformed normalizer.
std::unique_ptr<Normalizer> MakeNormalizer(const nlohmann::json& config, const std::string& where);

// Unicode normalization form: "NFC", "NFD", "NFKC" or "NFKD". Invalid UTF-8
// bytes are kept as they are; the valid runs between them are normalized.
std::string UnicodeNormalize(std::string_view text, const std::string& form);

// Replaces every non-overlapping occurrence of `from` (left to right).
std::string ReplaceAll(std::string_view text, std::string_view from, std::string_view to);

}  // namespace swan
