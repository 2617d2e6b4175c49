// The model's forward on a Vulkan device against the CPU's on the same
// weights: logits of every token of a prompt within a stated tolerance,
// and the same greedy continuation, under full, window, window + sinks,
// hybrid, NoPE, routed and per-head plans; stories260K (Llama, f32
// weights), swan-7m (bf16), tiny Qwen2, Qwen3 and Gemma 3 models, and the
// lab's models under their own plans. Plans the device does not run yet
// (linear layers) are refused with a message.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/device_test_util.h"
#include "model/gguf_export.h"
#include "model/tiny_reference.h"
#include "model/model.h"
#include "util/test_paths.h"

namespace swan {
namespace {

class DeviceDecoderTest : public VulkanTest {
 protected:
  // Runs `prompt` through both models token by token under `plan`, then
  // `greedy` more tokens from each model's own argmax; compares.
  // tolerance: of the largest logit difference.
  // cpu_weights: the type the CPU holds the weights in (unset: as stored);
  // the device holds them as stored.
  void Compare(const std::string& dir, const std::string& plan, int greedy, double tolerance,
               std::optional<WeightType> cpu_weights = std::nullopt, std::optional<WeightType> stored = std::nullopt) {
    SCOPED_TRACE(dir + " under '" + plan + "'");
    LoadOptions on_cpu;
    on_cpu.weights = cpu_weights;
    const std::unique_ptr<LanguageModel> cpu = LoadModel(dir, on_cpu);
    const std::unique_ptr<LanguageModel> gpu = LoadOnDevice(dir);
    const int64_t vocab = cpu->config().vocab_size;
    KvCacheOptions cache;  // the same KV type and chunk on both
    cache.type = kv_type;
    cache.max_chunk = max_chunk;
    auto cpu_session = cpu->NewSession(cpu->ResolvePlan(plan), cache);
    auto gpu_session = gpu->NewSession(gpu->ResolvePlan(plan), cache);
    // Routed layers: both record each token's route, drawn or the router's.
    const size_t n_layers = size_t(cpu->config().n_layers);
    std::vector<std::vector<uint8_t>> cpu_routes(n_layers), gpu_routes(n_layers);  // [n_layers][tokens]
    for (size_t i = 0; i < n_layers; ++i) {
      cpu_session->routing.record.push_back(&cpu_routes[i]);
      gpu_session->routing.record.push_back(&gpu_routes[i]);
    }
    cpu_session->routing.forced_full_ratio = gpu_session->routing.forced_full_ratio = forced_ratio;
    std::uniform_int_distribution<int32_t> id(1, int32_t(vocab - 1));
    std::vector<int32_t> prompt(
        static_cast<size_t>(prompt_tokens));  // [prompt_tokens] random ids: every position matters alike
    for (int32_t& t : prompt) t = id(rng);
    std::vector<int32_t> pos(prompt.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
    std::vector<float> want(prompt.size() * size_t(vocab)), got(want.size());  // [prompt_tokens, vocab]
    // The CPU as one prefill, the device in two calls (positions continue).
    cpu->Forward(want.data(), Batch{prompt.data(), pos.data(), int64_t(prompt.size()), true}, *cpu_session);
    gpu->Forward(got.data(), Batch{prompt.data(), pos.data(), 5, true}, *gpu_session);
    gpu->Forward(got.data() + 5 * vocab, Batch{prompt.data() + 5, pos.data() + 5, prompt_tokens - 5, true},
                 *gpu_session);
    double worst = 0;
    std::vector<float> differences;  // [compared logits] every |CPU - device|, for typical_tolerance
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, double(std::fabs(want[i] - got[i])));
      differences.push_back(std::fabs(want[i] - got[i]));
    }
    std::printf("%s under '%s'%s%s, %s KV: largest logit difference %.2e\n", dir.c_str(), plan.c_str(),
                stored ? " stored as " : "", stored ? WeightTypeName(*stored) : "", KvTypeName(kv_type), worst);
    EXPECT_LT(worst, tolerance) << "largest logit difference";
    // Greedy continuations: both models are fed the CPU's choice, and the
    // device's own choice must be the CPU's or, in a tie within the
    // tolerance (random prompts make some), one the CPU scores as high.
    const float* last_cpu = want.data() + (prompt.size() - 1) * size_t(vocab);
    const float* last_gpu = got.data() + (prompt.size() - 1) * size_t(vocab);
    std::vector<float> step_cpu(static_cast<size_t>(vocab)), step_gpu(static_cast<size_t>(vocab));  // [vocab]
    for (int i = 0; i < greedy; ++i) {
      const int32_t next_cpu = int32_t(std::max_element(last_cpu, last_cpu + vocab) - last_cpu);
      const int32_t next_gpu = int32_t(std::max_element(last_gpu, last_gpu + vocab) - last_gpu);
      if (next_gpu != next_cpu) {
        EXPECT_LT(last_cpu[next_cpu] - last_cpu[next_gpu], tolerance)
            << "step " << i << ": the device picks " << next_gpu << ", the CPU " << next_cpu;
      }
      const int32_t p = int32_t(prompt.size()) + i;
      cpu->Forward(step_cpu.data(), Batch{&next_cpu, &p, 1, false}, *cpu_session);
      gpu->Forward(step_gpu.data(), Batch{&next_cpu, &p, 1, false}, *gpu_session);
      for (int64_t v = 0; v < vocab; ++v) {
        ASSERT_LT(std::fabs(step_cpu[size_t(v)] - step_gpu[size_t(v)]), tolerance) << "step " << i << " logit " << v;
        differences.push_back(std::fabs(step_cpu[size_t(v)] - step_gpu[size_t(v)]));
      }
      last_cpu = step_cpu.data();
      last_gpu = step_gpu.data();
    }
    if (typical_tolerance > 0) {
      const auto p90 = differences.begin() + std::ptrdiff_t(differences.size() * 9 / 10);
      std::nth_element(differences.begin(), p90, differences.end());
      std::printf("  90th percentile of the logit differences %.2e\n", double(*p90));
      EXPECT_LT(*p90, typical_tolerance) << "90th percentile of the logit differences";
    }
    EXPECT_EQ(gpu_routes, cpu_routes) << "routes";
    size_t routed = 0, full = 0;
    for (const std::vector<uint8_t>& r : cpu_routes)
      routed += r.size(), full += size_t(std::count(r.begin(), r.end(), 1));
    if (routed) std::printf("  %zu of %zu routes full\n", full, routed);
  }

