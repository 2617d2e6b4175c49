#include "serve/engine.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "ops/gemm.h"
#include "serve/text_stream.h"
#include "util/memory.h"
#include "util/threads.h"

namespace swan {

bool RequestStream::Next(GenerationEvent* event, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return false;
  *event = std::move(events_.front());
  events_.pop_front();
  return true;
}

void RequestStream::Push(GenerationEvent event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(event));
  }
  cv_.notify_all();
}

struct Engine::Sequence {
  GenerationRequest request;
  std::shared_ptr<RequestStream> stream = std::make_shared<RequestStream>();
  size_t reserved = 0;  // KV bytes reserved on admission
  std::unique_ptr<Session> session;
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<TextStream> text;
  std::vector<int32_t> tokens;  // prompt, then generated tokens
  int64_t n_processed = 0;      // tokens whose keys and values are in the cache
  int64_t n_reused = 0;         // of those, restored from the prompt cache
  int64_t generated = 0;
  bool has_next = false;                                // tokens.back() sampled, not yet fed back
  bool sampled = false;                                 // Prefill() or Decode() sampled a token this step
  std::vector<float> logits;                            // [vocab] after the last prefill chunk
  std::vector<float> prompt_logits;                     // [vocab] after the prompt (capture_logits)
  std::vector<TokenLogprob> logprobs, prompt_logprobs;  // request.logprobs >= 0
  std::vector<Checkpoint> checkpoints;                  // window layers, ascending position
  std::string error;
  bool done = false;
  std::chrono::steady_clock::time_point admitted;
};

