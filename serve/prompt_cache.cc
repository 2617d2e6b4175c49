#include "serve/prompt_cache.h"

#include <algorithm>

namespace swan {

size_t PromptCacheEntry::Bytes() const {
  size_t total = full_layers.Bytes() + tokens.size() * sizeof(int32_t);
  for (const Checkpoint& c : checkpoints) total += c->Bytes();
  return total;
}

PrefixMatch PromptCache::Find(const std::vector<int32_t>& prompt) {
  PrefixMatch best;
  auto best_it = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const std::vector<int32_t>& t = it->tokens;
    const int64_t shared = std::mismatch(t.begin(), t.end(), prompt.begin(), prompt.end()).first - t.begin();
    const int64_t limit = std::min<int64_t>(shared, int64_t(prompt.size()) - 1);
    PrefixMatch m;
    m.shared = shared;
    m.entry = &*it;
    if (!has_window_layers_) {
      m.reuse = std::max<int64_t>(limit, 0);
    } else {
      for (const Checkpoint& c : it->checkpoints)
        if (c->n_pos <= limit && c->n_pos > m.reuse) {
          m.reuse = c->n_pos;
          m.checkpoint = c;
        }
    }
    if (m.reuse > best.reuse) {
      best = m;
      best_it = it;
    }
  }
  if (best_it != entries_.end()) entries_.splice(entries_.begin(), entries_, best_it);  // mark as used
  return best;
}

void PromptCache::Restore(const PrefixMatch& match, const KvShape& shape, KvCache& cache) {
  if (match.reuse == 0) return;
  RestoreSnapshot(match.entry->full_layers, shape, cache, match.reuse);
  if (match.checkpoint) RestoreSnapshot(*match.checkpoint, shape, cache);
}

void PromptCache::Insert(PromptCacheEntry entry) {
  entries_.remove_if([&](const PromptCacheEntry& e) {
    return e.tokens.size() <= entry.tokens.size() && std::equal(e.tokens.begin(), e.tokens.end(), entry.tokens.begin());
  });
  entries_.push_front(std::move(entry));
}

void PromptCache::EvictTo(size_t limit) {
  while (!entries_.empty() && bytes() > limit) entries_.pop_back();
}

size_t PromptCache::bytes() const {
  size_t total = 0;
  for (const PromptCacheEntry& e : entries_) total += e.Bytes();
  return total;
}

int64_t PromptCache::tokens() const {
  int64_t total = 0;
  for (const PromptCacheEntry& e : entries_) total += int64_t(e.tokens.size());
  return total;
}

int64_t PromptCache::checkpoints() const {
  int64_t total = 0;
  for (const PromptCacheEntry& e : entries_) total += int64_t(e.checkpoints.size());
  return total;
}

}  // namespace swan
