// Where tests, fuzzers and benchmarks find the files the repository ships
// for them: everything they read lives in the checkout.
#pragma once

#include <cstdlib>
#include <string>

namespace swan::test {

// The checkout's root: $SWAN_SOURCE_DIR, else the folder CMake configured
// from (SWAN_SOURCE_ROOT), else the current directory.
inline std::string SourceRoot() {
  if (const char* d = std::getenv("SWAN_SOURCE_DIR")) return d;
#ifdef SWAN_SOURCE_ROOT
  return SWAN_SOURCE_ROOT;
#else
  return ".";
#endif
}

// llama2.c's stories260K in Hugging Face layout, with golden/ outputs from
// llama2.c's own forward (models/stories260K/README.md).
inline std::string Stories260K() { return SourceRoot() + "/models/stories260K"; }

}  // namespace swan::test