namespace {

double MiB(size_t bytes) { return double(bytes) / (1024.0 * 1024.0); }

double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TokenLogprob LogprobOf(const float* logits, int64_t vocab, int32_t token, int32_t top) {
  const float peak = *std::max_element(logits, logits + vocab);
  double sum = 0;
  for (int64_t v = 0; v < vocab; ++v) sum += std::exp(double(logits[v]) - peak);
  const double log_z = double(peak) + std::log(sum);
  TokenLogprob out;
  out.token = token;
  out.logprob = double(logits[token]) - log_z;
  std::vector<int32_t> ids(static_cast<size_t>(vocab));  // [vocab]
  std::iota(ids.begin(), ids.end(), 0);
  const size_t k = size_t(std::clamp<int64_t>(top, 0, vocab));
  std::partial_sort(ids.begin(), ids.begin() + ptrdiff_t(k), ids.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  for (size_t i = 0; i < k; ++i) out.top.push_back({ids[i], double(logits[ids[i]]) - log_z});
  return out;
}

Engine::Engine(const LanguageModel& model, const Tokenizer& tokenizer, const EngineOptions& options)
    : model_(model),
      tokenizer_(tokenizer),
      options_(options),
      plan_(model.ResolvePlan(options.attn)),
      prompt_cache_(plan_.HasWindowLayers()) {
  // A device's cache cannot be snapshotted from the host: nothing is reused.
  if (!model.CacheOnHost()) options_.prompt_cache = false;
  // The prompt cache and its checkpoints keep keys; a linear layer's state would be lost.
  if (plan_.HasLinearLayers())
    throw std::invalid_argument("attention plan '" + plan_.spec +
                                "': swan serve does not run linear layers yet (swan generate, perplexity and "
                                "compare do)");
  if (options.prefill_chunk <= 0) throw std::invalid_argument("prefill chunk must be positive");
  if (options.checkpoint_interval <= 0) throw std::invalid_argument("checkpoint interval must be positive");
  if (options.max_running <= 0) throw std::invalid_argument("max running sequences must be positive");
  if (options.deterministic) SetThreadInvariantProducts(true);
  kv_options_.type = options.kv_type;
  kv_options_.max_chunk = options.prefill_chunk;
  context_length_ = options.context_length > 0 ? options.context_length : model.config().max_position_embeddings;
  if (context_length_ <= 0) throw std::invalid_argument("the model's config gives no context length; set one");
  kv_options_.max_context = context_length_;
  const KvShape shape = model.kv_shape();
  int64_t widest = 0;
  for (const LayerPlan& l : plan_.layers)
    if (!l.cache_span().full()) {
      // A per-head layer checkpoints the ring of its window heads only.
      const int64_t heads = shape.n_kv_heads - int64_t(l.kind == LayerKind::kPerHead ? l.full_heads.size() : 0);
      const size_t row_bytes = 2 * size_t(heads) * size_t(shape.head_dim) * sizeof(float) + sizeof(int32_t);
      checkpoint_rings_.push_back({l.span.window - 1 + l.span.sinks, row_bytes});
      widest = std::max(widest, checkpoint_rings_.back().rows);
    }
  const int64_t interval = options.checkpoint_interval;
  checkpoint_spacing_ = std::max<int64_t>(1, (3 * widest + interval - 1) / interval) * interval;
  widest_ring_ = widest;
  if (!options_.prompt_cache) checkpoint_rings_.clear();  // no prompt cache: no checkpoints
  stats_.kv_budget_bytes = options.kv_budget_bytes;
  thread_ = std::thread([this] { Loop(); });
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

// The prompt cache gets what running sequences leave of the budget, up to
// its own cap.
size_t Engine::PromptCacheLimit() const {
  const size_t cap = options_.prompt_cache_bytes > 0 ? options_.prompt_cache_bytes : options_.kv_budget_bytes;
  return std::min(cap, options_.kv_budget_bytes - stats_.kv_reserved_bytes);
}

size_t Engine::ReservationBytes(int64_t tokens, int64_t n_prompt) const {
  if (n_prompt < 0) n_prompt = tokens;
  size_t total = 0;
  for (const LayerPlan& l : plan_.layers) total += PlanLayerKvBytesAt(l, model_.kv_shape(), kv_options_, tokens);
  // Checkpoints: every CheckpointSpacing(n_prompt) tokens of the prompt,
  // every checkpoint_spacing_ after it, and three more (before the
  // prompt's last token, where it ends, at the end); each holds the rows
  // its window layers keep.
  const int64_t prompt_spacing = CheckpointSpacing(n_prompt);
  for (const CheckpointRing& ring : checkpoint_rings_) {
    for (int64_t at = prompt_spacing; at <= n_prompt; at += prompt_spacing)
      total += size_t(std::min(at, ring.rows)) * ring.row_bytes;
    for (int64_t at = checkpoint_spacing_; at <= tokens; at += checkpoint_spacing_)
      if (at > n_prompt) total += size_t(std::min(at, ring.rows)) * ring.row_bytes;
    total += 3 * size_t(std::min(tokens, ring.rows)) * ring.row_bytes;
  }
  return total;
}

std::shared_ptr<RequestStream> Engine::Submit(GenerationRequest request) {
  const int64_t n_prompt = int64_t(request.prompt.size());
  if (n_prompt == 0) throw std::invalid_argument("the prompt is empty");
  if (request.max_tokens < 0 || (request.max_tokens == 0 && !request.prompt_logprobs))
    throw std::invalid_argument("max_tokens must be at least 1 (0 only to score a prompt: echo with logprobs)");
  for (int32_t id : request.prompt)
    if (id < 0 || id >= model_.config().vocab_size)
      throw std::invalid_argument("prompt token " + std::to_string(id) + " is outside the vocabulary (" +
                                  std::to_string(model_.config().vocab_size) + ")");
  if (n_prompt + request.max_tokens > context_length_)
    throw std::invalid_argument("the context is " + std::to_string(context_length_) + " tokens, but the prompt (" +
                                std::to_string(n_prompt) + ") plus max_tokens (" + std::to_string(request.max_tokens) +
                                ") need " + std::to_string(n_prompt + request.max_tokens));
  Sampler check(request.sampling);  // throws for bad sampling options
  (void)check;
  auto seq = std::make_unique<Sequence>();
  seq->reserved = ReservationBytes(n_prompt + request.max_tokens, n_prompt);
  if (seq->reserved > options_.kv_budget_bytes) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "the request needs %.2f MiB of KV cache (prompt %lld + max_tokens %lld tokens), more than the "
                  "whole KV budget of %.2f MiB; lower max_tokens or start the server with a larger --kv-budget",
                  MiB(seq->reserved), (long long)n_prompt, (long long)request.max_tokens,
                  MiB(options_.kv_budget_bytes));
    throw EngineRejected(buf);
  }
  seq->request = std::move(request);
  std::shared_ptr<RequestStream> stream = seq->stream;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (draining_) throw EngineStopping("the server is shutting down; it takes no new requests");
    if (int32_t(waiting_.size()) >= options_.max_waiting)
      throw EngineRejected("the server is busy: " + std::to_string(waiting_.size()) +
                           " requests are already waiting for KV memory or a free slot; retry later");
    waiting_.push_back(std::move(seq));
    stats_.waiting = int64_t(waiting_.size());
  }
  wake_.notify_all();
  return stream;
}

