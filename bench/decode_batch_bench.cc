// Google Benchmark for batched decode: N sequences each decode one token
// per step, through one LanguageModel::ForwardBatch (the weights read once
// per step) or one Forward per sequence (read N times), on a random
// Llama-shaped model of ~90M parameters (too big for the caches, so decode
// is bound by reading weights as in real models). Items/s = decode tokens/s.
// Built, never run as a test: `build/bench/decode_batch_bench`.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "model/decoder.h"
#include "model/model.h"
#include "model/weight_source.h"

namespace swan {
namespace {

constexpr int32_t kContext = 128;  // tokens in each sequence's cache before the timed steps

ModelConfig BenchConfig() {
  ModelConfig c;
  c.architecture = "LlamaForCausalLM";
  c.model_type = "llama";
  c.hidden_size = 1024;
  c.intermediate_size = 4096;
  c.n_layers = 4;
  c.n_heads = 16;
  c.n_kv_heads = 4;
  c.head_dim = 64;
  c.vocab_size = 32000;
  c.max_position_embeddings = 1 << 16;
  c.rms_norm_eps = 1e-6;
  c.rope.base = 10000.0;
  c.tie_word_embeddings = true;
  return c;
}

const LanguageModel& Model(WeightType weights) {
  static std::unique_ptr<LanguageModel> models[2];
  std::unique_ptr<LanguageModel>& m = models[weights == WeightType::kBF16];
  if (!m) m = BuildDecoder(RandomWeights(1, weights), BenchConfig(), "decode_batch_bench");
  return *m;
}

// Args: sequences, batched (1) or one Forward each (0), bf16 weights (1) or f32.
void BM_Decode(benchmark::State& state) {
  const int64_t n_seq = state.range(0);
  const bool batched = state.range(1) != 0;
  const LanguageModel& model = Model(state.range(2) ? WeightType::kBF16 : WeightType::kF32);
  const int64_t vocab = model.config().vocab_size;
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<int32_t> tokens, pos;                  // [n_seq] each sequence's next token and position
  std::vector<float> logits(size_t(n_seq * vocab));  // [n_seq, vocab]
  for (int64_t i = 0; i < n_seq; ++i) {
    sessions.push_back(model.NewSession(model.ResolvePlan("full")));
    std::vector<int32_t> prompt, prompt_pos;  // [kContext]
    for (int32_t p = 0; p < kContext; ++p) {
      prompt.push_back(int32_t((i * 131 + p * 7) % vocab));
      prompt_pos.push_back(p);
    }
    model.Forward(logits.data(), Batch{prompt.data(), prompt_pos.data(), kContext, false}, *sessions.back());
    tokens.push_back(int32_t(i + 1));
    pos.push_back(kContext);
  }
  for (auto _ : state) {
    std::vector<SequenceStep> steps;  // [n_seq]
    for (size_t i = 0; i < sessions.size(); ++i)
      steps.push_back(SequenceStep{Batch{&tokens[i], &pos[i], 1, false}, sessions[i].get()});
    if (batched) {
      model.ForwardBatch(logits.data(), steps);
    } else {
      for (int64_t i = 0; i < n_seq; ++i)
        model.Forward(&logits[size_t(i * vocab)], steps[size_t(i)].batch, *sessions[size_t(i)]);
    }
    benchmark::DoNotOptimize(logits.data());
    for (int32_t& p : pos) ++p;
  }
  state.SetItemsProcessed(state.iterations() * n_seq);
}
BENCHMARK(BM_Decode)
    ->ArgsProduct({{1, 8}, {0, 1}, {0, 1}})
    ->Args({16, 0, 1})
    ->Args({16, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace swan

// main(): bench_main.cc (SWAN_SIMD_TARGET applies)
