// The serving engine on stories260K: prompt caching across a multi-turn
// conversation under window plans (only new tokens are processed, logits
// equal a fresh run's), the KV budget, cancellation and stop sequences.
#include "serve/engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "model/test_files.h"
#include "serve/text_stream.h"

namespace swan {
namespace {

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = LoadModel(test::Stories260K()).release();
    tokenizer_ = new Tokenizer(Tokenizer::Load(test::Stories260K()));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete tokenizer_;
  }

  struct Result {
    std::string text;
    GenerationEvent done;
  };
  static Result Collect(const std::shared_ptr<RequestStream>& stream) {
    Result r;
    GenerationEvent ev;
    for (;;) {
      // A hang's guard: under the sanitizers a 2-core Zen 3 took over 30 s
      // to prefill this suite's long bf16 prompt with another test beside it.
      if (!stream->Next(&ev, std::chrono::seconds(120))) {
        ADD_FAILURE() << "no event within 120 s";
        return r;
      }
      if (ev.kind == GenerationEvent::Kind::kDone) break;
      r.text += ev.text;
    }
    r.done = std::move(ev);
    return r;
  }

  // Logits [vocab] after the whole prompt in a fresh session.
  static std::vector<float> FreshLogits(const std::string& spec, const std::vector<int32_t>& prompt) {
    auto session = model_->NewSession(model_->ResolvePlan(spec), KvCacheOptions{});
    std::vector<int32_t> pos(prompt.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
    std::vector<float> logits(size_t(model_->config().vocab_size));  // [vocab]
    model_->Forward(logits.data(), Batch{prompt.data(), pos.data(), int64_t(prompt.size()), false}, *session);
    return logits;
  }

  static double MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return INFINITY;
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
    return m;
  }

  static GenerationRequest Greedy(std::vector<int32_t> prompt, int64_t max_tokens) {
    GenerationRequest r;
    r.prompt = std::move(prompt);
    r.max_tokens = max_tokens;
    r.sampling.temperature = 0;
    r.ignore_eos = true;
    r.capture_logits = true;
    return r;
  }

  static LanguageModel* model_;
  static Tokenizer* tokenizer_;
};
LanguageModel* EngineTest::model_ = nullptr;
Tokenizer* EngineTest::tokenizer_ = nullptr;

TEST_F(EngineTest, MultiTurnProcessesOnlyNewTokensAndMatchesFreshLogits) {
  const int32_t interval = 16;
  for (const char* spec : {"hybrid:3:1,window:16", "swa:16", "swa:16,sinks:2", "swa:16,sinks:2,pos:cache", "full",
                           "swa:16,sinks:2,layer1:heads:0+3,layer4:heads:2"}) {
    SCOPED_TRACE(spec);
    EngineOptions options;
    options.attn = spec;
    options.checkpoint_interval = interval;
    options.prefill_chunk = 48;
    Engine engine(*model_, *tokenizer_, options);
    std::vector<int32_t> conversation = tokenizer_->Encode("Once upon a time, there was a little dog named Max.");
    for (int turn = 0; turn < 5; ++turn) {
      // The user's next message: a few tokens of new text.
      const std::vector<int32_t> user =
          tokenizer_->Encode(turn % 2 ? " He liked to run in the park with his friend." : " One day, the sun was hot.",
                             EncodeOptions{.add_special_tokens = false});
      conversation.insert(conversation.end(), user.begin(), user.end());
      const Result r = Collect(engine.Submit(Greedy(conversation, 17 + turn)));
      ASSERT_EQ(r.done.finish, FinishReason::kLength) << r.done.error;
      const int64_t processed = r.done.usage.prompt_tokens - r.done.usage.cached_tokens;
      if (turn > 0) {
        // The new message, plus the last reply token (sampled but never fed).
        EXPECT_EQ(processed, int64_t(user.size()) + 1) << "turn " << turn;
      }
      EXPECT_LE(MaxDiff(r.done.logits, FreshLogits(spec, conversation)), 1e-4) << "turn " << turn;
      conversation.insert(conversation.end(), r.done.tokens.begin(), r.done.tokens.end());
    }
    // A prompt that leaves the conversation mid-way restores the checkpoint
    // at or before the point where it diverges.
    std::vector<int32_t> edited(conversation.begin(), conversation.begin() + 70);
    edited.back() = edited.back() == 300 ? 301 : 300;
    const Result r = Collect(engine.Submit(Greedy(edited, 4)));
    const int64_t shared = 69;
    EXPECT_LE(r.done.usage.cached_tokens, shared);
    EXPECT_GT(r.done.usage.cached_tokens, shared - engine.checkpoint_spacing());
    if (std::string(spec) == "full") {
      EXPECT_EQ(r.done.usage.cached_tokens, shared);
    }
    EXPECT_LE(MaxDiff(r.done.logits, FreshLogits(spec, edited)), 1e-4);
  }
}