void Engine::Drain(std::chrono::milliseconds grace) {
  const auto deadline = std::chrono::steady_clock::now() + grace;
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_ = true;
  }
  auto idle = [this] {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_.running == 0 && waiting_.empty();
  };
  while (!idle()) {
    if (std::chrono::steady_clock::now() >= deadline && !cancel_all_) {
      cancel_all_ = true;
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& seq : waiting_) seq->stream->Cancel();
      wake_.notify_all();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

EngineStats Engine::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  EngineStats stats = stats_;
  stats.draining = draining_;
  return stats;
}

void Engine::Loop() {
  // Kernels of a lone sequence run on this many threads. Small models decode
  // faster on one: a parallel region costs more than their whole layer,
  // and OpenMP's spin-then-sleep barriers are slow on shared cores.
  const int limit = ThreadLimit();
  omp_set_num_threads(options_.sequence_threads > 0 ? std::min(int(options_.sequence_threads), limit) : limit);
  for (;;) {
    std::vector<std::unique_ptr<Sequence>> admitted;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (stopping_) break;
      // Requests whose client left while waiting.
      for (auto it = waiting_.begin(); it != waiting_.end();) {
        if ((*it)->stream->cancelled()) {
          GenerationEvent done;
          done.kind = GenerationEvent::Kind::kDone;
          done.finish = FinishReason::kCancelled;
          (*it)->stream->Push(std::move(done));
          it = waiting_.erase(it);
        } else {
          ++it;
        }
      }
      // First come, first served, while the reservations fit the budget.
      while (!waiting_.empty() && int32_t(running_.size() + admitted.size()) < options_.max_running &&
             stats_.kv_reserved_bytes + waiting_.front()->reserved <= options_.kv_budget_bytes) {
        stats_.kv_reserved_bytes += waiting_.front()->reserved;
        admitted.push_back(std::move(waiting_.front()));
        waiting_.pop_front();
      }
      stats_.waiting = int64_t(waiting_.size());
      if (running_.empty() && admitted.empty()) {
        wake_.wait_for(lock, std::chrono::milliseconds(100));
        continue;
      }
    }
    for (auto& seq : admitted) {
      Sequence& s = *seq;
      s.admitted = std::chrono::steady_clock::now();
      s.session = model_.NewSession(plan_, kv_options_);
      s.sampler = std::make_unique<Sampler>(s.request.sampling);
      s.text = std::make_unique<TextStream>(tokenizer_, s.request.stop);
      s.tokens = s.request.prompt;
      s.logits.resize(size_t(model_.config().vocab_size));
      PrefixMatch match;
      if (options_.prompt_cache && !s.request.prompt_logprobs) {  // the prompt's logprobs need every row
        match = prompt_cache_.Find(s.tokens);
        PromptCache::Restore(match, model_.kv_shape(), s.session->cache);
        if (match.entry)
          for (const Checkpoint& c : match.entry->checkpoints)
            if (c->n_pos <= match.reuse) s.checkpoints.push_back(c);
      }
      s.n_processed = s.n_reused = match.reuse;
      if (options_.verbose)
        std::fprintf(stderr,
                     "[serve] %s: prompt %zu tokens, %lld reused from the prompt cache (%lld shared), %lld "
                     "to process\n",
                     s.request.id.c_str(), s.tokens.size(), (long long)match.reuse, (long long)match.shared,
                     (long long)(int64_t(s.tokens.size()) - match.reuse));
      running_.push_back(std::move(seq));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      prompt_cache_.EvictTo(PromptCacheLimit());
    }
    for (auto& seq : running_)
      if (seq->stream->cancelled() || cancel_all_) Finish(*seq, FinishReason::kCancelled);
    Step();
    running_.erase(std::remove_if(running_.begin(), running_.end(), [](const auto& s) { return s->done; }),
                   running_.end());
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.running = int64_t(running_.size());
      stats_.kv_bytes = 0;
      for (const auto& s : running_) stats_.kv_bytes += s->session->cache.Bytes();
      stats_.prompt_cache_bytes = prompt_cache_.bytes();
      stats_.prompt_cache_entries = int64_t(prompt_cache_.size());
      stats_.prompt_cache_tokens = prompt_cache_.tokens();
      stats_.prompt_cache_checkpoints = prompt_cache_.checkpoints();
    }
    if (running_.empty()) ReturnFreedMemory();  // give freed caches back to the system
  }
  // Shutting down: every request ends as cancelled.
  std::deque<std::unique_ptr<Sequence>> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting.swap(waiting_);
  }
  for (auto& seq : running_) Finish(*seq, FinishReason::kCancelled);
  for (auto& seq : waiting) Finish(*seq, FinishReason::kCancelled);
}

