// libFuzzer target: GGUF files made of the input's bytes, parsed and read
// as a model's hyperparameters (RoPE factors and sink logits included) and
// tokenizer (which then encodes and decodes a short text). Bad input must
// throw std::exception
// subclasses with a message, never crash or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <vector>

#include "model/gguf.h"
#include "model/gguf_config.h"
#include "model/gguf_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes(data, data + size);  // [size] its own buffer, so a read past it is caught
  try {
    const swan::GgufFile file(bytes.data(), bytes.size(), "fuzz.gguf");
    for (const swan::GgufTensor& t : file.tensors()) {
      if (t.n_bytes > 0) (void)(t.data[0] + t.data[t.n_bytes - 1]);  // inside the input
      (void)t.numel();
    }
    try {
      (void)swan::GgufModelConfig(file);
    } catch (const std::exception&) {
    }
    const swan::Tokenizer tok = swan::GgufTokenizer(file);
    (void)tok.Decode(tok.Encode("Hello, world! 12 \xC3\xA9"));
  } catch (const std::exception&) {
  }
  return 0;
}
