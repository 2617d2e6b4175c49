// How many ring slots a window layer's cache keeps (kv/kv_cache.h):
// W - 1 + max_chunk, so that a chunk's oldest query still sees its W - 1
// predecessors while the chunk's own keys are written. Shared by the host
// cache and a device's (gpu/device_decoder.cc).
#pragma once

#include <cstdint>

#include "attention/span.h"
#include "kv/kv_cache.h"

namespace swan {

// Ring rows of a window layer under `options`, 0 for a span that keeps
// every position (full, or rings turned off).
int64_t RingRows(const Span& span, const KvCacheOptions& options);

}  // namespace swan