void Engine::Step() {
  std::vector<Sequence*> work, prefill, decode;
  for (auto& s : running_) {
    if (s->done) continue;
    work.push_back(s.get());
    (s->has_next ? decode : prefill).push_back(s.get());
  }
  // Work items: each prefill chunk, and all decode tokens as one batch (one
  // forward reads the weights once for every sequence).
  const int64_t n_items = int64_t(prefill.size()) + (decode.empty() ? 0 : 1);
  auto run = [&](int64_t item) {
    const bool is_decode = item == int64_t(prefill.size());
    try {
      if (is_decode)
        Decode(decode);
      else
        Prefill(*prefill[size_t(item)]);
    } catch (const std::exception& e) {
      if (is_decode)
        for (Sequence* s : decode) s->error = e.what();
      else
        prefill[size_t(item)]->error = e.what();
    }
  };
  // A lone item uses every thread inside its kernels. Several run side by
  // side, one per thread, their kernels' own parallel regions then nested
  // and serial. (No OpenMP construct around a single item at all: libgomp
  // starts fresh threads for every region nested in one, even an inactive
  // one.)
  // Each on the cores that other programs leave idle (util/threads.h).
  const int threads = omp_get_max_threads();  // a lone sequence's
  if (n_items == 1 && decode.size() > 1) {
    // The batch does the work of several sequences: as many threads as they
    // would have had side by side.
    ThreadsForNextStep(int(std::min<int64_t>(int64_t(decode.size()) * threads, ThreadLimit())));
    run(0);
    omp_set_num_threads(threads);
  } else if (n_items == 1) {
    ThreadsForNextStep(threads);
    run(0);
    omp_set_num_threads(threads);
  } else {
    const int side_by_side = IdleThreads(int(std::min<int64_t>(n_items, ThreadLimit())));
#pragma omp parallel for schedule(dynamic, 1) num_threads(side_by_side)
    for (int64_t i = 0; i < n_items; ++i) run(i);
  }
  for (Sequence* s : work) {
    if (!s->error.empty())
      Finish(*s, FinishReason::kError, s->error);
    else if (s->sampled)
      Emit(*s);
    else if (s->request.max_tokens == 0 && s->n_processed == int64_t(s->request.prompt.size()))
      Finish(*s, FinishReason::kLength);  // scoring only: the prompt's logprobs
  }
}

int64_t Engine::CheckpointSpacing(int64_t n_prompt) const {
  const int64_t step = options_.checkpoint_interval, wanted = std::max(n_prompt / 4, widest_ring_);
  return std::min(checkpoint_spacing_, std::max<int64_t>(1, (wanted + step - 1) / step) * step);
}

void Engine::TakeCheckpoint(Sequence& s) {
  if (!plan_.HasWindowLayers() || !options_.prompt_cache) return;
  if (!s.checkpoints.empty() && s.checkpoints.back()->n_pos == s.n_processed) return;
  s.checkpoints.push_back(std::make_shared<const KvSnapshot>(
      TakeSnapshot(s.session->cache, model_.kv_shape(), s.n_processed, SnapshotLayers::kWindow)));
}

