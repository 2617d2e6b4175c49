// BM_ReadBandwidth: the machine's read bandwidth (every OpenMP thread), the
// yardstick of a benchmark's bytes/s, measured in the same run. Included
// once by each benchmark program that compares with it.
#pragma once

#include <benchmark/benchmark.h>

#include "util/bandwidth.h"

namespace swan {

inline void BM_ReadBandwidth(benchmark::State& state) {
  double gbs = 0;
  for (auto _ : state) gbs = MeasureReadBandwidthGBs(size_t(512) << 20, 2);
  state.counters["GB/s"] = gbs;
}
BENCHMARK(BM_ReadBandwidth)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace swan
