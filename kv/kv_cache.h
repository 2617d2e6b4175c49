// KV caches built from an attention plan, one policy per layer (docs/design.md §3).
//
// * Window layers (span W, S sinks) keep S pinned sink slots plus a ring of
//   W - 1 + max_chunk slots: enough for the oldest query of a chunk to see
//   its W - 1 predecessors while the chunk's own keys are written. Their
//   memory stops growing once the ring is full.
// * Per-head layers keep their full KV heads like a full layer and their
//   other heads like a window layer, each group in a store of its own.
// * Full layers keep every position: row = position, in one buffer that
//   grows in pages of `page_rows` rows. Its address space is reserved for
//   max_context rows up front, so it grows in place (never copied) and
//   only the pages written take memory.
// * Linear layers (attention/linear_attention.h) keep no keys: a state of
//   KV · P · (D + 1) floats, whatever the context; with a window W
//   (LoLCATs' hybrid) also a ring like a window layer's and the φk and v of
//   the W - 1 (+ a chunk) tokens not yet in the state.
// Slot metadata (the position held in each slot, -1 = empty) lives apart
// from the K/V storage. The kernel reads a layer through a KvView; rows of
// a ring are not in position order, and stale rows are masked by position.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attention/attention.h"
#include "attention/head_groups.h"
#include "attention/linear_attention.h"
#include "attention/span.h"
#include "kv/reserved_buffer.h"

namespace swan {

struct KvCacheOptions {
  KvType type = KvType::kF32;  // storage of K and V
  int32_t max_chunk = 512;     // most tokens written in one step (a prefill chunk)
  int32_t page_rows = 256;     // growth step of every layer's storage
  int64_t max_context = 0;     // positions a full layer can hold; 0 = 1 << 20
  // false: window layers keep every position like full layers (tests use it
  // as a reference for the ring).
  bool ring_for_window_layers = true;
};

struct KvShape {
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t linear_phi_dim = 0;  // P of the model's linear layers' feature maps; 0 = none
};

// Which position each slot holds.
class SlotTable {
 public:
  // A ring when `ring_rows` > 0: positions < sinks get slot = position, the
  // others slot sinks + (position - sinks) mod ring_rows. Otherwise slot =
  // position.
  SlotTable(int32_t sinks, int64_t ring_rows) : sinks_(sinks), ring_rows_(ring_rows) {}

  int64_t SlotOf(int64_t pos) const {
    if (ring_rows_ == 0 || pos < sinks_) return pos;
    return sinks_ + (pos - sinks_) % ring_rows_;
  }
  // Slots the table can ever use; 0 = unbounded.
  int64_t max_slots() const { return ring_rows_ == 0 ? 0 : sinks_ + ring_rows_; }

  std::vector<int32_t>& pos() { return pos_; }
  const std::vector<int32_t>& pos() const { return pos_; }

 private:
  int32_t sinks_;
  int64_t ring_rows_;
  std::vector<int32_t> pos_;  // [n_slots] position in each slot, -1 = empty
};

// The storage of a group of KV heads that share one span: a ring or pages.
class KvStore {
 public:
  // `heads`: the layer's KV heads this store holds, ascending.
  KvStore(const Span& span, std::vector<int32_t> heads, const KvShape& shape, const KvCacheOptions& options);
  KvStore(KvStore&&) = default;
  KvStore& operator=(KvStore&&) = default;

  // Stores `n` tokens at positions pos[n] (>= 0).
  //   k, v [n, heads.size(), head_dim] float32, or with src_heads > 0
  //   [n, src_heads, head_dim]: a layer's rows, of which the store takes its heads
  void Write(const float* k, const float* v, const int32_t* pos, int64_t n, int32_t src_heads = 0);
  KvView View() const;  // [n_slots, heads.size(), head_dim]; unused slots at position -1
  bool is_ring() const { return slots_.max_slots() > 0; }
  const Span& span() const { return span_; }
  const std::vector<int32_t>& heads() const { return heads_; }
  int64_t n_slots() const { return int64_t(slots_.pos().size()); }
  size_t Bytes() const;
  void Clear();
  KvStore Copy() const;

 private:
  void GrowTo(int64_t n_slots);

  Span span_;
  std::vector<int32_t> heads_;
  KvShape shape_;  // head_dim, and n_kv_heads = heads_.size()
  KvCacheOptions options_;
  SlotTable slots_;
  size_t row_bytes_;   // KvBytes of heads_.size() * head_dim values
  int64_t max_slots_;  // slots the storage is reserved for
  ReservedBuffer k_;   // [max_slots, heads.size(), head_dim] of options_.type
  ReservedBuffer v_;   // [max_slots, heads.size(), head_dim] of options_.type
};

// One layer's cache: one store for every KV head, or for a per-head layer
// (docs/design.md §2) two: its full heads in pages and its window heads in a
// ring, so that its memory is (full heads / KV heads) of a full layer's plus
// the ring.
class LayerKvCache {
 public:
  LayerKvCache(const Span& span, const KvShape& shape, const KvCacheOptions& options);
  // A per-head layer: the KV heads in `full_heads` keep every position, the
  // others `span` (a window). Throws std::invalid_argument for a full span
  // or a head out of range or repeated.
  LayerKvCache(const Span& span, const std::vector<int32_t>& full_heads, const KvShape& shape,
               const KvCacheOptions& options);

