// Prefill- and training-sized matrix products: swan's own bf16 product
// (ops/bf16_gemm.h, the path on CPUs without bf16 hardware) against
// oneDNN's float32 GEMM on the same shape in the same run, oneDNN's bf16
// GEMM where this CPU has bf16 hardware, and swan's own float32 product (the thread-
// invariant one of swan serve --deterministic), and Linear on f16 weights
// (the product a model's f16 prefill runs). GFLOP/s in "GFLOPS".
//   build/bench/gemm_bench --benchmark_filter=512x
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "ops/bf16_gemm.h"
#include "ops/gemm.h"
#include "ops/linear.h"
#include "util/bf16.h"

namespace swan {
namespace {

enum Path { kOneDnnF32 = 0, kSwanBF16 = 1, kOneDnnBF16 = 2, kSwanF32 = 3, kLinearF16 = 4 };

// Args: m, n, k, path, layout (0: forward, B stored [n, k]; 1: input
// gradient, B [k, n]; 2: weight gradient, A stored [k, m]).
void BM_Gemm(benchmark::State& state) {
  const GemmShape s{state.range(0), state.range(1), state.range(2), state.range(4) == 2, state.range(4) == 0};
  const auto path = Path(state.range(3));
  if (path == kOneDnnBF16 && !OneDnnHasBF16Matmul()) {
    state.SkipWithError("oneDNN bf16: not in this CPU's hardware");
    return;
  }
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> a(size_t(s.m * s.k)), b(size_t(s.k * s.n)), c(size_t(s.m * s.n));  // operands
  for (float& x : a) x = normal(rng);
  for (float& x : b) x = normal(rng);
  std::vector<uint16_t> a16(a.size()), b16(b.size());  // the same, bf16
  for (size_t i = 0; i < a.size(); ++i) a16[i] = F32ToBF16(a[i]);
  for (size_t i = 0; i < b.size(); ++i) b16[i] = F32ToBF16(b[i]);
  if (path == kLinearF16 && !s.trans_b) {
    state.SkipWithError("Linear: weights stored [n, k] only");
    return;
  }
  const LinearWeight w16 = path == kLinearF16 ? LinearWeight(b, s.n, s.k, WeightType::kF16) : LinearWeight();
  for (auto _ : state) {
    if (path == kOneDnnF32) Gemm(c.data(), a.data(), b.data(), s, false);
    if (path == kSwanBF16) GemmBF16Swan(c.data(), a16.data(), b16.data(), s, false);
    if (path == kOneDnnBF16) GemmBF16(c.data(), a16.data(), b16.data(), s, false);
    if (path == kSwanF32) GemmF32Swan(c.data(), a.data(), b.data(), s, false);
    if (path == kLinearF16) Linear(c.data(), a.data(), s.m, w16);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOPS"] =
      benchmark::Counter(2.0 * double(s.m) * double(s.n) * double(s.k), benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}

void Shapes(benchmark::internal::Benchmark* b) {
  // swan-7m's projections (d 256, MLP 688, vocab 4096) and Llama 3.2 1B's
  // (2048, 8192), 512 tokens; the 2048^3 yardstick.
  const std::vector<std::vector<int64_t>> shapes = {
      {512, 768, 256},
      {512, 688, 256},
      {512, 256, 688},
      {512, 4096, 256},
      {512, 2048, 2048},
      {512, 8192, 2048},
      {512, 2048, 8192},
      {2048, 2048, 2048},
      // the side by side's models (bench/llama_cpp_side_by_side.sh): q and o,
      // k and v, gate and up, down; q, k, v together and gate, up together
      {512, 512, 512},
      {512, 128, 512},
      {512, 1536, 512},
      {512, 512, 1536},
      {512, 768, 512},
      {512, 3072, 512},
      // the 1B's at the side by side's 128-token prompt: q and o, k and v,
      // gate and up, down
      {128, 2048, 2048},
      {128, 512, 2048},
      {128, 8192, 2048},
      {128, 2048, 8192}};
  for (const auto& s : shapes)
    for (int64_t path : {kOneDnnF32, kSwanBF16, kOneDnnBF16, kSwanF32, kLinearF16})
      b->Args({s[0], s[1], s[2], path, 0});
  // Training's other two products of swan-7m's MLP at context 2048.
  for (int64_t layout : {1, 2})
    for (int64_t path : {kOneDnnF32, kSwanBF16, kOneDnnBF16})
      b->Args({layout == 1 ? 2048 : 688, layout == 1 ? 688 : 256, layout == 1 ? 256 : 2048, path, layout});
}
BENCHMARK(BM_Gemm)
    ->Apply(Shapes)
    ->ArgNames({"m", "n", "k", "path", "layout"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace swan

// main(): bench_main.cc (SWAN_SIMD_TARGET applies)