  double forced_ratio = -1;  // routed plans: >= 0 draws the routes (RouteOptions)
  // > 0: the 90th percentile of all the logit differences (prompt and
  // greedy steps) must be below it, beside the largest below `tolerance`.
  double typical_tolerance = 0;
  KvType kv_type = KvType::kF32;
  int32_t max_chunk = 512;     // the most tokens one pass writes (KvCacheOptions)
  int32_t prompt_tokens = 12;  // at least 6: the device takes them as 5, then the rest
};

TEST_F(DeviceDecoderTest, Stories260KMatchesTheCpuUnderEveryStaticPlan) {
  SWAN_NEED_VULKAN();
  for (const std::string plan :
       {"full", "swa:4", "swa:4,sinks:2", "hybrid:1:1,window:3,sinks:1", "nope:all", "swa:4,sinks:1,staggered",
        "swa:4,sinks:2,pos:cache", "hybrid:1:1,window:3,sinks:1,pos:cache,nope:full"})
    Compare(test::Stories260K(), plan, 16, 1e-4);
}

// A prefill in chunks of 3 (the prompt goes as 5 and 7 tokens): each pass
// writes its keys into a ring of sinks + W - 1 + 3 slots that has wrapped,
// and its queries still see their whole windows.
TEST_F(DeviceDecoderTest, PrefillChunksOverWrappedRingsMatchTheCpu) {
  SWAN_NEED_VULKAN();
  max_chunk = 3;
  for (const std::string plan : {"swa:4,sinks:2", "swa:2", "hybrid:1:1,window:3,sinks:1,pos:cache"})
    Compare(test::Stories260K(), plan, 4, 1e-4);
}

// A server's step on a device (ForwardBatch): sequences of four plans, one
// routed at a forced ratio, prefilled in one step with prompts of different
// lengths, then decoded together; each sequence's logits and routes are
// the CPU's for it alone.
TEST_F(DeviceDecoderTest, BatchedSequencesMatchEachAloneOnTheCpu) {
  SWAN_NEED_VULKAN();
  const std::unique_ptr<LanguageModel> cpu = LoadModel(test::Stories260K());
  const std::unique_ptr<LanguageModel> gpu = LoadOnDevice(test::Stories260K());
  const int64_t vocab = cpu->config().vocab_size;
  const std::vector<std::string> plans = {"full", "swa:4,sinks:2,pos:cache", "hybrid:1:1,window:3,sinks:1",
                                          "routed:4,sinks:1"};
  const std::vector<int64_t> lengths = {5, 9, 1, 6};  // [sequences] prompt tokens
  KvCacheOptions cache;
  cache.type = KvType::kF32;
  std::vector<std::unique_ptr<Session>> on_cpu, on_gpu;  // [sequences]
  const size_t n_layers = size_t(cpu->config().n_layers);
  std::vector<std::vector<uint8_t>> cpu_routes(n_layers), gpu_routes(n_layers);  // [n_layers][tokens]
  for (const std::string& plan : plans) {
    on_cpu.push_back(cpu->NewSession(cpu->ResolvePlan(plan), cache));
    on_gpu.push_back(gpu->NewSession(gpu->ResolvePlan(plan), cache));
  }
  for (size_t i = 0; i < n_layers; ++i) {
    on_cpu.back()->routing.record.push_back(&cpu_routes[i]);
    on_gpu.back()->routing.record.push_back(&gpu_routes[i]);
  }
  on_cpu.back()->routing.forced_full_ratio = on_gpu.back()->routing.forced_full_ratio = 0.4;
  std::uniform_int_distribution<int32_t> id(1, int32_t(vocab - 1));
  std::vector<std::vector<int32_t>> tokens(plans.size()), pos(plans.size());  // [sequences][tokens]
  for (size_t s = 0; s < plans.size(); ++s)
    for (int64_t t = 0; t < lengths[s]; ++t) tokens[s].push_back(id(rng)), pos[s].push_back(int32_t(t));
  double worst = 0;
  for (int round = 0; round < 4; ++round) {  // the prompts with every row's logits, then 3 decode steps
    const bool prefill = round == 0;
    std::vector<SequenceStep> steps;  // [sequences]
    int64_t rows = 0;
    for (size_t s = 0; s < plans.size(); ++s) {
      const int64_t n = prefill ? lengths[s] : 1, from = int64_t(tokens[s].size()) - n;
      steps.push_back({Batch{tokens[s].data() + from, pos[s].data() + from, n, prefill}, on_gpu[s].get()});
      rows += prefill ? n : 1;
    }
    std::vector<float> got(size_t(rows * vocab));  // [rows, vocab]
    gpu->ForwardBatch(got.data(), steps);
    const float* at = got.data();
    for (size_t s = 0; s < plans.size(); ++s) {
      SCOPED_TRACE(plans[s] + ", round " + std::to_string(round));
      std::vector<float> want(size_t(steps[s].batch.n * vocab));  // [n, vocab]
      cpu->Forward(want.data(), steps[s].batch, *on_cpu[s]);
      const size_t values = prefill ? want.size() : size_t(vocab);
      for (size_t v = 0; v < values; ++v) {
        worst = std::max(worst, double(std::fabs(want[v] - at[v])));
        ASSERT_NEAR(at[v], want[v], 1e-4) << "logit " << v;
      }
      at += values;
      // The next token: the CPU's greedy choice, the same for both.
      const float* last = want.data() + values - size_t(vocab);
      tokens[s].push_back(int32_t(std::max_element(last, last + vocab) - last));
      pos[s].push_back(int32_t(pos[s].size()));
    }
  }
  std::printf("%zu sequences in batched steps: largest logit difference %.2e\n", plans.size(), worst);
  EXPECT_EQ(gpu_routes, cpu_routes) << "routes";
}

// A bf16 KV cache: the device rounds keys and values as the CPU's cache
// does (DeviceLayerSteps.StoredRowsGatherHeadsAndRoundAsTheCpu), yet the
// two need not attend over the same values: a key the two compute a
// float32 ulp apart can round to neighbouring bf16 values (2^-8 apart),
// and a flipped key moves the next hidden states, which can flip more.
// Over 600 random prompts (seeds 5000-5599) most logits came within 1e-5,
// but the largest difference of a prompt and 16 greedy steps reached 0.16
// (one step of SWAN_TEST_SEED=5583) and another seed's grew step by step
// to 0.25 (SWAN_TEST_SEED=2309); the 90th percentile of a run's
// differences had a median of 5e-6 and a maximum of 0.024. So that is
// held to 0.1, and the largest to 1: a cache read in the wrong layout is
// off by order 1 nearly everywhere. Over a ring of 4 keys one such key
// weighs a quarter of the attention: random prompts moved a logit by up
// to 0.12 (SWAN_TEST_SEED=3046943651, capped to AVX2 too). Rings in bf16 are
// checked where both caches hold the very same rows
// (RandomFillsMatchTheCpu) and by perplexity over a text
// (cli_perplexity_window_bf16_*).
TEST_F(DeviceDecoderTest, Bf16CachesMatchTheCpu) {
  SWAN_NEED_VULKAN();
  kv_type = KvType::kBF16;
  typical_tolerance = 0.1;
  Compare(test::Stories260K(), "full", 16, 1.0);
}

// swan bench --fill random on a device: the same random rows as the host
// cache's fill, so a decode step after them gives the CPU's logits; rings
// keep the sinks and the newest window, full layers grow past 256 slots.
TEST_F(DeviceDecoderTest, RandomFillsMatchTheCpu) {
  SWAN_NEED_VULKAN();
  const std::unique_ptr<LanguageModel> cpu = LoadModel(test::Stories260K());
  const std::unique_ptr<LanguageModel> gpu = LoadOnDevice(test::Stories260K());
  const int64_t vocab = cpu->config().vocab_size;
  for (KvType type : {KvType::kF32, KvType::kBF16})
    for (const char* plan : {"full", "hybrid:1:1,window:5,sinks:2"})
      for (int64_t depth : {3, 300}) {
        SCOPED_TRACE(std::string(plan) + " at depth " + std::to_string(depth) + " in " + KvTypeName(type));
        KvCacheOptions cache;
        cache.type = type;
        auto cpu_session = cpu->NewSession(cpu->ResolvePlan(plan), cache);
        auto gpu_session = gpu->NewSession(gpu->ResolvePlan(plan), cache);
        cpu->FillCacheRandom(*cpu_session, depth, 64);
        gpu->FillCacheRandom(*gpu_session, depth, 64);
        const int32_t token = 7, pos = int32_t(depth);
        std::vector<float> want(static_cast<size_t>(vocab)), got(want.size());  // [vocab]
        cpu->Forward(want.data(), Batch{&token, &pos, 1, false}, *cpu_session);
        gpu->Forward(got.data(), Batch{&token, &pos, 1, false}, *gpu_session);
        // bf16: the CPU's decode rounds queries and probabilities (Bf16CachesMatchTheCpu).
        const float tolerance = type == KvType::kBF16 ? 5e-2f : 1e-4f;
        for (int64_t v = 0; v < vocab; ++v) ASSERT_NEAR(got[size_t(v)], want[size_t(v)], tolerance) << v;
      }
  // The cache then holds 512 slots of a full layer (300 rows grown by 256).
  KvCacheOptions f32_cache;
  f32_cache.type = KvType::kF32;
  auto full = gpu->NewSession(gpu->ResolvePlan("full"), f32_cache);
  gpu->FillCacheRandom(*full, 300, 64);
  const KvShape shape = gpu->kv_shape();
  EXPECT_EQ(gpu->CacheBytes(*full), size_t(gpu->config().n_layers) * 512 * 2 * shape.n_kv_heads * shape.head_dim * 4);
}

// A session keeps its keys and values on the device and frees them with
// itself, even after the model is gone; two sessions of one model keep
// separate caches (CacheBytes: a full layer's 256 slots, a window's ring,
// a per-head layer's full heads and window heads apart, half as many bytes
// in bf16; q8_0 is refused).
TEST_F(DeviceDecoderTest, SessionsOwnTheirDeviceCaches) {
  SWAN_NEED_VULKAN();
  std::unique_ptr<LanguageModel> gpu = LoadOnDevice(test::Stories260K());
  KvCacheOptions f32_cache;
  f32_cache.type = KvType::kF32;
  auto full = gpu->NewSession(gpu->ResolvePlan("full"), f32_cache);
  f32_cache.max_chunk = 4;  // a ring of 2 sinks + 8 - 1 + 4, below the 256 slots a cache grows by
  auto window = gpu->NewSession(gpu->ResolvePlan("swa:8,sinks:2"), f32_cache);
  EXPECT_EQ(gpu->CacheBytes(*full), 0u);
  const KvShape shape = gpu->kv_shape();
  const size_t slot = size_t(2 * shape.n_kv_heads * shape.head_dim) * sizeof(float);  // a key and a value
  const int32_t tokens[3] = {1, 400, 401}, pos[3] = {0, 1, 2};
  std::vector<float> logits(static_cast<size_t>(gpu->config().vocab_size));  // [vocab]
  gpu->Forward(logits.data(), Batch{tokens, pos, 3, false}, *full);
  gpu->Forward(logits.data(), Batch{tokens, pos, 3, false}, *window);
  const size_t layers = size_t(gpu->config().n_layers);
  EXPECT_EQ(gpu->CacheBytes(*full), layers * 256 * slot);
  EXPECT_EQ(gpu->CacheBytes(*window), layers * 13 * slot);
  // Per-head layers: KV head 0 keeps every position (256 slots), the other
  // 3 a ring of 8 - 1 + 4 slots, as the host cache keeps them.
  auto per_head = gpu->NewSession(
      gpu->ResolvePlan("full,layer0:heads:0:8,layer1:heads:0:8,layer2:heads:0:8,layer3:heads:0:8,layer4:heads:0:8"),
      f32_cache);
  gpu->Forward(logits.data(), Batch{tokens, pos, 3, false}, *per_head);
  const size_t head_slot = slot / size_t(shape.n_kv_heads);
  EXPECT_EQ(gpu->CacheBytes(*per_head), layers * (256 * head_slot + 11 * 3 * head_slot));
  KvCacheOptions bf16_cache;
  bf16_cache.type = KvType::kBF16;
  bf16_cache.max_chunk = 4;
  auto halves = gpu->NewSession(gpu->ResolvePlan("swa:8,sinks:2"), bf16_cache);
  gpu->Forward(logits.data(), Batch{tokens, pos, 3, false}, *halves);
  EXPECT_EQ(gpu->CacheBytes(*halves), layers * 13 * slot / 2);
  {  // q8_0 (on a model whose head_dim of 128 a q8_0 cache can hold)
    const std::unique_ptr<LanguageModel> lab = LoadOnDevice(test::SourceRoot() + "/models/lab/full");
    KvCacheOptions q8_cache;
    q8_cache.type = KvType::kQ8_0;
    auto q8 = lab->NewSession(lab->ResolvePlan("full"), q8_cache);
    std::vector<float> lab_logits(size_t(lab->config().vocab_size));  // [vocab]
    EXPECT_THROW(lab->Forward(lab_logits.data(), Batch{tokens, pos, 1, false}, *q8), std::invalid_argument);
  }
  // A session whose positions do not continue is refused; one at 0 starts over.
  EXPECT_THROW(gpu->Forward(logits.data(), Batch{tokens, pos + 1, 1, false}, *full), std::invalid_argument);
  gpu->Forward(logits.data(), Batch{tokens, pos, 1, false}, *full);
  EXPECT_EQ(gpu->CacheBytes(*full), layers * 256 * slot);
  gpu.reset();  // the sessions' caches outlive the model
  full.reset();
  window.reset();
  halves.reset();
}

// Block weights reach the device in the file's layout (UnpackBlockRows)
// and are multiplied there by float32 activations. The CPU's reference is
// the same GGUF file loaded with --weights f32: the very values, without
// the CPU's int8 activations.
TEST_F(DeviceDecoderTest, BlockTypesGiveTheirValuesProducts) {
  SWAN_NEED_VULKAN();
  for (WeightType type :
       {WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ4_1, WeightType::kQ5_0, WeightType::kQ5_1}) {
    const std::string path =
        ::testing::TempDir() + "/stories260K-" + std::to_string(getpid()) + "-" + WeightTypeName(type) + ".gguf";
    {
      std::ofstream out(path, std::ios::binary);
      out << HfToGgufBytes(test::Stories260K(), type);
    }
    Compare(path, "swa:4,sinks:2", 8, 1e-4, WeightType::kF32, type);
    std::remove(path.c_str());
  }
}

// The CPU multiplies bf16 weights by activations rounded to bf16 (oneDNN's
// bf16 product); the device keeps them in float32: differences of that
// rounding's size (2^-8 of a logit's terms).
TEST_F(DeviceDecoderTest, Swan7mMatchesTheCpuInBf16) {
  SWAN_NEED_VULKAN();
  Compare(test::SourceRoot() + "/models/swan-7m", "", 8, 5e-2);
}

// Qwen2 (q/k/v biases, a window layer), Qwen3 (QK-norm) and Gemma 3 (5:1
// windows, per-layer RoPE bases and scaling, QK-norm, sandwich and 1 + w
// norms, scaled embeddings, GELU-tanh, query_pre_attn_scalar): tiny random
// checkpoints under their own plans.
TEST_F(DeviceDecoderTest, QwenAndGemmaMatchTheCpu) {
  SWAN_NEED_VULKAN();
  // A folder of this process's own: CTest runs this program several times at once.
  const std::filesystem::path root =
      std::filesystem::path(::testing::TempDir()) / ("device_families_" + std::to_string(getpid()));
  for (const char* family : {"qwen2", "qwen3", "gemma3"}) std::filesystem::create_directories(root / family);
  const test::TinyLlamaShape small{50, 16, 32, 4, 2, 4, 3};
  test::TinyCheckpoint qwen2(7);
  test::AddTinyLlamaWeights(qwen2, small, /*qkv_bias=*/true);
  qwen2.Write(root / "qwen2", R"({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 16,
    "intermediate_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
    "vocab_size": 50, "max_position_embeddings": 128, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
    "hidden_act": "silu", "tie_word_embeddings": false, "sliding_window": 5, "max_window_layers": 1,
    "use_sliding_window": true})");
  const test::TinyLlamaShape qwen3_shape{50, 16, 32, 4, 2, 8, 3};
  test::TinyCheckpoint qwen3(13);
  test::AddTinyLlamaWeights(qwen3, qwen3_shape, /*qkv_bias=*/false, [&](const std::string& p, int32_t) {
    qwen3.Add(p + "self_attn.q_norm.weight", {8}, 0.3, 1.0);
    qwen3.Add(p + "self_attn.k_norm.weight", {8}, 0.3, 1.0);
  });
  qwen3.Write(root / "qwen3", R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 16,
    "intermediate_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 8, "vocab_size": 50, "max_position_embeddings": 128, "rms_norm_eps": 1e-6,
    "rope_theta": 1000000.0, "hidden_act": "silu", "attention_bias": false, "tie_word_embeddings": false,
    "sliding_window": null, "use_sliding_window": false, "max_window_layers": 3})");
  test::TinyCheckpoint gemma(11);
  test::AddTinyGemma3Weights(gemma, test::TinyLlamaShape{50, 24, 40, 4, 2, 8, 6});
  gemma.Write(root / "gemma3", test::kTinyGemma3Config);
  for (const char* family : {"qwen2", "qwen3", "gemma3"}) Compare((root / family).string(), "", 12, 1e-4);
  std::filesystem::remove_all(root);
}

