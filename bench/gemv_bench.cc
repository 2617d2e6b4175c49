// Decode's matrix-vector products (ops/gemv.h) at the memory bound: bytes
// of weights read per second against the machine's read bandwidth measured
// in the same run (BM_ReadBandwidth). Shapes of real models' projections
// and output heads, bf16 and f32 weights, one input row (one token).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <vector>

#include "bench/read_bandwidth_bench.h"
#include "ops/gemv.h"

namespace swan {
namespace {

// Args: out features n, in features k, bf16 (1) or f32 (0).
void BM_Gemv(benchmark::State& state) {
  const int64_t n = state.range(0), k = state.range(1);
  const bool bf16 = state.range(2) != 0;
  // Several matrices, cycled, so that each product reads from memory, not
  // from a cache the previous product filled.
  const int64_t bytes = n * k * (bf16 ? 2 : 4);
  const int copies = int(std::max<int64_t>(2, (int64_t(256) << 20) / bytes));
  std::vector<std::vector<uint16_t>> w16(bf16 ? copies : 0);  // [copies][n, k]
  std::vector<std::vector<float>> w32(bf16 ? 0 : copies);     // [copies][n, k]
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> bits(0x3c00, 0x3f80);
  for (auto& w : w16) {
    w.resize(size_t(n * k));
    for (auto& v : w) v = uint16_t(bits(rng));
  }
  for (auto& w : w32) w.assign(size_t(n * k), 0.01f);
  std::vector<float> x(size_t(k), 0.5f);  // [k]
  std::vector<float> y(static_cast<size_t>(n));  // [n]
  int i = 0;
  for (auto _ : state) {
    WeightView view;
    view.type = bf16 ? KvType::kBF16 : KvType::kF32;
    view.data = bf16 ? static_cast<const void*>(w16[size_t(i)].data()) : w32[size_t(i)].data();
    view.n = n;
    view.k = k;
    Gemv(y.data(), x.data(), view, 1);
    benchmark::DoNotOptimize(y.data());
    i = (i + 1) % copies;
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * bytes);
}
BENCHMARK(BM_Gemv)
    ->Args({4864, 896, 1})     // Qwen2.5-0.5B MLP gate / up
    ->Args({896, 4864, 1})     // Qwen2.5-0.5B MLP down
    ->Args({128, 896, 1})      // Qwen2.5-0.5B k / v
    ->Args({8192, 2048, 1})    // Llama 3.2 1B MLP gate / up
    ->Args({2048, 8192, 1})    // Llama 3.2 1B MLP down
    ->Args({128256, 2048, 1})  // Llama 3.2 1B output head
    ->Args({8192, 2048, 0})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace swan

BENCHMARK_MAIN();