// The same prompt again reuses all but its last token, whatever its length
// against the checkpoint spacing (a 469-token prompt reused nothing when
// checkpoints came every 832); a prompt that shares part of it reuses up
// to a checkpoint no further back than a quarter of the prompt, or the
// window span. The logits are a fresh session's.
TEST_F(EngineTest, RepeatedPromptsOfAnyLengthAreReused) {
  for (const char* spec : {"swa:16,sinks:2", "hybrid:3:1,window:24"}) {
    EngineOptions options;
    options.attn = spec;
    options.checkpoint_interval = 64;
    Engine engine(*model_, *tokenizer_, options);
    ASSERT_GE(engine.checkpoint_spacing(), 64);
    std::vector<int32_t> text;
    while (text.size() < 400)
      for (int32_t id : tokenizer_->Encode(" Once upon a time, there was a little dog named Max who liked to run."))
        text.push_back(id);
    for (const size_t n : {size_t(9), size_t(40), size_t(63), size_t(130), size_t(399)}) {
      SCOPED_TRACE(std::string(spec) + ", " + std::to_string(n) + " tokens");
      const std::vector<int32_t> prompt(text.begin(), text.begin() + int64_t(n));
      Collect(engine.Submit(Greedy(prompt, 2)));
      const Result again = Collect(engine.Submit(Greedy(prompt, 2)));
      EXPECT_EQ(again.done.usage.cached_tokens, int64_t(n) - 1);
      EXPECT_LE(MaxDiff(again.done.logits, FreshLogits(spec, prompt)), 1e-4);
      // The same prompt with its second half changed.
      std::vector<int32_t> edited = prompt;
      for (size_t i = n / 2; i < n; ++i) edited[i] = edited[i] == 300 ? 301 : 300;
      const Result part = Collect(engine.Submit(Greedy(edited, 2)));
      EXPECT_LE(part.done.usage.cached_tokens, int64_t(n / 2));
      EXPECT_GT(part.done.usage.cached_tokens + engine.CheckpointSpacing(int64_t(n)), int64_t(n / 2));
      EXPECT_LE(MaxDiff(part.done.logits, FreshLogits(spec, edited)), 1e-4);
    }
  }
}

