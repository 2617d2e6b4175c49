// The machine's read bandwidth, measured in the same run as the figures
// that are compared with it (decode is bound by the bytes it reads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "util/byte_span.h"

namespace swan {

// The layouts of a plain read: 1, 2, 4 or 8 streams per thread, each
// asked for 0, 2 or 8 KiB ahead (layout = 4 * ahead's index + streams' index).
constexpr int kReadLayouts = 12;

// GB/s (1e9 bytes) reading `spans` (each cut in one part per thread) with
// every thread: the best pass of the kReadLayouts layouts, `repeats` passes
// each after one warm-up pass in all. Spans under 4 KiB a thread are left out.
double MeasureReadBandwidthGBs(const std::vector<ByteSpan>& spans, int repeats);

// The bytes one pass of it reads on `threads` threads.
int64_t ProbeBytesPerPass(const std::vector<ByteSpan>& spans, int threads);

// Plain reads of `spans` one pass at a time between other work, the layouts
// in turn (swan bench: one after each decode token), on the threads of
// decode's spin team (util/spin_team.h), so that no OpenMP thread spins on
// into the work that follows.
class ReadBandwidthSampler {
 public:
  explicit ReadBandwidthSampler(std::vector<ByteSpan> spans);
  void Pass(int threads);  // one pass of the next layout on `threads` threads
  // GB/s of the layout that read fastest over its passes since the last
  // call (its bytes over its seconds); 0 without a pass. Starts again.
  double TakeGBs();

 private:
  std::vector<ByteSpan> spans_;
  int next_layout_ = 0;
  double seconds_[kReadLayouts] = {};  // [layout] of its passes since TakeGBs
  double bytes_[kReadLayouts] = {};    // [layout]
};

// The same over a `bytes`-sized buffer of its own.
double MeasureReadBandwidthGBs(size_t bytes = size_t(512) << 20, int repeats = 3);

}  // namespace swan
