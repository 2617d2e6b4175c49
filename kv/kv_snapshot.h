// Saving and restoring KV cache state (docs/design.md §3: "cache state can be
// checkpointed and restored"), so a server can reuse a prompt prefix
// without reprocessing it, window layers included.
//
// A snapshot taken at `n_pos` holds, per layer, the rows a query at any
// position >= n_pos can still see:
//   * window layers (W, S sinks): the sinks and the last W - 1 positions
//     before n_pos (a ring checkpoint is at most W - 1 + S rows);
//   * full layers: every position in [0, n_pos).
// Restoring clears the layer and writes the rows back by position, so the
// cache behaves exactly as if it had just processed tokens [0, n_pos).
// Rows keep their storage type (f32, bf16 or q8_0) bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kv/kv_cache.h"

namespace swan {

// The rows of one store (kv/kv_cache.h: a layer's heads, or one head group
// of a per-head layer).
struct KvStoreSnapshot {
  bool taken = false;        // false: this store was left out
  std::vector<int32_t> pos;  // [n] position of each row
  std::vector<float> k;      // [n, store heads, head_dim]
  std::vector<float> v;      // [n, store heads, head_dim]
  size_t Bytes() const { return (k.size() + v.size()) * sizeof(float) + pos.size() * sizeof(int32_t); }
};

struct LayerKvSnapshot {
  std::vector<KvStoreSnapshot> stores;  // [the layer's n_stores]
  size_t Bytes() const;
};

struct KvSnapshot {
  int64_t n_pos = 0;                    // state after positions [0, n_pos)
  std::vector<LayerKvSnapshot> layers;  // [n_layers]
  size_t Bytes() const;
};

// Which stores a snapshot covers: window stores (rings) or full ones (a
// per-head layer has one of each).
enum class SnapshotLayers { kAll, kWindow, kFull };

// Copies the rows described above. Throws std::runtime_error when a window
// layer's ring no longer holds a position the snapshot needs (it was taken
// too long after n_pos) or a full layer lacks a position below n_pos.
// `shape` is the cache's (LanguageModel::kv_shape()).
KvSnapshot TakeSnapshot(const KvCache& cache, const KvShape& shape, int64_t n_pos,
                        SnapshotLayers which = SnapshotLayers::kAll);

// Clears every store the snapshot covers and writes its rows with position
// < `limit` back (limit < 0: all rows). A full-layer snapshot taken at n
// restores the state at any limit <= n; a window layer's only at its own
// n_pos. Stores the snapshot left out are untouched.
void RestoreSnapshot(const KvSnapshot& snapshot, const KvShape& shape, KvCache& cache, int64_t limit = -1);

}  // namespace swan
