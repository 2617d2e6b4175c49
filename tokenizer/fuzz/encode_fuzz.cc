// libFuzzer target: encode and decode arbitrary bytes with a byte-level
// tokenizer (which must give back exactly the input bytes) and with the
// stories260K SentencePiece-style tokenizer (which must not crash, and whose
// streaming decode must equal its full decode). Built and run by
// scripts/fuzz.sh; stories260K comes from models/ ($SWAN_SOURCE_DIR).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "util/test_paths.h"

namespace {

nlohmann::json ByteLevelJson() {
  nlohmann::json vocab = nlohmann::json::object();
  const swan::ByteLevelAlphabet& a = swan::ByteLevelAlphabet::Get();
  for (int b = 0; b < 256; ++b) vocab[std::string(a.Encode(static_cast<uint8_t>(b)))] = b;
  vocab["\xC4\xA0t"] = 256;  // "Ġt"
  vocab["he"] = 257;
  vocab["\xC4\xA0the"] = 258;
  return {{"added_tokens", {{{"id", 259}, {"content", "<|endoftext|>"}, {"special", true}}}},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern",
                {{"Regex",
                  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
                  "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
               {"behavior", "Isolated"}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"\xC4\xA0 t", "h e", "\xC4\xA0t he"}}}}};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const swan::Tokenizer byte_level = swan::Tokenizer::FromJson(ByteLevelJson(), "fuzz");
  static const std::unique_ptr<swan::Tokenizer> stories =
      std::make_unique<swan::Tokenizer>(swan::Tokenizer::Load(swan::test::Stories260K()));
  const std::string text(reinterpret_cast<const char*>(data), size);

  const auto ids = byte_level.Encode(text);
  if (byte_level.DecodeRaw(ids) != text) std::abort();  // byte-level BPE is lossless
  if (!swan::IsValidUtf8(byte_level.Decode(ids))) std::abort();

  const auto sp_ids = stories->Encode(text);
  const std::string full = stories->Decode(sp_ids);
  if (!swan::IsValidUtf8(full)) std::abort();
  swan::StreamDecoder stream(*stories);
  std::string streamed;
  for (const int32_t id : sp_ids) {
    const std::string piece = stream.Step(id);
    if (!swan::IsValidUtf8(piece)) std::abort();
    streamed += piece;
  }
  streamed += stream.Flush();
  if (swan::IsValidUtf8(text) && streamed != full) std::abort();
  return 0;
}
