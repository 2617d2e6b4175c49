#include "tokenizer/pre_tokenizer.h"

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>
#include <vector>

#include "tokenizer/normalizer.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace swan {
namespace {

using nlohmann::json;

// The pattern GPT-2's ByteLevel pre-tokenizer uses when use_regex is true.
constexpr const char* kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| "
    "?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// One stretch of a piece: [begin, end) and whether it is a delimiter match.
struct Span {
  size_t begin, end;
  bool match;
};

// Emits the non-empty parts of text split at the spans by `behavior`.
void EmitSpans(std::string_view text, const std::vector<Span>& spans, SplitBehavior behavior,
               FunctionRef<void(std::string_view)> emit) {
  std::vector<std::pair<size_t, size_t>> parts;
  bool previous_match = false;
  for (const Span& s : spans) {
    switch (behavior) {
      case SplitBehavior::kRemoved:
        if (!s.match) parts.emplace_back(s.begin, s.end);
        break;
      case SplitBehavior::kIsolated: parts.emplace_back(s.begin, s.end); break;
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
  for (const auto& [b, e] : parts)
    if (e > b) emit(text.substr(b, e - b));
}

// Spans of text around the occurrences of a literal (left to right).
std::vector<Span> LiteralSpans(std::string_view text, std::string_view literal, bool invert) {
  std::vector<Span> spans;
  size_t last = 0;
  if (!literal.empty()) {
    for (size_t pos = text.find(literal); pos != std::string_view::npos;
         pos = text.find(literal, pos + literal.size())) {
      if (pos > last) spans.push_back({last, pos, invert});
      spans.push_back({pos, pos + literal.size(), !invert});
      last = pos + literal.size();
    }
  }
  if (last < text.size()) spans.push_back({last, text.size(), invert});
  return spans;
}

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(std::string literal, std::unique_ptr<Regex> regex, SplitBehavior behavior, bool invert)
      : literal_(std::move(literal)), regex_(std::move(regex)), behavior_(behavior), invert_(invert) {}

  void Split(std::string_view text, bool, FunctionRef<void(std::string_view)> emit) const override {
    if (!regex_) {
      EmitSpans(text, LiteralSpans(text, literal_, invert_), behavior_, emit);
      return;
    }
    if (behavior_ == SplitBehavior::kIsolated) {  // the common case: no span list
      size_t last = 0;
      regex_->ForEachMatch(text, [&](size_t b, size_t e) {
        if (b > last) emit(text.substr(last, b - last));
        emit(text.substr(b, e - b));
        last = e;
      });
      if (last < text.size()) emit(text.substr(last));
      return;
    }
    std::vector<Span> spans;
    size_t last = 0;
    regex_->ForEachMatch(text, [&](size_t b, size_t e) {
      if (b > last) spans.push_back({last, b, invert_});
      spans.push_back({b, e, !invert_});
      last = e;
    });
    if (last < text.size()) spans.push_back({last, text.size(), invert_});
    EmitSpans(text, spans, behavior_, emit);
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

  void Split(std::string_view text, bool, FunctionRef<void(std::string_view)> emit) const override {
    std::string prefixed;
    if (add_prefix_space_ && (text.empty() || text[0] != ' ')) {
      prefixed = " " + std::string(text);
      text = prefixed;
    }
    const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::Get();
    std::string mapped;  // the GPT-2 alphabet form of one part, reused
    auto map_and_emit = [&](std::string_view part) {
      mapped.clear();
      alphabet.EncodeAll(part, &mapped);
      emit(mapped);
    };
    if (!regex_) {
      map_and_emit(text);
      return;
    }
    size_t last = 0;
    regex_->ForEachMatch(text, [&](size_t b, size_t e) {
      if (b > last) map_and_emit(text.substr(last, b - last));
      map_and_emit(text.substr(b, e - b));
      last = e;
    });
    if (last < text.size()) map_and_emit(text.substr(last));
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
      : replacement_(std::move(replacement)), prepend_scheme_(std::move(prepend_scheme)), split_(split) {}

  void Split(std::string_view piece, bool first_section, FunctionRef<void(std::string_view)> emit) const override {
    std::string text = ReplaceAll(piece, " ", replacement_);
    const bool prepend = prepend_scheme_ == "always" || (prepend_scheme_ == "first" && first_section);
    if (prepend && text.compare(0, replacement_.size(), replacement_) != 0) text.insert(0, replacement_);
    if (!split_) {
      emit(text);
      return;
    }
    EmitSpans(text, LiteralSpans(text, replacement_, false), SplitBehavior::kMergedWithNext, emit);
  }

 private:
  std::string replacement_, prepend_scheme_;
  bool split_;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void Split(std::string_view text, bool first_section, FunctionRef<void(std::string_view)> emit) const override {
    Run(0, text, first_section, emit);
  }

 private:
  // Runs steps[i..] on text: each piece of step i goes through step i + 1.
  void Run(size_t i, std::string_view text, bool first_section, FunctionRef<void(std::string_view)> emit) const {
    if (i == steps_.size()) {
      emit(text);
      return;
    }
    steps_[i]->Split(text, first_section, [&](std::string_view piece) { Run(i + 1, piece, first_section, emit); });
  }

  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

SplitBehavior ParseBehavior(const json& config, const std::string& where) {
  const std::string b = config.value("behavior", std::string("Isolated"));
  if (b == "Removed") return SplitBehavior::kRemoved;
  if (b == "Isolated") return SplitBehavior::kIsolated;
  if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (b == "Contiguous") return SplitBehavior::kContiguous;
  throw std::invalid_argument(where + ".behavior: unknown split behavior '" + b + "'");
}

}  // namespace

std::unique_ptr<PreTokenizer> MakePreTokenizer(const json& config, const std::string& where) {
  if (config.is_null()) return nullptr;
  if (!config.is_object() || !config.contains("type") || !config["type"].is_string())
    throw std::invalid_argument(where + ": expected an object with a string \"type\"");
  const std::string type = config["type"].get<std::string>();
  if (type == "Sequence") {
    const json& list = config.value("pretokenizers", json());
    if (!list.is_array()) throw std::invalid_argument(where + ".pretokenizers: expected an array");
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto step = MakePreTokenizer(list[i], where + ".pretokenizers[" + std::to_string(i) + "]");
      if (step) steps.push_back(std::move(step));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(steps));
  }
  if (type == "Split") {
    const json& pattern = config.value("pattern", json());
    const SplitBehavior behavior = ParseBehavior(config, where);
    const bool invert = config.value("invert", false);
    if (pattern.contains("Regex") && pattern["Regex"].is_string())
      return std::make_unique<SplitPreTokenizer>(
          "", std::make_unique<Regex>(pattern["Regex"].get<std::string>(), where + ".pattern"), behavior, invert);
    if (pattern.contains("String") && pattern["String"].is_string())
      return std::make_unique<SplitPreTokenizer>(pattern["String"].get<std::string>(), nullptr, behavior, invert);
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
    return std::make_unique<MetaspacePreTokenizer>(config.value("replacement", std::string("\xE2\x96\x81")), scheme,
                                                   config.value("split", true));
  }
  throw std::invalid_argument(where + ".type: unsupported pre-tokenizer '" + type +
                              "' (swan supports Sequence, Split, ByteLevel, Metaspace)");
}

}  // namespace swan
