#include "tokenizer/decoder.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tokenizer/normalizer.h"
#include "tokenizer/utf8.h"

namespace swan {
namespace {

using nlohmann::json;

// ByteLevel: every token's characters back to bytes; all tokens fused into one.
class ByteLevelDecoder : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>* tokens, bool raw) const override {
    const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::Get();
    std::string bytes;
    std::string token_bytes;
    for (const std::string& t : *tokens) {
      token_bytes.clear();
      bool all_mapped = true;
      char32_t cp;
      for (size_t pos = 0; pos < t.size() && all_mapped;) {
        pos += DecodeUtf8(t, pos, &cp);
        const int b = cp == kInvalidCodePoint ? -1 : alphabet.Decode(cp);
        if (b < 0) all_mapped = false;
        token_bytes.push_back(static_cast<char>(b));
      }
      bytes += all_mapped ? token_bytes : t;  // a token outside the alphabet stays as it is
    }
    tokens->assign(1, raw ? bytes : ToValidUtf8(bytes));
  }
};

// ByteFallback: runs of <0xHH> tokens become the bytes they name. Hugging
// Face replaces a run that is not valid UTF-8 with one U+FFFD per byte.
class ByteFallbackDecoder : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>* tokens, bool raw) const override {
    std::vector<std::string> out;
    std::string run;
    size_t run_tokens = 0;
    auto flush = [&] {
      if (run_tokens == 0) return;
      if (raw || IsValidUtf8(run)) {
        out.push_back(run);
      } else {
        std::string replacement;
        for (size_t i = 0; i < run_tokens; ++i) replacement += "\xEF\xBF\xBD";
        out.push_back(replacement);
      }
      run.clear();
      run_tokens = 0;
    };
    for (std::string& t : *tokens) {
      int byte = -1;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') {
        auto hex = [](char c) {
          return c >= '0' && c <= '9'   ? c - '0'
                 : c >= 'A' && c <= 'F' ? c - 'A' + 10
                 : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                        : -1;
        };
        const int hi = hex(t[3]), lo = hex(t[4]);
        if (hi >= 0 && lo >= 0) byte = hi * 16 + lo;
      }
      if (byte >= 0) {
        run.push_back(static_cast<char>(byte));
        ++run_tokens;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    *tokens = std::move(out);
  }
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}
  void DecodeChain(std::vector<std::string>* tokens, bool) const override {
    for (std::string& t : *tokens) t = ReplaceAll(t, from_, to_);
  }

 private:
  std::string from_, to_;
};

class FuseDecoder : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>* tokens, bool) const override {
    std::string all;
    for (const std::string& t : *tokens) all += t;
    tokens->assign(1, all);
  }
};

// Strip: removes up to `start` copies of `content` from the front of every
// token and up to `stop` from its back.
class StripDecoder : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void DecodeChain(std::vector<std::string>* tokens, bool) const override {
    if (content_.empty()) return;
    for (std::string& t : *tokens) {
      size_t begin = 0, end = t.size();
      for (size_t i = 0; i < start_ && t.compare(begin, content_.size(), content_) == 0; ++i) begin += content_.size();
      for (size_t i = 0; i < stop_ && end >= begin + content_.size() &&
                         t.compare(end - content_.size(), content_.size(), content_) == 0;
           ++i)
        end -= content_.size();
      t = t.substr(begin, end - begin);
    }
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

// Metaspace: the replacement character becomes a space; the first token
// loses the space its prepended replacement stood for.
class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void DecodeChain(std::vector<std::string>* tokens, bool) const override {
    for (size_t i = 0; i < tokens->size(); ++i) {
      std::string& t = (*tokens)[i];
      t = ReplaceAll(t, replacement_, " ");
      if (i == 0 && strip_first_ && !t.empty() && t[0] == ' ') t.erase(0, 1);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void DecodeChain(std::vector<std::string>* tokens, bool raw) const override {
    for (const auto& step : steps_) step->DecodeChain(tokens, raw);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace

std::unique_ptr<Decoder> MakeDecoder(const json& config, const std::string& where) {
  if (config.is_null()) return nullptr;
  if (!config.is_object() || !config.contains("type") || !config["type"].is_string())
    throw std::invalid_argument(where + ": expected an object with a string \"type\"");
  const std::string type = config["type"].get<std::string>();
  if (type == "Sequence") {
    const json& list = config.value("decoders", json());
    if (!list.is_array()) throw std::invalid_argument(where + ".decoders: expected an array");
    std::vector<std::unique_ptr<Decoder>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto step = MakeDecoder(list[i], where + ".decoders[" + std::to_string(i) + "]");
      if (step) steps.push_back(std::move(step));
    }
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Replace") {
    const json& pattern = config.value("pattern", json());
    if (!pattern.is_object() || !pattern.contains("String") || !pattern["String"].is_string() ||
        !config.contains("content") || !config["content"].is_string())
      throw std::invalid_argument(where + ": Replace needs pattern.String and content strings");
    return std::make_unique<ReplaceDecoder>(pattern["String"].get<std::string>(), config["content"].get<std::string>());
  }
  if (type == "Strip") {
    const json& content = config.value("content", json());
    const json& start = config.value("start", json(0));
    const json& stop = config.value("stop", json(0));
    if (!content.is_string() || !start.is_number_unsigned() || !stop.is_number_unsigned())
      throw std::invalid_argument(where + ": Strip needs a string content and unsigned start/stop");
    return std::make_unique<StripDecoder>(content.get<std::string>(), start.get<size_t>(), stop.get<size_t>());
  }
  if (type == "Metaspace") {
    const std::string scheme = config.value("prepend_scheme", std::string("always"));
    const bool strip = scheme != "never" && config.value("add_prefix_space", true);
    return std::make_unique<MetaspaceDecoder>(config.value("replacement", std::string("\xE2\x96\x81")), strip);
  }
  throw std::invalid_argument(where + ".type: unsupported decoder '" + type +
                              "' (swan supports Sequence, ByteLevel, ByteFallback, Fuse, Replace, "
                              "Strip, Metaspace)");
}

}  // namespace swan
