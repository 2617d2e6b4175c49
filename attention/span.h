// Which keys a query sees: the one window convention of swan (docs/design.md §1).
//
//   query at position q sees key at position k  iff
//       k <= q  and  ( window == 0  or  k >= WindowStart(q)  or  k < sinks )
//
// A sliding window starts at q - window + 1 (q - k < window): `window`
// counts keys including the query itself (window 1: only itself). A block
// window (Llama 4's chunked attention; staggered when layers' blocks start
// at different offsets) starts at the first position of q's block: blocks
// of `window` positions start where p = offset (mod window), so a query sees
// 1 to `window` keys and never more than a sliding window would.
// window 0 means unbounded (full causal attention). `sinks` leading tokens
// (StreamingLLM attention sinks) stay visible at any distance.
// Positions are 0-based absolute token positions; a negative position marks
// an empty cache slot, which no query sees.
#pragma once

#include <cstdint>
#include <string>

namespace swan {

struct Span {
  int32_t window = 0;   // keys visible behind and including the query; 0 = all
  int32_t sinks = 0;    // leading positions always visible
  bool blocks = false;  // a block window instead of a sliding one
  int32_t offset = 0;   // blocks: where blocks start, in [0, window)

  bool full() const { return window == 0; }
  bool operator==(const Span&) const = default;
  // "full", "window 1024", "window 1024 + 4 sinks", "blocks of 64 from 16"
  std::string ToString() const;
};

// Throws std::invalid_argument for a negative window or sink count, for
// sinks without a window (sinks only mean something when a window hides
// keys), and for blocks without a window or with an offset outside it.
void ValidateSpan(const Span& span);

// The first non-sink key position a query at `q_pos` sees: keys at
// [WindowStart(q), q] plus the sinks [0, sinks). Never decreases with q,
// which the block skipping of the kernels relies on.
inline int64_t WindowStart(const Span& span, int64_t q_pos) {
  if (span.window == 0) return 0;
  int64_t start;
  if (span.blocks) {
    const int64_t into_block = (q_pos - span.offset) % span.window;
    start = q_pos - (into_block < 0 ? into_block + span.window : into_block);
  } else {
    start = q_pos - span.window + 1;
  }
  return start < 0 ? 0 : start;
}

inline bool Sees(const Span& span, int64_t q_pos, int64_t k_pos) {
  if (k_pos < 0 || k_pos > q_pos) return false;
  if (span.window == 0 || k_pos < span.sinks) return true;
  return span.blocks ? k_pos >= WindowStart(span, q_pos) : q_pos - k_pos < span.window;
}

// --- Conversions from the spellings of other stacks -------------------------
// Each is the only place where that stack's arithmetic appears.

// FlashAttention `window_size=(left, right)`: a query at q sees keys in
// [q - left, q + right], both ends inclusive; -1 means unbounded on that
// side. swan spans are causal, so `right` must be 0 (or -1 together with a
// causal mask, which FlashAttention clips to 0; pass causal=true for that).
// So left = L sees L + 1 keys: window = L + 1.
Span SpanFromFlashAttention(int32_t left, int32_t right, bool causal = true);

// llama.cpp `n_swa` with LLAMA_SWA_TYPE_STANDARD: llama_hparams::is_masked_swa
// masks a key at p0 for a query at p1 when `p1 - p0 >= n_swa`, so the query
// sees q - k < n_swa: window = n_swa. n_swa = 0 means no window.
Span SpanFromLlamaCppSwa(int32_t n_swa);

// Hugging Face `sliding_window` from config.json. In transformers'
// masking_utils.sliding_window_overlay a key is kept when
// `kv_idx > q_idx - sliding_window`, i.e. q - k < sliding_window, so
// window = sliding_window (the query itself included). The same holds for
// every architecture that uses it:
//   * Mistral (MistralConfig.sliding_window = 4096, all layers);
//   * Qwen2 (only when use_sliding_window is true, and only for layers with
//     index >= max_window_layers; otherwise full);
//   * Gemma 2 (sliding_window = 4096 on every other layer; the original
//     gemma_pytorch masks `k <= q - sliding_window`, the same set);
//   * Gemma 3 (sliding_window = 1024 on the local layers, 5 local : 1 global);
//   * gpt-oss (sliding_window = 128 on every other layer; its reference
//     implementation masks tril(-inf, diagonal=-sliding_window), the same set).
// Older transformers flash-attention paths passed
// window_size=(sliding_window, sliding_window), one key more than eager
// attention; that was a bug, not the meaning of the field.
// A value <= 0 (or absent: pass 0) means no window.
Span SpanFromHfSlidingWindow(int32_t sliding_window);

}  // namespace swan
