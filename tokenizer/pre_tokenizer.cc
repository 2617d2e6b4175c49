#include "tokenizer/pre_tokenizer.h"

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

#include "tokenizer/normalizer.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace swan {
namespace {

using nlohmann::json;

// The pattern GPT-2's ByteLevel pre-tokenizer uses when use_regex is true.
constexpr const char *kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| "
    "?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// One stretch of a piece: [begin, end) and whether it is a delimiter match.
struct Span {
  size_t begin, end;
  bool match;
};

// Splits text at the spans by `behavior`, appending the non-empty parts.
void SplitSpans(const std::string &text, const std::vector<Span> &spans, SplitBehavior behavior,
                std::vector<std::string> *out) {
  std::vector<std::pair<size_t, size_t>> parts;
  bool previous_match = false;
  for (size_t i = 0; i < spans.size(); ++i) {
    const Span &s = spans[i];
    switch (behavior) {
      case SplitBehavior::kRemoved:
        if (!s.match) parts.emplace_back(s.begin, s.end);
        break;
      case SplitBehavior::kIsolated:
        parts.emplace_back(s.begin, s.end);
        break;
      case SplitBehavior::kMergedWithPrevious:
        if (s.match && !previous_match && !parts.empty())
          parts.back().second = s.end;
        else
          parts.emplace_back(s.begin, s.end);
        break;
      case SplitBehavior::kMergedWithNext:
        if (previous_match && !s.match && !parts.empty())
          parts.back().second = s.end;
        else
          parts.emplace_back(s.begin, s.end);
        break;
      case SplitBehavior::kContiguous:
        if (s.match == previous_match && !parts.empty())
          parts.back().second = s.end;
        else
          parts.emplace_back(s.begin, s.end);
        break;
    }
    previous_match = s.match;
  }
  for (const auto &[b, e] : parts)
    if (e > b) out->emplace_back(text.substr(b, e - b));
}

// Spans of text split at the matches of `find` (a function listing matches).
template <typename FindFn>
std::vector<Span> SpansOf(const std::string &text, bool invert, FindFn find) {
  std::vector<Span> spans;
  size_t last = 0;
  find(text, [&](size_t b, size_t e) {
    if (b > last) spans.push_back({last, b, invert});
    spans.push_back({b, e, !invert});
    last = e;
  });
  if (last < text.size()) spans.push_back({last, text.size(), invert});
  return spans;
}

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(std::string literal, std::unique_ptr<Regex> regex, SplitBehavior behavior,
                    bool invert)
      : literal_(std::move(literal)),
        regex_(std::move(regex)),
        behavior_(behavior),
        invert_(invert) {}

  void Split(std::vector<std::string> *pieces, bool) const override {
    std::vector<std::string> out;
    out.reserve(pieces->size() * 4);
    for (const std::string &piece : *pieces) {
      auto find = [&](const std::string &text, auto on_match) {
        if (regex_) {
          regex_->ForEachMatch(text, on_match);
        } else if (!literal_.empty()) {
          for (size_t pos = text.find(literal_); pos != std::string::npos;
               pos = text.find(literal_, pos + literal_.size()))
            on_match(pos, pos + literal_.size());
        }
      };
      // Fast path for the common Isolated case: no span list needed.
      if (behavior_ == SplitBehavior::kIsolated && regex_) {
        size_t last = 0;
        regex_->ForEachMatch(piece, [&](size_t b, size_t e) {
          if (b > last) out.emplace_back(piece.substr(last, b - last));
          out.emplace_back(piece.substr(b, e - b));
          last = e;
        });
        if (last < piece.size()) out.emplace_back(piece.substr(last));
        continue;
      }
      SplitSpans(piece, SpansOf(piece, invert_, find), behavior_, &out);
    }
    *pieces = std::move(out);
  }

