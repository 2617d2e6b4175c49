// The serving engine: many generation requests over one model at once.
//
// A scheduler thread runs steps. Each step admits waiting requests while
// their KV memory fits the budget, then advances every running sequence by
// one unit of work (a prefill chunk, or one decode token), and streams the
// new text to each request (continuous batching at the granularity of
// steps: new requests join between steps, finished ones leave at once).
// The decode tokens of all sequences go through one batched forward
// (LanguageModel::ForwardBatch: the weights are read once per step, not
// once per sequence); prefill chunks run per sequence, side by side with
// the decode batch over the CPU threads.
//
// KV memory: each running sequence reserves, on admission, what its cache
// can grow to (prompt + max_tokens) plus its window checkpoints. Admission
// never takes memory from running sequences; it only evicts prompt-cache
// entries. A request larger than the whole budget, or arriving when the
// queue is full, is rejected (HTTP 429 with the reason).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "model/model.h"
#include "model/sampler.h"
#include "serve/prompt_cache.h"
#include "tokenizer/tokenizer.h"

namespace swan {

struct EngineOptions {
  std::string attn;  // attention plan spec ("" = the model's own)
  size_t kv_budget_bytes = size_t(1) << 30;
  int32_t max_running = 32;          // sequences advanced together
  int32_t max_waiting = 256;         // queued requests before 429
  int32_t checkpoint_interval = 64;  // tokens between window-layer checkpoints
  int32_t prefill_chunk = 256;       // most prompt tokens per sequence per step
  KvType kv_type = KvType::kF32;
  int64_t context_length = 0;  // 0: the model's max_position_embeddings
  bool prompt_cache = true;
  size_t prompt_cache_bytes = 0;  // cap of the prompt cache; 0 = the whole budget
  int32_t sequence_threads = 1;   // threads one sequence's kernels use; 0 = all
                                  // (prefills also run side by side, one per core;
                                  // a decode batch of n sequences alone gets n times
                                  // as many threads, up to every core)
  bool verbose = false;           // one line per request on stderr
  // Batch invariance at any load: decode batches run in groups of
  // InvariantBatchSteps() sequences (model/model.h), so every request's
  // logits are bit for bit what it gets alone. Without it they are so up
  // to that many sequences decoding together; past it the batch's product
  // rounds differently (docs/serving.md, "Batch invariance", has the cost).
  // It also turns on ops/gemm.h's SetThreadInvariantProducts for the
  // process, so that answers do not depend on the threads a busy machine
  // leaves for a step either.
  bool deterministic = false;
};

struct GenerationRequest {
  std::vector<int32_t> prompt;
  int64_t max_tokens = 16;
  SamplerOptions sampling;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  std::string id;               // names the request in logs
  bool capture_logits = false;  // tests: return the prompt's last logits
  // >= 0: each generated token's log-probability under the model (the raw
  // distribution, before temperature and filters) and the `logprobs` most
  // likely alternatives; -1: none.
  int32_t logprobs = -1;
  // With logprobs >= 0: the prompt's tokens too (each given the ones
  // before; the first has none). The prompt is then computed in full, not
  // restored from the prompt cache.
  bool prompt_logprobs = false;
};

// One position's log-probabilities (natural log).
struct TokenLogprob {
  int32_t token = 0;
  double logprob = 0;
  std::vector<std::pair<int32_t, double>> top;  // the most likely tokens, most likely first
};

enum class FinishReason { kStop, kLength, kCancelled, kError };
const char* FinishReasonName(FinishReason reason);

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens restored from the prompt cache
};

struct GenerationEvent {
  enum class Kind { kText, kDone };
  Kind kind = Kind::kText;
  std::string text;                           // kText: the next piece
  FinishReason finish = FinishReason::kStop;  // kDone
  Usage usage;                                // kDone
  std::string error;                          // kDone with kError
  std::vector<int32_t> tokens;                // kDone: the generated token ids
  std::vector<float> logits;                  // kDone with capture_logits: [vocab]
  std::vector<TokenLogprob> logprobs;         // kDone with logprobs: [generated tokens]
  std::vector<TokenLogprob> prompt_logprobs;  // kDone with prompt_logprobs: [prompt tokens - 1], from the 2nd
};

// The log-probability of `token` under `logits` [vocab] and the `top` most
// likely tokens.
TokenLogprob LogprobOf(const float* logits, int64_t vocab, int32_t token, int32_t top);

// What one request reads from the engine; shared by the engine thread and
// the request's consumer.
class RequestStream {
 public:
  // Waits up to `timeout` for the next event; false when none came.
  bool Next(GenerationEvent* event, std::chrono::milliseconds timeout);
  // The consumer went away: the engine frees the sequence at its next step.
  void Cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }
  void Push(GenerationEvent event);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<GenerationEvent> events_;
  std::atomic<bool> cancelled_{false};
};

