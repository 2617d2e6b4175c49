#include "util/bandwidth.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "util/bandwidth.cc"
#include <hwy/cache_control.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace swan {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sums data[0, n) (n a multiple of kStreams * lanes) reading kStreams
// equal parts side by side: one vector from each part per step, so the
// core has kStreams sequential streams in flight, as a kernel that reads
// several weight rows or key blocks at once does.
template <int kStreams, int64_t kAhead>
uint64_t SumStreams(const uint64_t* data, int64_t n) {
  const hn::ScalableTag<uint64_t> d;
  const int64_t L = int64_t(hn::Lanes(d)), part = n / kStreams;
  hn::Vec<decltype(d)> acc[kStreams];
  for (int s = 0; s < kStreams; ++s) acc[s] = hn::Zero(d);
  for (int64_t i = 0; i + L <= part; i += L)
    for (int s = 0; s < kStreams; ++s) {
      // kAhead values ahead, as the products ask (ops/block_kernels.h, ops/gemv.cc)
      if constexpr (kAhead > 0) hwy::Prefetch(data + s * part + std::min(i + kAhead, part - 1));
      acc[s] = hn::Add(acc[s], hn::LoadU(d, data + s * part + i));
    }
  for (int s = 1; s < kStreams; ++s) acc[0] = hn::Add(acc[0], acc[s]);
  // Summed as unsigned here: the x86 lane reduction adds signed 64-bit lanes,
  // whose (harmless) wrap-around UBSan reports.
  HWY_ALIGN uint64_t lanes[hn::MaxLanes(d)];
  hn::Store(acc[0], d, lanes);
  uint64_t sum = 0;
  for (int64_t i = 0; i < L; ++i) sum += lanes[i];
  return sum;
}

// In `streams` streams (1, 2, 4 or 8), each asked for ahead_kib KiB ahead
// (0: not asked for; 2 or 8).
template <int64_t kAhead>
uint64_t SumAhead(const uint64_t* data, int64_t n, int streams) {
  switch (streams) {
    case 1: return SumStreams<1, kAhead>(data, n);
    case 2: return SumStreams<2, kAhead>(data, n);
    case 4: return SumStreams<4, kAhead>(data, n);
    default: return SumStreams<8, kAhead>(data, n);
  }
}
uint64_t SumWithStreams(const uint64_t* data, int64_t n, int streams, int ahead_kib) {
  constexpr int64_t kValuesPerKiB = 1024 / sizeof(uint64_t);
  if (ahead_kib == 2) return SumAhead<2 * kValuesPerKiB>(data, n, streams);
  if (ahead_kib == 8) return SumAhead<8 * kValuesPerKiB>(data, n, streams);
  return SumAhead<0>(data, n, streams);
}

}  // namespace HWY_NAMESPACE
}  // namespace swan
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace swan {

HWY_EXPORT(SumWithStreams);

namespace {

// Thread t's part of `span`, of `threads`: whole 512-byte pieces (64
// values, any stream count's step) from the span's first 64-byte line;
// *values = 0 for a part under 4 KiB.
const uint64_t* ProbePart(const ByteSpan& span, int64_t t, int64_t threads, int64_t* values) {
  constexpr int64_t kPieceValues = 64;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(span.data), first = (begin + 63) & ~uintptr_t(63);
  const int64_t usable = first - begin < span.bytes ? int64_t(span.bytes - (first - begin)) : 0;
  const int64_t per = usable / int64_t(sizeof(uint64_t)) / threads / kPieceValues * kPieceValues;
  *values = per < 512 ? 0 : per;
  return reinterpret_cast<const uint64_t*>(first) + t * per;
}

}  // namespace

int64_t ProbeBytesPerPass(const std::vector<ByteSpan>& spans, int threads) {
  int64_t bytes = 0;
  for (const ByteSpan& span : spans)
    for (int t = 0; t < threads; ++t) {
      int64_t values = 0;
      ProbePart(span, t, threads, &values);
      bytes += values * int64_t(sizeof(uint64_t));
    }
  return bytes;
}

double MeasureReadBandwidthGBs(const std::vector<ByteSpan>& spans, int repeats) {
  double best = 1e30;
  int team = 1;  // the threads that read a pass
  volatile uint64_t sink = 0;
  // The rate depends on how many streams a core reads at once (1 stream
  // reads at about half the rate of 4 here) and on how far ahead the loop
  // asks for its data (on Zen 5 4 streams read 1.16x faster 2 KiB ahead
  // than 8): the roofline takes the best layout, so that it is a bound no
  // kernel can beat.
  bool warm = false;  // after the first pass
  for (const int ahead_kib : {0, 2, 8})
    for (const int streams : {1, 2, 4, 8}) {
      for (int r = warm ? 1 : 0; r <= repeats; ++r) {
        uint64_t sum = 0;
        const auto start = std::chrono::steady_clock::now();
#pragma omp parallel reduction(+ : sum)
        {
          const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
#pragma omp single nowait
          team = int(threads);
          for (const ByteSpan& span : spans) {
            int64_t values = 0;
            const uint64_t* data = ProbePart(span, t, threads, &values);
            if (values > 0) sum += HWY_DYNAMIC_DISPATCH(SumWithStreams)(data, values, streams, ahead_kib);
          }
        }
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        sink = sink + sum;
        if (r > 0) best = std::min(best, s);  // the first pass warms up
        warm = true;
      }
    }
  // Counted after the timing: what the team read in one pass.
  const int64_t bytes_read = ProbeBytesPerPass(spans, team);
  return bytes_read > 0 ? double(bytes_read) / best * 1e-9 : 0.0;
}

double MeasureReadBandwidthGBs(size_t bytes, int repeats) {
  const int64_t n = int64_t(bytes / sizeof(uint64_t)) / 256 * 256;
  std::vector<uint64_t> data(static_cast<size_t>(n));  // [n]
  // Each thread first-touches the part it will read.
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) data[size_t(i)] = uint64_t(i) * 2654435761u;
  return MeasureReadBandwidthGBs({ByteSpan{data.data(), size_t(n) * sizeof(uint64_t)}}, repeats);
}

}  // namespace swan
#endif  // HWY_ONCE
