#include "kv/kv_snapshot.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "ops/quant_blocks.h"
#include "util/bf16.h"

namespace swan {
namespace {

// Row `row` of a view as float32. out [n_kv_heads * head_dim]
void ReadRow(const KvView& view, const void* base, int64_t row, int64_t row_elems, float* out) {
  const int64_t stride = view.row_stride > 0 ? view.row_stride : row_elems;
  if (view.type == KvType::kQ8_0) {  // the values as stored; a restore quantizes them to the same blocks
    DequantizeRows(WeightType::kQ8_0, out, static_cast<const uint8_t*>(base) + KvBytes(view.type, row * stride), 1,
                   row_elems);
    return;
  }
  if (view.type == KvType::kF32) {
    const float* src = static_cast<const float*>(base) + row * stride;
    std::copy(src, src + row_elems, out);
  } else {
    const uint16_t* src = static_cast<const uint16_t*>(base) + row * stride;
    for (int64_t i = 0; i < row_elems; ++i) out[i] = BF16ToF32(src[i]);
  }
}

bool Wanted(const KvStore& store, SnapshotLayers which) {
  const bool window = !store.span().full();
  return which == SnapshotLayers::kAll || (which == SnapshotLayers::kWindow) == window;
}

KvStoreSnapshot TakeStore(const KvStore& store, int64_t n_pos, int64_t head_dim, int32_t index) {
  const Span& span = store.span();
  const int64_t row_elems = int64_t(store.heads().size()) * head_dim;
  // Positions a later query can see: [first, n_pos) plus the sinks.
  const int64_t first = span.full() ? 0 : std::max<int64_t>(0, n_pos - (span.window - 1));
  const int64_t sinks = span.full() ? 0 : std::min<int64_t>(span.sinks, first);
  const KvView view = store.View();
  std::vector<int64_t> rows;  // view rows to copy, in position order
  for (int64_t r = 0; r < view.n_rows; ++r) {
    const int32_t p = view.pos[r];
    if (p >= 0 && p < n_pos && (p >= first || p < sinks)) rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end(), [&](int64_t a, int64_t b) { return view.pos[a] < view.pos[b]; });
  const int64_t expected = (n_pos - first) + sinks;
  if (int64_t(rows.size()) != expected)
    throw std::runtime_error("KV snapshot at position " + std::to_string(n_pos) + ": layer " + std::to_string(index) +
                             " holds " + std::to_string(rows.size()) + " of the " + std::to_string(expected) +
                             " rows it needs (take ring snapshots right after the step that reaches n_pos)");
  KvStoreSnapshot out;
  out.taken = true;
  out.pos.resize(rows.size());
  out.k.resize(rows.size() * size_t(row_elems));
  out.v.resize(rows.size() * size_t(row_elems));
  for (size_t i = 0; i < rows.size(); ++i) {
    out.pos[i] = view.pos[rows[i]];
    ReadRow(view, view.k, rows[i], row_elems, &out.k[i * size_t(row_elems)]);
    ReadRow(view, view.v, rows[i], row_elems, &out.v[i * size_t(row_elems)]);
  }
  return out;
}

}  // namespace

size_t LayerKvSnapshot::Bytes() const {
  size_t total = 0;
  for (const KvStoreSnapshot& s : stores) total += s.Bytes();
  return total;
}

size_t KvSnapshot::Bytes() const {
  size_t total = 0;
  for (const LayerKvSnapshot& l : layers) total += l.Bytes();
  return total;
}

KvSnapshot TakeSnapshot(const KvCache& cache, const KvShape& shape, int64_t n_pos, SnapshotLayers which) {
  if (n_pos < 0) throw std::invalid_argument("KV snapshot: negative position");
  KvSnapshot snap;
  snap.n_pos = n_pos;
  snap.layers.resize(size_t(cache.n_layers()));
  for (int32_t i = 0; i < cache.n_layers(); ++i) {
    const LayerKvCache& layer = cache.layer(i);
    LayerKvSnapshot& out = snap.layers[size_t(i)];
    out.stores.resize(size_t(layer.n_stores()));
    for (int32_t s = 0; s < layer.n_stores(); ++s)
      if (Wanted(layer.store(s), which)) out.stores[size_t(s)] = TakeStore(layer.store(s), n_pos, shape.head_dim, i);
  }
  return snap;
}

void RestoreSnapshot(const KvSnapshot& snapshot, const KvShape& shape, KvCache& cache, int64_t limit) {
  if (int32_t(snapshot.layers.size()) != cache.n_layers())
    throw std::invalid_argument("KV snapshot has " + std::to_string(snapshot.layers.size()) + " layers, the cache " +
                                std::to_string(cache.n_layers()));
  if (limit < 0) limit = snapshot.n_pos;
  const int64_t chunk = cache.options().max_chunk;
  for (int32_t i = 0; i < cache.n_layers(); ++i) {
    LayerKvCache& layer = cache.layer(i);
    const LayerKvSnapshot& layer_snap = snapshot.layers[size_t(i)];
    if (int32_t(layer_snap.stores.size()) != layer.n_stores())
      throw std::invalid_argument("KV snapshot: layer " + std::to_string(i) + " has " +
                                  std::to_string(layer_snap.stores.size()) + " stores, the cache " +
                                  std::to_string(layer.n_stores()));
    for (int32_t s = 0; s < layer.n_stores(); ++s) {
      const KvStoreSnapshot& snap = layer_snap.stores[size_t(s)];
      if (!snap.taken) continue;
      KvStore& store = layer.store(s);
      const int64_t row_elems = int64_t(store.heads().size()) * shape.head_dim;
      if (!store.span().full() && limit != snapshot.n_pos)
        throw std::invalid_argument("KV snapshot: a window layer restores only at its own position " +
                                    std::to_string(snapshot.n_pos));
      store.Clear();
      const int64_t n = std::lower_bound(snap.pos.begin(), snap.pos.end(), int32_t(limit)) - snap.pos.begin();
      for (int64_t start = 0; start < n; start += chunk) {
        const int64_t len = std::min(chunk, n - start);
        store.Write(&snap.k[size_t(start * row_elems)], &snap.v[size_t(start * row_elems)], &snap.pos[size_t(start)],
                    len);
      }
    }
  }
}

}  // namespace swan
