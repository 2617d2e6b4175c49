// Google Benchmark for the attention kernel: prefill under full, SWA and
// SWA + sinks spans, and decode over a full view (bytes/s against the
// machine's read bandwidth, BM_ReadBandwidth, measured in the same run).
// Built, never run as a test: `build/bench/attention_bench`.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "bench/read_bandwidth_bench.h"
#include "attention/attention.h"
#include "attention/test_problem.h"
#include "util/bf16.h"

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
    ->ArgsProduct({{1024, 4096}, {64, 128}, {0, 512, 1024}, {0}})
    ->Args({512, 64, 0, 0})  // the side by side's prefill at depth 0
    ->Args({4096, 128, 1024, 4})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Args: depth (keys before the 512 queries), KV type (0: f32, 1: bf16),
// window (0: full span). The side by side's prefill of 512 tokens after
// `depth` (8/2 heads of 64); counter: GFLOP/s of the QK and PV products
// (4 d FLOPs a visible query-key pair).
void BM_PrefillAtDepth(benchmark::State& state) {
  std::mt19937 rng(1);
  const int64_t depth = state.range(0), n_q = 512;
  const AttentionShape shape{8, 2, 64};
  const KvType type = state.range(1) == 1 ? KvType::kBF16 : KvType::kF32;
  const int32_t window = int32_t(state.range(2));
  const testing::Problem p = testing::MakePrefill(rng, shape, Span{window, 0}, depth + n_q, n_q, false, type);
  std::vector<float> out(p.q.size());  // [n_q, heads, head_dim]
  const AttentionArgs a = p.Args();
  for (auto _ : state) {
    Attend(a, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  double pairs = 0;  // visible query-key pairs
  for (int64_t i = 0; i < n_q; ++i)
    pairs += double(window > 0 ? std::min<int64_t>(window, depth + i + 1) : depth + i + 1);
  state.counters["GFLOP/s"] = benchmark::Counter(
      pairs * shape.n_heads * 4.0 * shape.head_dim * 1e-9 * double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PrefillAtDepth)
    ->ArgsProduct({{0, 4096}, {0, 1}, {0}})
    ->Args({4096, 1, 512})  // the side by side's Gemma 3 window layers at 4K
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A bf16 KV view of `keys` rows and `copies` copies of it: a model's layers
// each read their own cache once per token, so cycling through copies that
// together exceed the last-level cache measures what decode reads from
// memory; one copy measures a view that may stay cached.
struct DecodeViews {
  std::vector<std::vector<uint16_t>> k, v;  // [copies][keys, kv_heads, head_dim]
  std::vector<int32_t> pos;                 // [keys] 0 .. keys-1
};

DecodeViews MakeDecodeViews(const AttentionShape& shape, int64_t keys, int64_t copies) {
  DecodeViews views;
  const size_t n = size_t(keys) * size_t(shape.n_kv_heads) * size_t(shape.head_dim);
  std::vector<uint16_t> k(n), v(n);  // [keys, kv_heads, head_dim]
  // A cheap generator: values uniform in about (-1.7, 1.7), unit variance
  // like a normal; the timing does not depend on the distribution.
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return F32ToBF16(float(int64_t(state >> 40) - (int64_t(1) << 23)) * (1.73f / float(1 << 23)));
  };
  for (size_t i = 0; i < n; ++i) {
    k[i] = next();
    v[i] = next();
  }
  for (int64_t c = 0; c < copies; ++c) {
    views.k.push_back(k);
    views.v.push_back(v);
  }
  views.pos.resize(size_t(keys));
  for (int64_t i = 0; i < keys; ++i) views.pos[size_t(i)] = int32_t(i);
  return views;
}

// Args: keys in the view, head_dim, query heads, KV heads, cold (1: cycle
// through copies of at least 512 MB in all; 0: one copy). Bytes/s counts
// the K and V bytes of the view (keys x kv_heads x head_dim x 2 x 2).
void BM_Decode(benchmark::State& state) {
  const int64_t keys = state.range(0);
  const AttentionShape shape{int32_t(state.range(2)), int32_t(state.range(3)), int32_t(state.range(1))};
  const int64_t view_bytes = keys * shape.n_kv_heads * shape.head_dim * 2 * 2;
  const int64_t copies =
      state.range(4) ? std::max<int64_t>(2, ((int64_t(512) << 20) + view_bytes - 1) / view_bytes) : 1;
  const DecodeViews views = MakeDecodeViews(shape, keys, copies);
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  std::vector<float> q(size_t(shape.n_heads * shape.head_dim));  // [1, heads, head_dim]
  for (float& x : q) x = normal(rng);
  const int32_t q_pos = int32_t(keys - 1);
  std::vector<float> out(q.size());                              // [1, heads, head_dim]
  std::vector<AttentionArgs> args(static_cast<size_t>(copies));  // [copies] one per copy
  for (int64_t c = 0; c < copies; ++c) {
    AttentionArgs& a = args[size_t(c)];
    a.shape = shape;
    a.q = q.data();
    a.q_pos = &q_pos;
    a.n_q = 1;
    a.kv.k = views.k[size_t(c)].data();
    a.kv.v = views.v[size_t(c)].data();
    a.kv.pos = views.pos.data();
    a.kv.n_rows = keys;
    a.kv.type = KvType::kBF16;
  }
  int64_t step = 0;
  for (auto _ : state) {
    Attend(args[size_t(step++ % copies)], out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * view_bytes);
  state.counters["copies"] = double(copies);
}
BENCHMARK(BM_Decode)
    ->ArgsProduct({{1024, 32768, 131072}, {128}, {8}, {2}, {0, 1}})
    ->ArgsProduct({{4096, 32768, 131072}, {64}, {32}, {8}, {0, 1}})  // Llama 3.2 1B's heads
    ->ArgsProduct({{4096, 32768}, {64}, {8}, {2}, {0, 1}})           // bench/llama_cpp_side_by_side.sh's models
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace swan

// main(): bench_main.cc (SWAN_SIMD_TARGET applies)
