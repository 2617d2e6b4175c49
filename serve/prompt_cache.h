// Prompt caching that works with sliding windows.
//
// When a request finishes, its KV state goes into the cache: the full
// layers' rows for every token it processed, and checkpoints of the window
// layers (their last W - 1 rows plus sinks) taken at chosen positions while
// it ran. A new prompt that shares a prefix of any length with a cached
// entry restores the nearest checkpoint at or before the shared length (the
// full layers are simply cut there) and processes only the rest. A model
// without window layers needs no checkpoints: any shared length restores.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <vector>

#include "kv/kv_snapshot.h"

namespace swan {

using Checkpoint = std::shared_ptr<const KvSnapshot>;  // window layers only

struct PromptCacheEntry {
  std::vector<int32_t> tokens;          // [n] the tokens whose KV it holds
  KvSnapshot full_layers;               // full layers at n (no window layers)
  std::vector<Checkpoint> checkpoints;  // window layers, ascending n_pos <= n
  size_t Bytes() const;
};

struct PrefixMatch {
  int64_t reuse = 0;   // tokens restored; 0 = nothing to reuse
  int64_t shared = 0;  // tokens the prompt shares with the entry
  const PromptCacheEntry* entry = nullptr;
  Checkpoint checkpoint;  // at `reuse` (null without window layers)
};

class PromptCache {
 public:
  explicit PromptCache(bool has_window_layers) : has_window_layers_(has_window_layers) {}

  // The best prefix of `prompt` to restore. At least the prompt's last
  // token is left to process, since its logits are needed.
  PrefixMatch Find(const std::vector<int32_t>& prompt);
  // Writes a match into `cache` (which must be empty).
  static void Restore(const PrefixMatch& match, const KvShape& shape, KvCache& cache);

  // Adds an entry; entries whose tokens are a prefix of its tokens go.
  void Insert(PromptCacheEntry entry);
  // Drops least recently used entries until bytes() <= limit.
  void EvictTo(size_t limit);
  void Clear() { entries_.clear(); }

  size_t bytes() const;
  size_t size() const { return entries_.size(); }
  int64_t tokens() const;       // the entries' tokens, all together
  int64_t checkpoints() const;  // the entries' window-layer checkpoints

 private:
  bool has_window_layers_;
  std::list<PromptCacheEntry> entries_;  // most recently used first
};

}  // namespace swan
