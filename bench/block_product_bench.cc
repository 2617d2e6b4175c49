// Products with block-quantized weights (ops/block_product.h): 512 input
// rows (prefill) against the side by side's Llama shapes, and one row
// (decode) against a 1536 x 512 matrix that stays in cache and against
// Llama 3.2 1B's MLP matrices, each kernel this CPU has on the same
// quantized input in the same run. Integer operations per second (2 m n k)
// in the counter "GOPS", weight bytes read per second in "GBps".
//   SWAN_SIMD_TARGET=AVX2 build/bench/block_product_bench
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "ops/block_product.h"
#include "ops/packed_blocks.h"

namespace swan {
namespace {

// Args: out features n, in features k, the weights' WeightType, the
// BlockKernel, input rows m.
void BM_BlockProduct(benchmark::State& state) {
  const int64_t n = state.range(0), k = state.range(1), m = state.range(4);
  const auto type = WeightType(state.range(2));
  const auto kernel = BlockKernel(state.range(3));
  bool here = false;
  for (BlockKernel k_here : BlockKernelsHere()) here = here || k_here == kernel;
  if (!here) {
    state.SkipWithError("kernel not available on this CPU");
    return;
  }
  state.SetLabel(std::string(WeightTypeName(type)) + " " + BlockKernelName(kernel));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> w(size_t(n * k)), x(size_t(m * k)), y(size_t(m * n));  // [n, k], [m, k], [m, n]
  for (float& v : w) v = normal(rng);
  for (float& v : x) v = normal(rng);
  std::vector<uint8_t> packed(PackedBytes(type, n, k));  // [PackedBytes]
  QuantizePacked(type, packed.data(), w.data(), n, k);
  const PackedBlocks pw = PackedBlocksAt(packed.data(), type, n, k);
  std::vector<int8_t> q(size_t(m * k));                                       // [m, k]
  std::vector<float> d(size_t(m * k / 32));                                   // [m, k / 32]
  std::vector<int32_t> sum(size_t(m * k / 32)), sum_low(size_t(m * k / 32));  // [m, k / 32]
  QuantizeInput(q.data(), d.data(), sum.data(), x.data(), m, k);
  SumLowHalves(sum_low.data(), q.data(), m, k);
  const QuantizedInput qx{q.data(), d.data(), sum.data(), sum_low.data()};
  for (auto _ : state) {
    BlockProductWith(kernel, y.data(), qx, pw, m);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GOPS"] =
      benchmark::Counter(2.0 * double(m) * double(n) * double(k), benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
  // Decode reads every weight byte once: its rate against the read bandwidth.
  state.counters["GBps"] = benchmark::Counter(double(packed.size()), benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}

void Shapes(benchmark::internal::Benchmark* b) {
  // The side by side's Llama (d 512, 8/2 heads of 64, MLP 1536): q, k and
  // v together; gate and up together; down.
  const std::vector<std::vector<int64_t>> shapes = {{768, 512}, {3072, 512}, {512, 1536}};
  for (WeightType type : {WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ4_K, WeightType::kQ6_K})
    for (const auto& s : shapes)
      for (BlockKernel kernel : {BlockKernel::kAvx2, BlockKernel::kAvx512Vnni})
        b->Args({s[0], s[1], int64_t(type), int64_t(kernel), 512});
  // Decode: one row against a matrix in L2, and against Llama 3.2 1B's
  // gate and up together (16384 x 2048) and its down (2048 x 8192), which
  // stay in a large L3 only.
  const std::vector<std::vector<int64_t>> decode_shapes = {{1536, 512}, {16384, 2048}, {2048, 8192}};
  for (const auto& s : decode_shapes)
    for (WeightType type : {WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ4_K, WeightType::kQ6_K})
      for (BlockKernel kernel : {BlockKernel::kAvx2, BlockKernel::kAvx512Vnni})
        b->Args({s[0], s[1], int64_t(type), int64_t(kernel), 1});
}
BENCHMARK(BM_BlockProduct)
    ->Apply(Shapes)
    ->ArgNames({"n", "k", "type", "kernel", "m"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace swan

// main(): bench_main.cc (SWAN_SIMD_TARGET applies)