// Runs on a worker thread: touches only `s`. One chunk of the prompt,
// ending at a checkpoint position when it can; the first token is sampled
// after the last chunk.
void Engine::Prefill(Sequence& s) {
  s.sampled = false;
  const int64_t n_prompt = int64_t(s.request.prompt.size());
  const int64_t interval = CheckpointSpacing(n_prompt);
  int64_t end = std::min(n_prompt, s.n_processed + options_.prefill_chunk);
  const bool checkpoints = plan_.HasWindowLayers() && options_.prompt_cache;
  if (checkpoints) {
    end = std::min(end, (s.n_processed / interval + 1) * interval);
    // A checkpoint before the last token too: the same prompt again must
    // leave that token to process (its logits), and restores the rest.
    if (s.n_processed < n_prompt - 1) end = std::min(end, n_prompt - 1);
  }
  std::vector<int32_t> pos(size_t(end - s.n_processed));  // [end - n_processed]
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(s.n_processed + int64_t(i));
  const Batch batch{&s.tokens[size_t(s.n_processed)], pos.data(), int64_t(pos.size()), false};
  if (s.request.prompt_logprobs && s.request.logprobs >= 0) {
    // Every row: each prompt token's log-probability given the ones before.
    const int64_t vocab = model_.config().vocab_size, n = int64_t(pos.size());
    std::vector<float> rows(size_t(n * vocab));  // [n, vocab]
    model_.Forward(rows.data(), Batch{batch.tokens, batch.pos, n, true}, *s.session);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t next = s.n_processed + i + 1;
      if (next < n_prompt)
        s.prompt_logprobs.push_back(
            LogprobOf(&rows[size_t(i * vocab)], vocab, s.tokens[size_t(next)], s.request.logprobs));
    }
    std::copy(rows.end() - vocab, rows.end(), s.logits.begin());
  } else {
    model_.Forward(s.logits.data(), batch, *s.session);
  }
  s.n_processed = end;
  if (end % interval == 0 || end >= n_prompt - 1) TakeCheckpoint(s);
  if (end < n_prompt) return;
  if (s.request.capture_logits) s.prompt_logits = s.logits;
  if (s.request.max_tokens == 0) return;  // nothing to generate
  s.tokens.push_back(s.sampler->Sample(s.logits.data(), model_.config().vocab_size));
  if (s.request.logprobs >= 0)
    s.logprobs.push_back(LogprobOf(s.logits.data(), model_.config().vocab_size, s.tokens.back(), s.request.logprobs));
  s.has_next = true;
  s.sampled = true;
}

