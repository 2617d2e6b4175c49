// libFuzzer target: config.json parsing, and the safetensors header of a
// file made of the input's bytes. Bad input must throw std::exception
// subclasses with a message, never crash or read out of bounds.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

#include "model/config.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)swan::ParseModelConfig(text, text.substr(0, text.size() / 2), "fuzz");
  } catch (const std::exception&) {
  }
  static const std::string path = "/dev/shm/swan_fuzz_" + std::to_string(getpid()) + ".safetensors";
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
    try {
      const swan::SafetensorsFile file(path);
      for (const auto& [name, t] : file.tensors()) (void)t.numel();
    } catch (const std::exception&) {
    }
  }
  return 0;
}
