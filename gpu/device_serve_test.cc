// swan serve's engine on a device: requests decoded together there give
// the texts the CPU's engine gives, and nothing is reused from a prompt
// cache (the host cannot snapshot a device's keys).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gpu/device_test_util.h"
#include "model/model.h"
#include "model/test_files.h"
#include "serve/engine.h"
#include "tokenizer/tokenizer.h"

namespace swan {
namespace {

class DeviceServeTest : public VulkanTest {};

// Each request's greedy text and finish, submitted together to one engine.
std::vector<std::string> Serve(const LanguageModel& model, const Tokenizer& tokenizer, const std::string& plan,
                               int64_t* reused) {
  EngineOptions options;
  options.attn = plan;
  options.prefill_chunk = 8;
  Engine engine(model, tokenizer, options);
  const char* prompts[] = {"Once upon a time", "The cat sat on the mat", "Lily and Tom went to the park."};
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int round = 0; round < 2; ++round)  // the second round repeats the prompts: a prompt cache would reuse them
    for (size_t i = 0; i < std::size(prompts); ++i) {
      GenerationRequest r;
      r.prompt = tokenizer.Encode(prompts[i]);
      r.max_tokens = 10 + 4 * int64_t(i);
      r.sampling.temperature = 0;
      r.ignore_eos = true;
      streams.push_back(engine.Submit(r));
    }
  std::vector<std::string> texts;
  for (const auto& stream : streams) {
    std::string text;
    GenerationEvent ev;
    while (stream->Next(&ev, std::chrono::seconds(60)) && ev.kind != GenerationEvent::Kind::kDone) text += ev.text;
    EXPECT_EQ(ev.kind, GenerationEvent::Kind::kDone);
    texts.push_back(text + " | " + std::to_string(ev.tokens.size()));
  }
  *reused = engine.Stats().prompt_cache_entries;
  return texts;
}

TEST_F(DeviceServeTest, RequestsDecodedTogetherGiveTheCpusTexts) {
  SWAN_NEED_VULKAN();
  const std::unique_ptr<LanguageModel> cpu = LoadModel(test::Stories260K());
  const std::unique_ptr<LanguageModel> gpu = LoadOnDevice(test::Stories260K());
  const Tokenizer tokenizer = Tokenizer::Load(test::Stories260K());
  EXPECT_TRUE(cpu->CacheOnHost());
  EXPECT_FALSE(gpu->CacheOnHost());
  for (const std::string plan : {"full", "swa:8,sinks:2"}) {
    SCOPED_TRACE(plan);
    int64_t cpu_entries = 0, gpu_entries = 0;
    const std::vector<std::string> want = Serve(*cpu, tokenizer, plan, &cpu_entries);
    const std::vector<std::string> got = Serve(*gpu, tokenizer, plan, &gpu_entries);
    EXPECT_EQ(got, want);
    EXPECT_GT(cpu_entries, 0);  // the CPU's engine keeps finished prompts
    EXPECT_EQ(gpu_entries, 0);  // the device's keeps none
  }
}

}  // namespace
}  // namespace swan