// A request the engine refuses: HTTP 429 (busy / too large for the budget).
class EngineRejected : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A request that arrives while the engine drains for shutdown: HTTP 503.
class EngineStopping : public EngineRejected {
 public:
  using EngineRejected::EngineRejected;
};

struct EngineStats {
  int64_t running = 0, waiting = 0;
  size_t kv_reserved_bytes = 0;  // reservations of running sequences
  size_t kv_bytes = 0;           // held now by running sequences' caches
  size_t prompt_cache_bytes = 0;
  int64_t prompt_cache_entries = 0;
  int64_t prompt_cache_tokens = 0, prompt_cache_checkpoints = 0;
  size_t kv_budget_bytes = 0;
  int64_t requests_done = 0, tokens_generated = 0, prompt_tokens = 0, prompt_tokens_reused = 0;
  bool draining = false;  // Drain was called: new requests are refused
};

class Engine {
 public:
  // `model` and `tokenizer` must outlive the engine. Starts the scheduler.
  Engine(const LanguageModel& model, const Tokenizer& tokenizer, const EngineOptions& options);
  ~Engine();  // cancels everything and joins the scheduler

  // Queues a request. Throws std::invalid_argument for a request that can
  // never run (empty prompt, prompt + max_tokens past the context, bad
  // token ids) and EngineRejected for one that cannot run now.
  std::shared_ptr<RequestStream> Submit(GenerationRequest request);

  // Shutdown: refuses new requests (EngineStopping), lets running and
  // waiting ones finish for up to `grace`, then ends the rest as cancelled,
  // so that every stream still gets its final event. Returns once nothing
  // runs or waits.
  void Drain(std::chrono::milliseconds grace);

  EngineStats Stats() const;
  int64_t context_length() const { return context_length_; }
  const AttentionPlan& plan() const { return plan_; }
  // KV bytes a sequence of `tokens` tokens reserves: its cache, and with a
  // prompt cache, the window-layer checkpoints it takes on the way.
  // n_prompt: the prompt's part of `tokens` (default: all of them).
  size_t ReservationBytes(int64_t tokens, int64_t n_prompt = -1) const;
  // Tokens between a sequence's window-layer checkpoints past its prompt:
  // the checkpoint_interval option, raised to a multiple of it that is at
  // least three times the largest window span (W - 1 + S), so that
  // checkpoints hold at most a third of what those layers would hold under
  // full attention (and a prompt that leaves a cached one re-reads at most
  // that many tokens).
  int64_t checkpoint_spacing() const { return checkpoint_spacing_; }
  // The spacing inside a prompt of n tokens: a quarter of it, at least the
  // largest window span and at most checkpoint_spacing(), in steps of the
  // interval; so a short prompt gets checkpoints too, and they never hold
  // more rows than full attention would. A checkpoint is also taken before
  // the prompt's last token, so that the same prompt again reuses all but
  // that token.
  int64_t CheckpointSpacing(int64_t n_prompt) const;

 private:
  struct Sequence;
  void Loop();
  void Admit(std::unique_lock<std::mutex>& lock);
  void Step();
  void Prefill(Sequence& seq);
  void Decode(const std::vector<Sequence*>& seqs);
  void Emit(Sequence& seq);
  void Finish(Sequence& seq, FinishReason reason, const std::string& error = {});
  void TakeCheckpoint(Sequence& seq);
  size_t PromptCacheLimit() const;  // with mu_ held

  const LanguageModel& model_;
  const Tokenizer& tokenizer_;
  EngineOptions options_;
  AttentionPlan plan_;
  KvCacheOptions kv_options_;
  int64_t context_length_ = 0;
  int64_t checkpoint_spacing_ = 0;
  int64_t widest_ring_ = 0;  // rows of the largest window span (W - 1 + S)
  // Per ring (window layers, and per-head layers' window heads): the rows a
  // checkpoint keeps at most (W - 1 + S), and one row of its heads' K and V
  // as float32 with its position.
  struct CheckpointRing {
    int64_t rows = 0;
    size_t row_bytes = 0;
  };
  std::vector<CheckpointRing> checkpoint_rings_;  // [rings]

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Sequence>> waiting_;  // guarded by mu_
  bool stopping_ = false;                          // guarded by mu_
  bool draining_ = false;                          // guarded by mu_: Submit refuses
  std::atomic<bool> cancel_all_{false};            // Drain's grace is over
  EngineStats stats_;                              // guarded by mu_

  // Owned by the scheduler thread.
  std::vector<std::unique_ptr<Sequence>> running_;
  PromptCache prompt_cache_;
  std::thread thread_;
};

}  // namespace swan