// Runs on a worker thread: touches only `seqs`. Feeds each sequence's last
// sampled token through one batched forward, then samples the next.
void Engine::Decode(const std::vector<Sequence*>& seqs) {
  const int64_t n = int64_t(seqs.size()), vocab = model_.config().vocab_size;
  std::vector<int32_t> pos(seqs.size());                 // [n] each sequence's next position
  std::vector<SequenceStep> steps(seqs.size());          // [n] one token each
  std::vector<float> logits(size_t(n) * size_t(vocab));  // [n, vocab]
  for (size_t i = 0; i < seqs.size(); ++i) {
    Sequence& s = *seqs[i];
    s.sampled = false;
    pos[i] = int32_t(s.n_processed);
    steps[i] = SequenceStep{Batch{&s.tokens.back(), &pos[i], 1, false}, s.session.get()};
  }
  try {
    // --deterministic: in groups whose rows each compute as they would
    // alone, so a request's answer does not depend on who else is asking.
    const int64_t group = options_.deterministic ? InvariantBatchSteps() : n;
    for (int64_t first = 0; first < n; first += group) {
      const std::vector<SequenceStep> part(steps.begin() + first, steps.begin() + std::min(n, first + group));
      model_.ForwardBatch(&logits[size_t(first * vocab)], part);
    }
  } catch (const std::exception&) {
    // Find the sequence that failed: each alone again. (Rewriting a
    // position's keys and values leaves a cache as it was.)
    for (int64_t i = 0; i < n; ++i) {
      try {
        model_.Forward(&logits[size_t(i * vocab)], steps[size_t(i)].batch, *seqs[size_t(i)]->session);
      } catch (const std::exception& e) {
        seqs[size_t(i)]->error = e.what();
      }
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    Sequence& s = *seqs[size_t(i)];
    if (!s.error.empty()) continue;
    try {
      ++s.n_processed;
      s.has_next = false;
      if (s.n_processed % checkpoint_spacing_ == 0) TakeCheckpoint(s);
      s.tokens.push_back(s.sampler->Sample(&logits[size_t(i * vocab)], vocab));
      if (s.request.logprobs >= 0)
        s.logprobs.push_back(LogprobOf(&logits[size_t(i * vocab)], vocab, s.tokens.back(), s.request.logprobs));
      s.has_next = true;
      s.sampled = true;
    } catch (const std::exception& e) {
      s.error = e.what();
    }
  }
}

void Engine::Emit(Sequence& s) {
  const int32_t id = s.tokens.back();
  ++s.generated;
  const std::vector<int32_t>& eos = model_.config().eos_token_ids;
  const bool is_eos = std::find(eos.begin(), eos.end(), id) != eos.end() || id == tokenizer_.eos_id();
  if (is_eos && !s.request.ignore_eos) {
    Finish(s, FinishReason::kStop);
    return;
  }
  std::string piece = s.text->Add(id);
  if (!piece.empty()) {
    GenerationEvent ev;
    ev.text = std::move(piece);
    s.stream->Push(std::move(ev));
  }
  if (s.text->stopped())
    Finish(s, FinishReason::kStop);
  else if (s.generated >= s.request.max_tokens || int64_t(s.tokens.size()) >= context_length_)
    Finish(s, FinishReason::kLength);
}

void Engine::Finish(Sequence& s, FinishReason reason, const std::string& error) {
  if (s.done) return;
  s.done = true;
  if ((reason == FinishReason::kStop || reason == FinishReason::kLength) && s.text) {
    std::string rest = s.text->Finish();
    if (!rest.empty()) {
      GenerationEvent ev;
      ev.text = std::move(rest);
      s.stream->Push(std::move(ev));
    }
  }
  // Keep what was computed for later prompts that share its prefix.
  if (options_.prompt_cache && s.session && reason != FinishReason::kError && s.n_processed > 0) {
    try {
      PromptCacheEntry entry;
      entry.tokens.assign(s.tokens.begin(), s.tokens.begin() + s.n_processed);
      entry.full_layers = TakeSnapshot(s.session->cache, model_.kv_shape(), s.n_processed, SnapshotLayers::kFull);
      TakeCheckpoint(s);
      entry.checkpoints = s.checkpoints;
      prompt_cache_.Insert(std::move(entry));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "[serve] %s: not cached: %s\n", s.request.id.c_str(), e.what());
    }
  }
  GenerationEvent done;
  done.kind = GenerationEvent::Kind::kDone;
  done.finish = reason;
  done.error = error;
  done.usage.prompt_tokens = int64_t(s.request.prompt.size());
  done.usage.completion_tokens = s.generated;
  done.usage.cached_tokens = s.n_reused;
  done.logits = std::move(s.prompt_logits);
  done.tokens.assign(s.tokens.begin() + std::min(s.tokens.size(), s.request.prompt.size()), s.tokens.end());
  if (s.logprobs.size() > done.tokens.size()) s.logprobs.resize(done.tokens.size());
  done.logprobs = std::move(s.logprobs);
  done.prompt_logprobs = std::move(s.prompt_logprobs);
  const double ms = s.session ? MsSince(s.admitted) : 0.0;
  if (options_.verbose)
    std::fprintf(stderr, "[serve] %s: %s after %lld tokens, %.1f ms%s%s\n", s.request.id.c_str(),
                 FinishReasonName(reason), (long long)s.generated, ms, error.empty() ? "" : ": ", error.c_str());
  s.session.reset();
  s.checkpoints.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (s.sampler) {  // it was admitted
      stats_.kv_reserved_bytes -= s.reserved;
      ++stats_.requests_done;
      stats_.tokens_generated += s.generated;
      stats_.prompt_tokens += done.usage.prompt_tokens;
      stats_.prompt_tokens_reused += s.n_reused;
    }
    prompt_cache_.EvictTo(PromptCacheLimit());
  }
  s.stream->Push(std::move(done));
}

}  // namespace swan