// Batch invariance (--deterministic): a request's log-probabilities are
// bit-identical alone and among 15 other requests decoded in the same
// steps, under every plan kind the engine serves, every KV type, and float
// and block weights; without the option, among 7 others.
TEST_F(EngineTest, AnswersDoNotDependOnWhoElseIsAsking) {
  const std::vector<std::string> others_texts = {
      "The cat sat", "A big red ball", "Lily and Tom went", "One day", "The sun was hot and the sky", "Tom had a dog"};
  LoadOptions bf16, q8;
  bf16.weights = WeightType::kBF16;
  q8.weights = WeightType::kQ8_0;
  const std::unique_ptr<LanguageModel> bf16_model = LoadModel(test::Stories260K(), bf16);
  const std::unique_ptr<LanguageModel> q8_model = LoadModel(test::Stories260K(), q8);
  // A q8_0 cache stores blocks of 32 values: swan-7m's head_dim, not stories260K's 8.
  const std::unique_ptr<LanguageModel> swan_7m = LoadModel(test::SourceRoot() + "/models/swan-7m");
  const std::unique_ptr<LanguageModel> routed = LoadModel(test::SourceRoot() + "/models/swan-7m-routed");
  const Tokenizer swan_7m_tokenizer = Tokenizer::Load(test::SourceRoot() + "/models/swan-7m");
  std::string long_prompt;  // ~1,000 tokens: decode splits the keys of a full layer
  for (int i = 0; i < 120; ++i) long_prompt += "import os\nx = os.path.join(a, b)\n";
  struct Case {
    const LanguageModel* model;
    const Tokenizer* tokenizer;
    const char* name;
    const char* spec;
    KvType kv;
    std::string prompt = "Once upon a time";
    int others = 15;
  };
  const std::vector<Case> cases = {
      {model_, tokenizer_, "stories260K f32", "full", KvType::kF32},
      {model_, tokenizer_, "stories260K f32", "swa:8,sinks:2", KvType::kBF16},
      {model_, tokenizer_, "stories260K f32", "hybrid:3:1,window:16", KvType::kF32},
      {model_, tokenizer_, "stories260K f32", "full,window:8,layer2:heads:1", KvType::kBF16},
      {bf16_model.get(), tokenizer_, "stories260K bf16", "hybrid:1:1,window:12", KvType::kBF16},
      {q8_model.get(), tokenizer_, "stories260K q8_0", "swa:8,sinks:2,pos:cache", KvType::kF32},
      {swan_7m.get(), &swan_7m_tokenizer, "swan-7m bf16", "model", KvType::kQ8_0},
      {routed.get(), &swan_7m_tokenizer, "swan-7m-routed bf16", "model", KvType::kBF16},
      {swan_7m.get(), &swan_7m_tokenizer, "swan-7m bf16, a long prompt", "full", KvType::kF32, long_prompt},
      {swan_7m.get(), &swan_7m_tokenizer, "swan-7m bf16, 7 others", "model", KvType::kBF16, "def main(", 7},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.name) + ", " + c.spec + ", KV " + KvTypeName(c.kv));
    EngineOptions options;
    options.attn = c.spec;
    options.kv_type = c.kv;
    options.prompt_cache = false;
    options.deterministic = c.others > 7;
    auto request = [&](const std::string& text, int64_t max_tokens) {
      GenerationRequest r = Greedy(c.tokenizer->Encode(text), max_tokens);
      r.logprobs = 0;
      return r;
    };
    std::vector<TokenLogprob> alone;
    {
      Engine engine(*c.model, *c.tokenizer, options);
      alone = Collect(engine.Submit(request(c.prompt, 20))).done.logprobs;
    }
    Engine engine(*c.model, *c.tokenizer, options);
    std::vector<std::shared_ptr<RequestStream>> others;
    for (int i = 0; i < c.others; ++i)
      others.push_back(engine.Submit(request(others_texts[size_t(i) % others_texts.size()], 24 + i)));
    const std::vector<TokenLogprob> together = Collect(engine.Submit(request(c.prompt, 20))).done.logprobs;
    for (auto& o : others) Collect(o);
    ASSERT_EQ(together.size(), alone.size());
    for (size_t i = 0; i < alone.size(); ++i) {
      EXPECT_EQ(together[i].token, alone[i].token) << i;
      EXPECT_EQ(together[i].logprob, alone[i].logprob) << "token " << i;  // bit for bit
    }
  }
}

