// A compute shader compiled to SPIR-V at build time by glslc and embedded
// in the binary (gpu/CMakeLists.txt, cmake/embed_spirv.cmake).
#pragma once

#include <cstddef>

namespace swan {

struct SpirV {
  const unsigned char* bytes = nullptr;  // [size] a SPIR-V module, little-endian words
  size_t size = 0;
};

}  // namespace swan