 private:
  std::string literal_;
  std::unique_ptr<Regex> regex_;
  SplitBehavior behavior_;
  bool invert_;
};

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space),
        regex_(use_regex ? std::make_unique<Regex>(kGpt2Pattern, "ByteLevel") : nullptr) {}

  void Split(std::vector<std::string> *pieces, bool) const override {
    const ByteLevelAlphabet &alphabet = ByteLevelAlphabet::Get();
    std::vector<std::string> out;
    out.reserve(pieces->size());
    for (std::string &piece : *pieces) {
      if (add_prefix_space_ && (piece.empty() || piece[0] != ' ')) piece.insert(0, " ");
      auto emit = [&](std::string_view part) {
        std::string mapped;
        mapped.reserve(part.size() * 2);
        alphabet.EncodeAll(part, &mapped);
        out.push_back(std::move(mapped));
      };
      if (!regex_) {
        emit(piece);
        continue;
      }
      size_t last = 0;
      regex_->ForEachMatch(piece, [&](size_t b, size_t e) {
        if (b > last) emit(std::string_view(piece).substr(last, b - last));
        emit(std::string_view(piece).substr(b, e - b));
        last = e;
      });
      if (last < piece.size()) emit(std::string_view(piece).substr(last));
    }
    *pieces = std::move(out);
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

// Metaspace: spaces become the replacement character (default "▁"), a
// replacement is prepended by `prepend_scheme`, then (if split) the text is
// split before each replacement character.
class MetaspacePreTokenizer : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, std::string prepend_scheme, bool split)
      : replacement_(std::move(replacement)),
        prepend_scheme_(std::move(prepend_scheme)),
        split_(split) {}

  void Split(std::vector<std::string> *pieces, bool first_section) const override {
    std::vector<std::string> out;
    for (const std::string &piece : *pieces) {
      std::string text = ReplaceAll(piece, " ", replacement_);
      const bool prepend =
          prepend_scheme_ == "always" || (prepend_scheme_ == "first" && first_section);
      if (prepend && text.compare(0, replacement_.size(), replacement_) != 0)
        text.insert(0, replacement_);
      if (!split_) {
        out.push_back(std::move(text));
        continue;
      }
      auto find = [&](const std::string &t, auto on_match) {
        for (size_t pos = t.find(replacement_); pos != std::string::npos;
             pos = t.find(replacement_, pos + replacement_.size()))
          on_match(pos, pos + replacement_.size());
      };
      SplitSpans(text, SpansOf(text, false, find), SplitBehavior::kMergedWithNext, &out);
    }
    *pieces = std::move(out);
  }

 private:
  std::string replacement_, prepend_scheme_;
  bool split_;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void Split(std::vector<std::string> *pieces, bool first_section) const override {
    for (const auto &step : steps_) step->Split(pieces, first_section);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

SplitBehavior ParseBehavior(const json &config, const std::string &where) {
  const std::string b = config.value("behavior", std::string("Isolated"));
  if (b == "Removed") return SplitBehavior::kRemoved;
  if (b == "Isolated") return SplitBehavior::kIsolated;
  if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (b == "Contiguous") return SplitBehavior::kContiguous;
  throw std::invalid_argument(where + ".behavior: unknown split behavior '" + b + "'");
}

}  // namespace

std::unique_ptr<PreTokenizer> MakePreTokenizer(const json &config, const std::string &where) {
  if (config.is_null()) return nullptr;
  if (!config.is_object() || !config.contains("type") || !config["type"].is_string())
    throw std::invalid_argument(where + ": expected an object with a string \"type\"");
  const std::string type = config["type"].get<std::string>();
  if (type == "Sequence") {
    const json &list = config.value("pretokenizers", json());
    if (!list.is_array()) throw std::invalid_argument(where + ".pretokenizers: expected an array");
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto step = MakePreTokenizer(list[i], where + ".pretokenizers[" + std::to_string(i) + "]");
      if (step) steps.push_back(std::move(step));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(steps));
  }
  if (type == "Split") {
    const json &pattern = config.value("pattern", json());
    const SplitBehavior behavior = ParseBehavior(config, where);
    const bool invert = config.value("invert", false);
    if (pattern.contains("Regex") && pattern["Regex"].is_string())
      return std::make_unique<SplitPreTokenizer>(
          "", std::make_unique<Regex>(pattern["Regex"].get<std::string>(), where + ".pattern"),
          behavior, invert);
    if (pattern.contains("String") && pattern["String"].is_string())
      return std::make_unique<SplitPreTokenizer>(pattern["String"].get<std::string>(), nullptr,
                                                 behavior, invert);
    throw std::invalid_argument(where + ".pattern: expected {\"Regex\": ...} or {\"String\": ...}");
  }
  if (type == "ByteLevel")
    return std::make_unique<ByteLevelPreTokenizer>(config.value("add_prefix_space", false),
                                                   config.value("use_regex", true));
  if (type == "Metaspace") {
    std::string scheme = config.value("prepend_scheme", std::string());
    if (scheme.empty()) scheme = config.value("add_prefix_space", true) ? "always" : "never";
    if (scheme != "always" && scheme != "first" && scheme != "never")
      throw std::invalid_argument(where + ".prepend_scheme: expected always, first or never");
    return std::make_unique<MetaspacePreTokenizer>(
        config.value("replacement", std::string("\xE2\x96\x81")), scheme,
        config.value("split", true));
  }
  throw std::invalid_argument(where + ".type: unsupported pre-tokenizer '" + type +
                              "' (swan supports Sequence, Split, ByteLevel, Metaspace)");
}

}  // namespace swan
