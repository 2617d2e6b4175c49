#include "util/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace swan {

double MeasureReadBandwidthGBs(size_t bytes, int repeats) {
  const int64_t n = int64_t(bytes / sizeof(uint64_t));
  std::vector<uint64_t> data(static_cast<size_t>(n));  // [n]
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) data[size_t(i)] = uint64_t(i) * 2654435761u;
  double best = 1e30;
  volatile uint64_t sink = 0;
  for (int r = 0; r <= repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    uint64_t sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (int64_t i = 0; i < n; ++i) sum += data[size_t(i)];
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    sink = sink + sum;
    if (r > 0) best = std::min(best, s);  // pass 0 warms up
  }
  return double(bytes) / best * 1e-9;
}

}  // namespace swan