  LayerKvCache(LayerKvCache&&) = default;
  LayerKvCache& operator=(LayerKvCache&&) = default;
  // A linear layer's: its state (shape.linear_phi_dim must be set), and
  // with a window (LoLCATs' hybrid) a ring for the window's keys.
  static LayerKvCache Linear(const Span& window, const KvShape& shape, const KvCacheOptions& options);
  bool linear() const { return linear_; }
  // The linear layer's state, which the attention updates as tokens come.
  // Throws std::logic_error on other layers.
  LinearState& linear_state();

  // Stores the keys and values of `n` tokens at positions pos[n] (>= 0).
  //   k, v [n, n_kv_heads, head_dim] float32
  // Throws std::invalid_argument when n exceeds max_chunk on a ring, and
  // std::out_of_range for a position past max_context on a full layer.
  void Write(const float* k, const float* v, const int32_t* pos, int64_t n);

  // (A linear layer without a window stores nothing: its attention adds the
  // keys to its state.)
  // Every allocated slot of a layer with one store; unused slots have
  // position -1. Throws std::logic_error on a per-head or linear layer.
  KvView View() const;
  // The layer's head groups with their views (attention/head_groups.h).
  std::vector<HeadGroup> Groups() const;

  bool per_head() const { return per_head_; }
  const std::vector<int32_t>& full_heads() const { return full_heads_; }  // per-head layers
  int32_t n_stores() const { return int32_t(stores_.size()); }
  KvStore& store(int32_t i) { return stores_[size_t(i)]; }
  const KvStore& store(int32_t i) const { return stores_[size_t(i)]; }

  bool is_ring() const;  // some store is a ring
  // The layer's span: the window of a per-head layer's window heads.
  const Span& span() const { return span_; }
  int64_t n_slots() const;  // slots of every store
  size_t Bytes() const;     // storage and metadata held now
  // Forgets every position and returns the memory.
  void Clear();
  // A deep copy (a checkpoint): the rows written so far and their positions.
  LayerKvCache Copy() const;

 private:
  LayerKvCache() = default;
  Span span_;
  KvShape shape_;
  bool per_head_ = false;
  std::vector<int32_t> full_heads_;  // [n_full] per-head layers only
  std::vector<KvStore> stores_;      // [1 or 2]; none on a linear layer
  bool linear_ = false;
  LinearState state_;  // linear layers only
};

// The caches of all layers of one sequence.
class KvCache {
 public:
  // One layer per span; `shape` is the same for every layer.
  KvCache(const std::vector<Span>& spans, const KvShape& shape, const KvCacheOptions& options);
  // The same with per-head layers: full_heads [n_layers], a non-empty list
  // makes that layer per-head (its span the window of the other heads).
  KvCache(const std::vector<Span>& spans, const std::vector<std::vector<int32_t>>& full_heads, const KvShape& shape,
          const KvCacheOptions& options);
  // ... and linear layers: linear [n_layers], true = that layer keeps a state.
  KvCache(const std::vector<Span>& spans, const std::vector<std::vector<int32_t>>& full_heads,
          const std::vector<bool>& linear, const KvShape& shape, const KvCacheOptions& options);

  LayerKvCache& layer(int32_t i) { return layers_[size_t(i)]; }
  const LayerKvCache& layer(int32_t i) const { return layers_[size_t(i)]; }
  int32_t n_layers() const { return int32_t(layers_.size()); }
  const KvCacheOptions& options() const { return options_; }
  size_t Bytes() const;
  void Clear();
  // A deep copy of every layer: checkpoint a prompt prefix, and later
  // `cache = checkpoint.Copy()` to continue from it again.
  KvCache Copy() const;

 private:
  KvCache() = default;
  KvCacheOptions options_;
  std::vector<LayerKvCache> layers_;
};

// "f32", "bf16" or "q8_0"; throws std::invalid_argument for anything else.
KvType KvTypeFromString(const std::string& name);
// "f32", "bf16", "f16" or "q8_0".
const char* KvTypeName(KvType type);

// The bytes one layer's cache holds after `n_ctx` tokens, computed without
// allocating (what `swan inspect` reports).
size_t LayerKvBytesAt(const Span& span, const KvShape& shape, const KvCacheOptions& options, int64_t n_ctx);
// A per-head layer's: its full heads' pages plus its window heads' ring.
size_t LayerKvBytesAt(const Span& span, const std::vector<int32_t>& full_heads, const KvShape& shape,
                      const KvCacheOptions& options, int64_t n_ctx);

}  // namespace swan
