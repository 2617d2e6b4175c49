// The machine's read bandwidth, measured in the same run as the figures
// that are compared with it (decode is bound by the bytes it reads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "util/byte_span.h"

namespace swan {

// GB/s (1e9 bytes) reading `spans` (each cut in one part per thread) with
// every thread: the best pass of 12 layouts, 1, 2, 4 or 8 streams per
// thread, each asked for 0, 2 or 8 KiB ahead, `repeats` passes each after
// one warm-up pass in all. Spans under 4 KiB a thread are left out.
double MeasureReadBandwidthGBs(const std::vector<ByteSpan>& spans, int repeats);

// The bytes one pass of it reads on `threads` threads.
int64_t ProbeBytesPerPass(const std::vector<ByteSpan>& spans, int threads);

// The same over a `bytes`-sized buffer of its own.
double MeasureReadBandwidthGBs(size_t bytes = size_t(512) << 20, int repeats = 3);

}  // namespace swan
