// What the cores can multiply at best, on one thread and on all:
//  - BM_FmaPeak: a loop of nothing but independent vector FMAs (Highway's
//    dispatched target, so SWAN_SIMD_TARGET=AVX2 gives the 8-wide figure an
//    AVX2-only CPU would have). A product of float32 (or of f16 widened to
//    float32) can at best run at this rate; gemm_bench's GFLOPS read against
//    it. GFLOP/s in the counter "GFLOPS".
//  - BM_SignTrickPeak: AVX2's exact signed 8-bit products, as Q8_0 against a
//    quantized input needs them (llama.cpp's AVX2 path and swan's,
//    ops/block_product_avx2.cc): vpsignb, vpmaddubsw, vpmaddwd and vpaddd
//    per 32 products, in independent chains. Products per second in the
//    counter "GMACS".
//   SWAN_SIMD_TARGET=AVX2 build/bench/peak_bench
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdint>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/peak_bench.cc"
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

// Runs chains(kSteps) on the benchmark's threads (Arg 0: all of OpenMP's) per
// iteration; returns how many ran.
template <class Chains>
int OnThreads(benchmark::State& state, const Chains& chains) {
  const int threads = state.range(0) > 0 ? int(state.range(0)) : omp_get_max_threads();
  double sink = 0;
  for (auto _ : state) {
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += double(chains(kSteps));
  }
  benchmark::DoNotOptimize(sink);
  state.counters["threads"] = threads;
  return threads;
}

// Args: threads (0: all of OpenMP's).
void BM_FmaPeak(benchmark::State& state) {
  const int threads = OnThreads(state, [](int64_t steps) { return HWY_DYNAMIC_DISPATCH(FmaChains)(steps); });
  const double flops = double(HWY_DYNAMIC_DISPATCH(FlopsPerStep)()) * double(kSteps) * threads;
  state.counters["GFLOPS"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.counters["lanes"] = double(HWY_DYNAMIC_DISPATCH(FloatLanes)());
}
BENCHMARK(BM_FmaPeak)->Arg(1)->Arg(0)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();

#if defined(__x86_64__)
constexpr int kIntChains = 8;  // independent sums, as many as the Q8_0 kernel's tile keeps

// One step: |x| once, then per chain the sign trick's 32 products w x,
// pairs added into 8 int32 lanes, added to the chain's sum. In assembly (AT&T
// operand order), so that the compiler neither hoists the loop-invariant
// products nor keeps the sums in memory; one temporary serves every chain,
// the core renames it.
#define SWAN_SIGN_TRICK(acc)         \
  "vpsignb %[x], %[w], %[t]\n\t"     \
  "vpmaddubsw %[t], %[ax], %[t]\n\t" \
  "vpmaddwd %[ones], %[t], %[t]\n\t" \
  "vpaddd %[t], %[" #acc "], %[" #acc "]\n\t"

// steps x kIntChains x 32 signed 8-bit products; returns a sum to keep.
__attribute__((target("avx2"))) int32_t SignTrickChains(int64_t steps) {
  const __m256i ones = _mm256_set1_epi16(1), x = _mm256_set1_epi8(-3), w = _mm256_set1_epi8(5);
  __m256i ax, t;
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (int64_t s = 0; s < steps; ++s)
    __asm__ volatile("vpsignb %[x], %[x], %[ax]\n\t" SWAN_SIGN_TRICK(a0) SWAN_SIGN_TRICK(a1) SWAN_SIGN_TRICK(a2)
                         SWAN_SIGN_TRICK(a3) SWAN_SIGN_TRICK(a4) SWAN_SIGN_TRICK(a5) SWAN_SIGN_TRICK(a6)
                             SWAN_SIGN_TRICK(a7)
                     : [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), [a4] "+x"(a4), [a5] "+x"(a5),
                       [a6] "+x"(a6), [a7] "+x"(a7), [ax] "=&x"(ax), [t] "=&x"(t)
                     : [x] "x"(x), [w] "x"(w), [ones] "x"(ones));
  const __m256i sum = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)),
                                       _mm256_add_epi32(_mm256_add_epi32(a4, a5), _mm256_add_epi32(a6, a7)));
  return _mm256_extract_epi32(sum, 0);
}
#undef SWAN_SIGN_TRICK

// Args: threads (0: all of OpenMP's).
void BM_SignTrickPeak(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx2")) {
    state.SkipWithError("no AVX2 on this CPU");
    return;
  }
  const int threads = OnThreads(state, SignTrickChains);
  state.counters["GMACS"] =
      benchmark::Counter(double(kIntChains) * 32 * double(kSteps) * threads,
                         benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_SignTrickPeak)->Arg(1)->Arg(0)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

}  // namespace
}  // namespace swan
#endif  // HWY_ONCE

// main(): bench_main.cc (SWAN_SIMD_TARGET applies)
