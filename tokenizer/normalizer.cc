#include "tokenizer/normalizer.h"

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace swan {
namespace {

using nlohmann::json;

const icu::Normalizer2* GetIcuNormalizer(const std::string& form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  if (form == "NFC") n = icu::Normalizer2::getNFCInstance(status);
  if (form == "NFD") n = icu::Normalizer2::getNFDInstance(status);
  if (form == "NFKC") n = icu::Normalizer2::getNFKCInstance(status);
  if (form == "NFKD") n = icu::Normalizer2::getNFKDInstance(status);
  if (!n || U_FAILURE(status)) throw std::runtime_error("ICU has no normalizer " + form);
  return n;
}

std::string NormalizeValid(const icu::Normalizer2* n, std::string_view text) {
  // Quick path: pure ASCII is already normalized in every form.
  bool ascii = true;
  for (const char c : text) ascii = ascii && static_cast<uint8_t>(c) < 0x80;
  if (ascii) return std::string(text);
  UErrorCode status = U_ZERO_ERROR;
  const icu::UnicodeString in =
      icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  if (n->isNormalized(in, status) && U_SUCCESS(status)) return std::string(text);
  status = U_ZERO_ERROR;
  const icu::UnicodeString out = n->normalize(in, status);
  if (U_FAILURE(status)) throw std::runtime_error("ICU normalization failed");
  std::string result;
  out.toUTF8String(result);
  return result;
}

class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(std::string form) : form_(std::move(form)) {}
  std::string Normalize(std::string_view text) const override { return UnicodeNormalize(text, form_); }

 private:
  std::string form_;
};

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  std::string Normalize(std::string_view text) const override {
    std::string s(text);
    for (const auto& step : steps_) s = step->Normalize(s);
    return s;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

// Prepend: adds a prefix to non-empty text (HF skips empty input).
class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string Normalize(std::string_view text) const override {
    if (text.empty()) return {};
    return prefix_ + std::string(text);
  }

 private:
  std::string prefix_;
};

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(std::string from, std::unique_ptr<Regex> regex, std::string to)
      : from_(std::move(from)), regex_(std::move(regex)), to_(std::move(to)) {}
  std::string Normalize(std::string_view text) const override {
    if (!regex_) return ReplaceAll(text, from_, to_);
    std::string out;
    size_t last = 0;
    regex_->ForEachMatch(text, [&](size_t b, size_t e) {
      out.append(text.substr(last, b - last));
      out.append(to_);
      last = e;
    });
    out.append(text.substr(last));
    return out;
  }

 private:
  std::string from_;
  std::unique_ptr<Regex> regex_;
  std::string to_;
};

class LowercaseNormalizer : public Normalizer {
 public:
  std::string Normalize(std::string_view text) const override {
    icu::UnicodeString s =
        icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
    std::string out;
    s.toLower(icu::Locale::getRoot()).toUTF8String(out);
    return out;
  }
};

// Strip: removes leading and/or trailing Unicode whitespace.
class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  std::string Normalize(std::string_view text) const override {
    static const Regex lead("^\\s+", "Strip"), trail("\\s+$", "Strip");
    size_t begin = 0, end = text.size();
    if (left_) lead.ForEachMatch(text, [&](size_t, size_t e) { begin = e; });
    if (right_)
      trail.ForEachMatch(text, [&](size_t b, size_t e) {
        if (e == text.size()) end = b;
      });
    return begin < end ? std::string(text.substr(begin, end - begin)) : std::string();
  }

 private:
  bool left_, right_;
};

std::string GetString(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_string()) throw std::invalid_argument(where + "." + key + ": expected a string");
  return j[key].get<std::string>();
}

}  // namespace

std::string ReplaceAll(std::string_view text, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  for (;;) {
    const size_t hit = text.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(text.substr(pos));
  return out;
}

std::string UnicodeNormalize(std::string_view text, const std::string& form) {
  const icu::Normalizer2* n = GetIcuNormalizer(form);
  std::string out;
  size_t run = 0, pos = 0;
  char32_t cp;
  while (pos < text.size()) {
    const size_t len = DecodeUtf8(text, pos, &cp);
    if (cp == kInvalidCodePoint) {
      out += NormalizeValid(n, text.substr(run, pos - run));
      out.push_back(text[pos]);
      run = pos + 1;
    }
    pos += len;
  }
  if (run == 0) return NormalizeValid(n, text);
  out += NormalizeValid(n, text.substr(run));
  return out;
}

std::unique_ptr<Normalizer> MakeNormalizer(const json& config, const std::string& where) {
  if (config.is_null()) return nullptr;
  if (!config.is_object()) throw std::invalid_argument(where + ": expected an object or null");
  const std::string type = GetString(config, "type", where);
  if (type == "Sequence") {
    if (!config.contains("normalizers") || !config["normalizers"].is_array())
      throw std::invalid_argument(where + ".normalizers: expected an array");
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (size_t i = 0; i < config["normalizers"].size(); ++i) {
      auto step = MakeNormalizer(config["normalizers"][i], where + ".normalizers[" + std::to_string(i) + "]");
      if (step) steps.push_back(std::move(step));
    }
    return std::make_unique<SequenceNormalizer>(std::move(steps));
  }
  if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD")
    return std::make_unique<UnicodeNormalizer>(type);
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(GetString(config, "prepend", where));
  if (type == "Replace") {
    const std::string content = GetString(config, "content", where);
    const json& pattern = config.value("pattern", json());
    if (pattern.contains("String") && pattern["String"].is_string())
      return std::make_unique<ReplaceNormalizer>(pattern["String"].get<std::string>(), nullptr, content);
    if (pattern.contains("Regex") && pattern["Regex"].is_string())
      return std::make_unique<ReplaceNormalizer>(
          "", std::make_unique<Regex>(pattern["Regex"].get<std::string>(), where + ".pattern"), content);
    throw std::invalid_argument(where + ".pattern: expected {\"String\": ...} or {\"Regex\": ...}");
  }
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Strip")
    return std::make_unique<StripNormalizer>(config.value("left", true), config.value("right", true));
  throw std::invalid_argument(where + ".type: unsupported normalizer '" + type +
                              "' (swan supports Sequence, NFC, NFD, NFKC, NFKD, Prepend, Replace, "
                              "Lowercase, Strip)");
}

}  // namespace swan
