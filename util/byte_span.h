// A run of bytes in memory, read but not owned (a weight matrix, say).
#pragma once

#include <cstddef>

namespace swan {

struct ByteSpan {
  const void* data = nullptr;
  size_t bytes = 0;
};

}  // namespace swan