TEST_F(EngineTest, SameOutputsWithAndWithoutPromptCache) {
  for (bool cache : {false, true}) {
    EngineOptions options;
    options.attn = "hybrid:3:1,window:16";
    options.checkpoint_interval = 8;
    options.prompt_cache = cache;
    Engine engine(*model_, *tokenizer_, options);
    const std::vector<int32_t> prompt = tokenizer_->Encode("Once upon a time, there was a big cat.");
    const Result first = Collect(engine.Submit(Greedy(prompt, 30)));
    std::vector<int32_t> next = prompt;
    next.insert(next.end(), first.done.tokens.begin(), first.done.tokens.end());
    const Result second = Collect(engine.Submit(Greedy(next, 30)));
    EXPECT_EQ(second.done.usage.cached_tokens > 0, cache);
    static std::string expected;
    if (!cache) {
      expected = second.text;
    } else {
      EXPECT_EQ(second.text, expected);
    }
  }
}

TEST_F(EngineTest, RequestsDecodedTogetherGiveWhatEachGivesAlone) {
  // Each step decodes every running sequence in one batched forward; the
  // requests start and finish at different steps (different prompt lengths
  // and max_tokens), some with stop sequences, one cancelled.
  const char* texts[] = {"Once upon a time", "The cat sat on the mat and looked at the bird in the tree.",
                         "A big red ball",   "Lily and Tom went to the park. They saw a dog.",
                         "The sun was hot",  "One day"};
  for (const char* spec : {"hybrid:3:1,window:16", "swa:8,sinks:2", "routed:8", "full,window:8,layer2:heads:1"}) {
    SCOPED_TRACE(spec);
    EngineOptions options;
    options.attn = spec;
    options.checkpoint_interval = 8;
    options.prefill_chunk = 8;
    Engine engine(*model_, *tokenizer_, options);
    auto request = [&](size_t i) {
      GenerationRequest r = Greedy(tokenizer_->Encode(texts[i]), 12 + 7 * int64_t(i));
      if (i == 2) r.stop = {"ball"};
      r.id = std::to_string(i);
      return r;
    };
    if (std::string(spec) == "routed:8") {
      // stories260K has no routers: the requests fail, each with the reason.
      const Result r = Collect(engine.Submit(request(0)));
      EXPECT_EQ(r.done.finish, FinishReason::kError);
      EXPECT_NE(r.done.error.find("has no router for layer 0"), std::string::npos) << r.done.error;
      continue;
    }
    std::vector<Result> alone;
    {
      EngineOptions no_cache = options;  // nothing reused: a plain run of each
      no_cache.prompt_cache = false;
      Engine reference(*model_, *tokenizer_, no_cache);
      for (size_t i = 0; i < std::size(texts); ++i) alone.push_back(Collect(reference.Submit(request(i))));
    }
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (size_t i = 0; i < std::size(texts); ++i) streams.push_back(engine.Submit(request(i)));
    auto cancelled = engine.Submit(Greedy(tokenizer_->Encode("The dog ran"), 400));
    GenerationEvent first;
    ASSERT_TRUE(cancelled->Next(&first, std::chrono::seconds(10)));
    cancelled->Cancel();
    for (size_t i = 0; i < streams.size(); ++i) {
      const Result r = Collect(streams[i]);
      EXPECT_EQ(r.done.finish, alone[i].done.finish) << i;
      EXPECT_EQ(r.done.tokens, alone[i].done.tokens) << i;
      EXPECT_EQ(r.text, alone[i].text) << i;
    }
    EXPECT_EQ(Collect(cancelled).done.finish, FinishReason::kCancelled);
  }
}

