#include "util/bandwidth.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "util/spin_team.h"

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

// One pass of `layout` over `spans` on `threads` threads (the spin team's,
// else OpenMP's): its seconds; *bytes what the threads that ran read (a
// nested OpenMP region may start fewer: their parts are not read).
double TimePass(const std::vector<ByteSpan>& spans, int layout, int threads, int64_t* bytes) {
  if (layout < 0 || layout >= kReadLayouts)
    throw std::invalid_argument("read bandwidth: no layout " + std::to_string(layout));
  constexpr int kAheadKiB[3] = {0, 2, 8};
  const int ahead_kib = kAheadKiB[layout / 4], streams = 1 << (layout % 4);
  std::atomic<uint64_t> sum{0};
  std::atomic<int64_t> read{0};  // bytes
  auto read_part = [&](int t) {
    uint64_t part_sum = 0;
    int64_t part_values = 0;
    for (const ByteSpan& span : spans) {
      int64_t values = 0;
      const uint64_t* data = ProbePart(span, t, threads, &values);
      if (values > 0) part_sum += HWY_DYNAMIC_DISPATCH(SumWithStreams)(data, values, streams, ahead_kib);
      part_values += values;
    }
    sum.fetch_add(part_sum, std::memory_order_relaxed);
    read.fetch_add(part_values * int64_t(sizeof(uint64_t)), std::memory_order_relaxed);
  };
  const auto start = std::chrono::steady_clock::now();
  if (threads == 1) {
    read_part(0);
  } else if (!RunOnSpinTeam(threads, read_part)) {
#pragma omp parallel num_threads(threads)
    read_part(omp_get_thread_num());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  static std::atomic<uint64_t> sink{0};
  sink.fetch_add(sum.load(std::memory_order_relaxed), std::memory_order_relaxed);
  *bytes = read.load(std::memory_order_relaxed);
  return seconds;
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
  // The rate depends on how many streams a core reads at once and on how
  // far ahead the loop asks for its data, and the best layout moves with
  // the machine and its load (docs/performance.md): the best is taken, so
  // that it is a bound no kernel can beat.
  const int threads = omp_get_max_threads();
  double best = 0;
  for (int layout = 0; layout < kReadLayouts; ++layout)
    for (int r = layout == 0 ? 0 : 1; r <= repeats; ++r) {  // the first pass warms up
      int64_t bytes = 0;
      const double seconds = TimePass(spans, layout, threads, &bytes);
      if (r > 0 && bytes > 0) best = std::max(best, double(bytes) / seconds * 1e-9);
    }
  return best;
}

ReadBandwidthSampler::ReadBandwidthSampler(std::vector<ByteSpan> spans) : spans_(std::move(spans)) {}

void ReadBandwidthSampler::Pass(int threads) {
  int64_t bytes = 0;
  const double seconds = TimePass(spans_, next_layout_, std::max(1, threads), &bytes);
  seconds_[next_layout_] += seconds;
  bytes_[next_layout_] += double(bytes);
  next_layout_ = (next_layout_ + 1) % kReadLayouts;
}

double ReadBandwidthSampler::TakeGBs() {
  double best = 0;
  for (int layout = 0; layout < kReadLayouts; ++layout) {
    if (seconds_[layout] > 0 && bytes_[layout] > 0) best = std::max(best, bytes_[layout] / seconds_[layout] * 1e-9);
    seconds_[layout] = bytes_[layout] = 0;
  }
  return best;
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
