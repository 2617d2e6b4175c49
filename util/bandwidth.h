// The machine's read bandwidth, measured in the same run as the figures
// that are compared with it (decode is bound by the bytes it reads).
#pragma once

#include <cstddef>

namespace swan {

// GB/s (1e9 bytes) reading a `bytes`-sized buffer with every thread: the
// best pass over 1, 2, 4 and 8 streams per thread, `repeats` passes each
// after one warm-up.
double MeasureReadBandwidthGBs(size_t bytes = size_t(512) << 20, int repeats = 3);

}  // namespace swan