TEST_F(EngineTest, KvBudgetRejectsOversizedAndQueuesTheRest) {
  EngineOptions options;
  options.attn = "full";
  options.max_waiting = 1;
  options.prompt_cache = false;
  // Room for one sequence of 256 tokens, not two.
  {
    Engine probe(*model_, *tokenizer_, options);
    options.kv_budget_bytes = probe.ReservationBytes(256) * 3 / 2;
  }
  Engine engine(*model_, *tokenizer_, options);
  const std::vector<int32_t> prompt = tokenizer_->Encode("Once upon a time");
  GenerationRequest huge = Greedy(prompt, 500);
  EXPECT_THROW(engine.Submit(huge), EngineRejected);

  auto a = engine.Submit(Greedy(prompt, 240));
  for (int i = 0; i < 1000 && engine.Stats().running == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto b = engine.Submit(Greedy(prompt, 240));  // waits for a's memory
  try {
    engine.Submit(Greedy(prompt, 10));
    ADD_FAILURE() << "a third request should find the queue full";
  } catch (const EngineRejected& e) {
    EXPECT_NE(std::string(e.what()).find("busy"), std::string::npos) << e.what();
  }
  std::atomic<bool> over{false}, stop{false};
  std::thread watch([&] {
    while (!stop) {
      if (engine.Stats().kv_reserved_bytes > options.kv_budget_bytes) over = true;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  const Result ra = Collect(a), rb = Collect(b);
  stop = true;
  watch.join();
  EXPECT_FALSE(over);
  EXPECT_EQ(ra.done.usage.completion_tokens, 240);
  EXPECT_EQ(rb.done.usage.completion_tokens, 240);
  EXPECT_EQ(ra.text, rb.text);
}

TEST_F(EngineTest, CancelFreesTheSequence) {
  EngineOptions options;
  options.attn = "hybrid:3:1,window:16";
  Engine engine(*model_, *tokenizer_, options);
  auto stream = engine.Submit(Greedy(tokenizer_->Encode("Once upon a time"), 400));
  GenerationEvent ev;
  ASSERT_TRUE(stream->Next(&ev, std::chrono::seconds(10)));
  stream->Cancel();
  const Result r = Collect(stream);
  EXPECT_EQ(r.done.finish, FinishReason::kCancelled);
  EXPECT_LT(r.done.usage.completion_tokens, 400);
  for (int i = 0; i < 100 && engine.Stats().running > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const EngineStats stats = engine.Stats();
  EXPECT_EQ(stats.running, 0);
  EXPECT_EQ(stats.kv_reserved_bytes, 0u);
  EXPECT_EQ(stats.kv_bytes, 0u);
}

// A window plan costs less than full attention in what a request reserves
// and what its prompt-cache entry keeps, so at an equal budget it admits at
// least as many requests. (Checkpoints of window rings every few tokens
// once made a hybrid cost 3.6x full attention.)
TEST_F(EngineTest, WindowPlansAreBilledLessThanFullAttention) {
  const std::vector<int32_t> prompt = tokenizer_->Encode(
      "Once upon a time, there was a little dog named Max. He liked to run in the park with his friend. "
      "One day, the sun was hot and Max was tired, so he sat under a big tree and slept.");
  for (const bool cache : {true, false}) {
    SCOPED_TRACE(cache ? "with a prompt cache" : "without");
    size_t full_reserved = 0, full_cached = 0;
    for (const char* spec :
         {"full", "hybrid:3:1,window:16", "swa:16,sinks:2", "full,window:16,layer0:heads:0,layer2:heads:1+2"}) {
      SCOPED_TRACE(spec);
      EngineOptions options;
      options.attn = spec;
      options.prompt_cache = cache;
      options.checkpoint_interval = 8;  // the finest spacing; the engine widens it
      options.prefill_chunk = 32;
      Engine engine(*model_, *tokenizer_, options);
      if (std::string(spec) != "full") {
        EXPECT_GE(engine.checkpoint_spacing(), 3 * 15);
        EXPECT_EQ(engine.checkpoint_spacing() % 8, 0);
      }
      const size_t reserved = engine.ReservationBytes(int64_t(prompt.size()) + 300);
      const Result r = Collect(engine.Submit(Greedy(prompt, 300)));
      ASSERT_EQ(r.done.finish, FinishReason::kLength) << r.done.error;
      for (int i = 0; i < 100 && engine.Stats().running > 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      const size_t cached = engine.Stats().prompt_cache_bytes;
      if (std::string(spec) == "full") {
        full_reserved = reserved;
        full_cached = cached;
      } else {
        EXPECT_LT(reserved, full_reserved);
        if (cache) {
          EXPECT_LT(cached, full_cached);
        }
      }
      if (!cache) {
        EXPECT_EQ(cached, 0u);
      }
    }
  }
}

// Drain with time to spare: what runs finishes as it would have; nothing new
// is taken.
TEST_F(EngineTest, DrainLetsRunningRequestsFinish) {
  Engine engine(*model_, *tokenizer_, EngineOptions{});
  auto stream = engine.Submit(Greedy(tokenizer_->Encode("Once upon a time"), 12));
  engine.Drain(std::chrono::seconds(30));
  const Result r = Collect(stream);
  EXPECT_EQ(r.done.finish, FinishReason::kLength);
  EXPECT_EQ(r.done.usage.completion_tokens, 12);
  EXPECT_THROW(engine.Submit(Greedy(tokenizer_->Encode("Once"), 2)), EngineStopping);
}

TEST_F(EngineTest, PromptCacheStaysUnderItsCap) {
  EngineOptions options;
  options.attn = "hybrid:3:1,window:16";
  options.checkpoint_interval = 16;
  size_t one_entry = 0;  // what one of the requests leaves in the cache
  {
    Engine alone(*model_, *tokenizer_, options);
    Collect(alone.Submit(Greedy(tokenizer_->Encode("Once upon a time"), 40)));
    for (int i = 0; i < 500 && alone.Stats().prompt_cache_entries == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    one_entry = alone.Stats().prompt_cache_bytes;
  }
  ASSERT_GT(one_entry, 0u);
  options.prompt_cache_bytes = one_entry * 3;  // room for about three of the five
  Engine engine(*model_, *tokenizer_, options);
  for (const char* text : {"Once upon a time", "The cat sat", "A big red ball", "Lily and Tom", "The sun was hot"})
    Collect(engine.Submit(Greedy(tokenizer_->Encode(text), 40)));
  EngineStats stats;
  for (int i = 0; i < 500; ++i) {
    stats = engine.Stats();
    if (stats.running == 0 && stats.requests_done == 5) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_GT(stats.prompt_cache_entries, 0);
  EXPECT_LT(stats.prompt_cache_entries, 5);
  EXPECT_LE(stats.prompt_cache_bytes, options.prompt_cache_bytes);
}

TEST_F(EngineTest, RefusesRequestsThatCanNeverRun) {
  Engine engine(*model_, *tokenizer_, EngineOptions{});
  EXPECT_THROW(engine.Submit(Greedy({}, 4)), std::invalid_argument);
  EXPECT_THROW(engine.Submit(Greedy(std::vector<int32_t>(500, 5), 20)), std::invalid_argument);
  EXPECT_THROW(engine.Submit(Greedy({1, 99999}, 4)), std::invalid_argument);
  GenerationRequest bad = Greedy({1, 2}, 4);
  bad.sampling.top_p = 2;
  EXPECT_THROW(engine.Submit(bad), std::invalid_argument);
}

TEST_F(EngineTest, StopSequencesNeverReachTheClient) {
  const std::vector<int32_t> ids = tokenizer_->Encode("Once upon a time, there was a girl.");
  auto run = [&](std::vector<std::string> stop, bool* stopped) {
    TextStream text(*tokenizer_, std::move(stop));
    std::string out;
    for (int32_t id : ids) {
      out += text.Add(id);
      if (text.stopped()) break;
    }
    *stopped = text.stopped();
    return *stopped ? out : out + text.Finish();
  };
  bool stopped = false;
  EXPECT_EQ(run({}, &stopped), tokenizer_->Decode(ids, true));
  EXPECT_FALSE(stopped);
  EXPECT_EQ(run({"a time"}, &stopped), "Once upon ");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(run({"xyz", "e was"}, &stopped), "Once upon a time, ther");
  EXPECT_EQ(run({"girl!"}, &stopped), tokenizer_->Decode(ids, true));
  EXPECT_FALSE(stopped);
}

}  // namespace
}  // namespace swan
