// libFuzzer target: tokenizer.json loading. Any input must either load or
// throw a std::exception with a message; a loaded tokenizer must encode and
// decode without crashing. Built and run by scripts/fuzz_tokenizer.sh.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  try {
    const swan::Tokenizer tok = swan::Tokenizer::FromJson(j, "fuzz");
    const auto ids = tok.Encode("Hello wörld <s> 123 \xF0\x9F\xA4\x96 \xFF");
    (void)tok.Decode(ids);
    swan::StreamDecoder stream(tok);
    for (const int32_t id : ids) (void)stream.Step(id);
    (void)stream.Flush();
  } catch (const std::exception&) {
  }
  return 0;
}
