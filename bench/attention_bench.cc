// Google Benchmark for the attention kernel: prefill under full, SWA and
// SWA + sinks spans, and decode over a full view. Built, never run as a
// test: `build/bench/attention_bench`.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "attention/attention.h"
#include "attention/test_problem.h"

namespace swan {
namespace {

// Args: N, head_dim, window (0 = full), sinks.
void BM_Prefill(benchmark::State& state) {
  std::mt19937 rng(1);
  const int64_t n = state.range(0);
  const AttentionShape shape{8, 2, int32_t(state.range(1))};
  const Span span{int32_t(state.range(2)), int32_t(state.range(3))};
  const testing::Problem p = testing::MakePrefill(rng, shape, span, n, n);
  std::vector<float> out(p.q.size());  // [n, heads, head_dim]
  const AttentionArgs a = p.Args();
  for (auto _ : state) {
    Attend(a, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Prefill)
    ->ArgsProduct({{1024, 4096}, {64, 128}, {0, 1024}, {0}})
    ->Args({4096, 128, 1024, 4})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Args: keys in the view, head_dim.
void BM_Decode(benchmark::State& state) {
  std::mt19937 rng(2);
  const AttentionShape shape{8, 2, int32_t(state.range(1))};
  const testing::Problem p =
      testing::MakePrefill(rng, shape, Span{}, state.range(0), 1, false, KvType::kBF16);
  std::vector<float> out(p.q.size());  // [1, heads, head_dim]
  const AttentionArgs a = p.Args();
  for (auto _ : state) {
    Attend(a, out.data());
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_Decode)->ArgsProduct({{1024, 32768}, {128}})->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace swan

BENCHMARK_MAIN();
