// Decode's matrix-vector products (ops/gemv.h) at the memory bound: bytes
// of weights read per second against the machine's read bandwidth measured
// in the same run (BM_ReadBandwidth). Shapes of real models' projections
// and output heads, every weight type, one input row (one token).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <vector>

#include "bench/read_bandwidth_bench.h"
#include "ops/gemv.h"
#include "ops/linear.h"

namespace swan {
namespace {

// Args: out features n, in features k, the weights' WeightType.
void BM_Gemv(benchmark::State& state) {
  const int64_t n = state.range(0), k = state.range(1);
  const WeightType type = WeightType(state.range(2));
  state.SetLabel(WeightTypeName(type));
  // Several matrices, cycled, so that each product reads from memory, not
  // from a cache the previous product filled.
  const int64_t bytes = n * int64_t(WeightRowBytes(type, k));
  const int copies = int(std::max<int64_t>(2, (int64_t(256) << 20) / bytes));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> w(size_t(n * k));  // [n, k]
  for (auto& v : w) v = normal(rng);
  std::vector<LinearWeight> weights;  // [copies]
  for (int c = 0; c < copies; ++c) weights.emplace_back(w, n, k, type);
  std::vector<float> x(size_t(k), 0.5f);         // [k]
  std::vector<float> y(static_cast<size_t>(n));  // [n]
  int i = 0;
  for (auto _ : state) {
    Gemv(y.data(), x.data(), weights[size_t(i)].view(), 1);
    benchmark::DoNotOptimize(y.data());
    i = (i + 1) % copies;
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * bytes);
  state.counters["weights/s"] =
      benchmark::Counter(double(state.iterations()) * double(n * k), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Gemv)
    ->Args({4864, 896, 1})     // Qwen2.5-0.5B MLP gate / up
    ->Args({896, 4864, 1})     // Qwen2.5-0.5B MLP down
    ->Args({128, 896, 1})      // Qwen2.5-0.5B k / v
    ->Args({8192, 2048, 1})    // Llama 3.2 1B MLP gate / up
    ->Args({2048, 8192, 1})    // Llama 3.2 1B MLP down
    ->Args({128256, 2048, 1})  // Llama 3.2 1B output head
    ->Args({8192, 2048, 0})
    ->Args({8192, 2048, 2})  // f16
    ->Args({8192, 2048, 3})  // q8_0
    ->Args({8192, 2048, 4})  // q4_0
    ->Args({2048, 8192, 3})
    ->Args({2048, 8192, 4})
    ->Args({128256, 2048, 2})
    ->Args({128256, 2048, 3})
    ->Args({512, 2048, 2})
    ->Args({512, 2048, 3})
    ->Args({1536, 512, 2})   // the side by side's models (bench/llama_cpp_side_by_side.sh): MLP gate / up
    ->Args({512, 1536, 2})   // MLP down
    ->Args({32000, 512, 2})  // output head
    ->Args({1536, 512, 4})
    ->Args({32000, 512, 4})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace swan

// main(): bench_main.cc (SWAN_SIMD_TARGET applies)