// Routed layers on the device: routes drawn at a forced ratio on a model
// without routers, and a lab model's learned routers run on the device
// (window 4, so that the window branch differs from full attention within
// the prompt). Per-head layers: some KV heads full, the others a window.
TEST_F(DeviceDecoderTest, RoutedAndPerHeadPlansMatchTheCpu) {
  SWAN_NEED_VULKAN();
  forced_ratio = 0.4;
  Compare(test::Stories260K(), "routed:4,sinks:1", 8, 1e-4);
  forced_ratio = -1;
  // Its bf16 weights as float32 on the CPU: the device's float32 products.
  // A trained model sure of its answers has logits in the tens, and float32
  // sums in another order then differ by up to 1.3e-4 (SWAN_TEST_SEED=
  // 402864262): a tolerance of 1e-3.
  Compare(test::SourceRoot() + "/models/lab/routed", "routed:4,sinks:1", 8, 1e-3, WeightType::kF32);
  Compare(test::Stories260K(), "full,layer0:heads:1+3:4,layer2:heads:0:3,layer4:swa:4,sinks:1", 8, 1e-4);
}

// The lab's models of 4 layers, each under the plan it was trained with
// (config.json's swan_attention_plan): full, window, window + sinks,
// staggered, chunked, 3:1 hybrid, hybrid with NoPE, per-head and routed,
// over a prompt of 72 tokens, so that their windows of 64 slide; the
// linear one is refused (below).
TEST_F(DeviceDecoderTest, LabModelsMatchTheCpuUnderTheirOwnPlans) {
  SWAN_NEED_VULKAN();
  prompt_tokens = 72;
  for (const char* name : {"d4-full", "d4-swa64", "d4-swa64-sinks4", "d4-swa64-staggered", "d4-swa64-chunked",
                           "d4-hybrid31", "d4-hybrid31-nope", "d4-per-head12", "d4-routed"})
    Compare(test::SourceRoot() + "/models/lab/" + name, "model", 2, 1e-3, WeightType::kF32);
}

TEST_F(DeviceDecoderTest, RefusesPlansItDoesNotRunYet) {
  SWAN_NEED_VULKAN();
  const std::unique_ptr<LanguageModel> linear = LoadOnDevice(test::SourceRoot() + "/models/lab/linear");
  auto session = linear->NewSession(linear->ResolvePlan(""));
  const int32_t token = 1, pos = 0;
  std::vector<float> logits(size_t(linear->config().vocab_size));
  try {
    linear->Forward(logits.data(), Batch{&token, &pos, 1, false}, *session);
    FAIL() << "linear attention ran on the device";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("CPU only"), std::string::npos) << e.what();
  }
  const std::unique_ptr<LanguageModel> gpu = LoadOnDevice(test::Stories260K());
  logits.resize(size_t(gpu->config().vocab_size));
  const int32_t later = 3;
  auto fresh = gpu->NewSession(gpu->ResolvePlan("full"));
  EXPECT_THROW(gpu->Forward(logits.data(), Batch{&token, &later, 1, false}, *fresh), std::invalid_argument);
}

}  // namespace
}  // namespace swan
