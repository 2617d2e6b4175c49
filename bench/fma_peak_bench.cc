// The FMA bound of this CPU: a loop of nothing but independent vector FMAs
// (Highway's dispatched target, so SWAN_SIMD_TARGET=AVX2 gives the 8-wide
// figure an AVX2-only CPU would have), on one thread and on all. A product
// of float32 (or of f16 widened to float32) can at best run at this rate;
// gemm_bench's GFLOPS read against it. GFLOP/s in the counter "GFLOPS".
//   SWAN_SIMD_TARGET=AVX2 build/bench/fma_peak_bench
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/fma_peak_bench.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace swan {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// kChains accumulators, each one FMA per step: more than latency x FMA
// units (4 x 2 on the cores swan has met), so no step waits on the last.
constexpr int kChains = 12;

// steps x kChains FMAs of `lanes` floats; returns a sum the compiler must keep.
float FmaChains(int64_t steps) {
  const hn::ScalableTag<float> df;
  const auto scale = hn::Set(df, 0.999999f), add = hn::Set(df, 1e-7f);
  hn::Vec<decltype(df)> acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = hn::Set(df, float(c));
  for (int64_t s = 0; s < steps; ++s)
    for (int c = 0; c < kChains; ++c) acc[c] = hn::MulAdd(acc[c], scale, add);
  for (int c = 1; c < kChains; ++c) acc[0] = hn::Add(acc[0], acc[c]);
  return hn::GetLane(hn::SumOfLanes(df, acc[0]));
}

// Floating-point operations in one step of FmaChains, and the vector's lanes.
int64_t FlopsPerStep() { return 2 * kChains * int64_t(hn::Lanes(hn::ScalableTag<float>())); }
int64_t FloatLanes() { return int64_t(hn::Lanes(hn::ScalableTag<float>())); }

}  // namespace HWY_NAMESPACE
}  // namespace swan
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace swan {
namespace {

HWY_EXPORT(FmaChains);
HWY_EXPORT(FloatLanes);
HWY_EXPORT(FlopsPerStep);

constexpr int64_t kSteps = int64_t(1) << 20;

// Args: threads (0: all of OpenMP's).
void BM_FmaPeak(benchmark::State& state) {
  const int threads = state.range(0) > 0 ? int(state.range(0)) : omp_get_max_threads();
  float sink = 0;
  for (auto _ : state) {
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += HWY_DYNAMIC_DISPATCH(FmaChains)(kSteps);
  }
  benchmark::DoNotOptimize(sink);
  const double flops = double(HWY_DYNAMIC_DISPATCH(FlopsPerStep)()) * double(kSteps) * threads;
  state.counters["GFLOPS"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.counters["lanes"] = double(HWY_DYNAMIC_DISPATCH(FloatLanes)());
  state.counters["threads"] = threads;
}
BENCHMARK(BM_FmaPeak)->Arg(1)->Arg(0)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace swan
#endif  // HWY_ONCE

// main(): bench_main.cc (SWAN_SIMD_TARGET applies)
