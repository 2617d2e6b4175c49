#include "kv/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kv/ring_rows.h"
#include "ops/quant_blocks.h"
#include "util/bf16.h"

namespace swan {

int64_t RingRows(const Span& span, const KvCacheOptions& options) {
  if (span.full() || !options.ring_for_window_layers) return 0;
  return int64_t(span.window) - 1 + options.max_chunk;
}

namespace {

// Throws for a storage type the shape cannot use.
void CheckStorage(KvType type, const KvShape& shape) {
  if (type == KvType::kQ8_0 && shape.head_dim % 32 != 0)
    throw std::invalid_argument("KV cache: q8_0 stores blocks of 32 values, and this model's head_dim is " +
                                std::to_string(shape.head_dim) + "; use --kv bf16 or f32");
  if (type == KvType::kF16) throw std::invalid_argument("KV cache: f16 is not a KV cache type");
}

// Slots in use after `n_ctx` tokens, rounded up to whole pages but never
// past the ring's size.
int64_t SlotsAt(const Span& span, const KvCacheOptions& options, int64_t n_ctx) {
  const int64_t ring = RingRows(span, options);
  const int64_t page = options.page_rows;
  int64_t slots = (n_ctx + page - 1) / page * page;
  if (ring > 0) slots = std::min<int64_t>(slots, span.sinks + ring);
  return slots;
}

void Store(uint8_t* dst, const float* src, int64_t n, KvType type) {
  if (type == KvType::kF32) {
    std::memcpy(dst, src, size_t(n) * sizeof(float));
    return;
  }
  if (type == KvType::kQ8_0) {
    QuantizeRowQ8_0(reinterpret_cast<BlockQ8_0*>(dst), src, n);
    return;
  }
  uint16_t* out = reinterpret_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) out[i] = F32ToBF16(src[i]);
}

}  // namespace

KvStore::KvStore(const Span& span, std::vector<int32_t> heads, const KvShape& shape, const KvCacheOptions& options)
    : span_(span),
      heads_(std::move(heads)),
      shape_{int32_t(heads_.size()), shape.head_dim},
      options_(options),
      slots_(span.full() ? 0 : span.sinks, RingRows(span, options)),
      row_bytes_(size_t(KvBytes(options.type, int64_t(heads_.size()) * shape.head_dim))) {
  ValidateSpan(span);
  if (shape_.n_kv_heads <= 0 || shape_.head_dim <= 0)
    throw std::invalid_argument("KV cache: n_kv_heads and head_dim must be positive");
  CheckStorage(options.type, shape_);
  if (options.max_chunk <= 0 || options.page_rows <= 0 || options.max_context < 0)
    throw std::invalid_argument("KV cache: max_chunk and page_rows must be positive");
  max_slots_ =
      slots_.max_slots() > 0 ? slots_.max_slots() : (options.max_context > 0 ? options.max_context : int64_t(1) << 20);
  k_ = ReservedBuffer(size_t(max_slots_) * row_bytes_);
  v_ = ReservedBuffer(size_t(max_slots_) * row_bytes_);
}

void KvStore::GrowTo(int64_t n_slots) {
  const int64_t page = options_.page_rows;
  const int64_t rows = std::min((n_slots + page - 1) / page * page, max_slots_);
  if (rows > int64_t(slots_.pos().size())) slots_.pos().resize(size_t(rows), -1);
}

void KvStore::Write(const float* k, const float* v, const int32_t* pos, int64_t n, int32_t src_heads) {
  if (is_ring() && n > options_.max_chunk)
    throw std::invalid_argument("KV cache: " + std::to_string(n) +
                                " tokens in one step, more than max_chunk = " + std::to_string(options_.max_chunk));
  const int64_t d = shape_.head_dim, row_elems = int64_t(shape_.n_kv_heads) * d;
  // Rows of the store's own layout, or of src_heads heads to take ours from.
  const bool pick = src_heads > 0 && src_heads != shape_.n_kv_heads;
  const int64_t src_row = pick ? int64_t(src_heads) * d : row_elems;
  int64_t need = 0;
  for (int64_t t = 0; t < n; ++t) {
    if (pos[t] < 0) throw std::invalid_argument("KV cache: negative position " + std::to_string(pos[t]));
    need = std::max(need, slots_.SlotOf(pos[t]) + 1);
  }
  if (need > max_slots_)
    throw std::out_of_range("KV cache: position " + std::to_string(need - 1) + " is past the maximum context of " +
                            std::to_string(max_slots_) + " positions (raise the context size)");
  GrowTo(need);
  // The rows about to be written, backed in one call rather than a page
  // fault per page during the step (a prefill's 512 rows were 523 faults).
  k_.Commit(size_t(need) * row_bytes_);
  v_.Commit(size_t(need) * row_bytes_);
  for (int64_t t = 0; t < n; ++t) {
    const int64_t slot = slots_.SlotOf(pos[t]);
    uint8_t* k_row = k_.data() + size_t(slot) * row_bytes_;
    uint8_t* v_row = v_.data() + size_t(slot) * row_bytes_;
    if (!pick) {
      Store(k_row, k + t * src_row, row_elems, options_.type);
      Store(v_row, v + t * src_row, row_elems, options_.type);
    } else {
      // Head by head; a head is whole q8_0 blocks (CheckStorage).
      for (size_t i = 0; i < heads_.size(); ++i) {
        const int64_t at = KvBytes(options_.type, int64_t(i) * d), from = t * src_row + heads_[i] * d;
        Store(k_row + at, k + from, d, options_.type);
        Store(v_row + at, v + from, d, options_.type);
      }
    }
    slots_.pos()[size_t(slot)] = pos[t];
  }
}

KvView KvStore::View() const {
  KvView view;
  view.k = k_.data();
  view.v = v_.data();
  view.pos = slots_.pos().data();
  view.n_rows = int64_t(slots_.pos().size());
  view.row_stride = 0;
  view.type = options_.type;
  return view;
}

size_t KvStore::Bytes() const { return slots_.pos().size() * (2 * row_bytes_ + sizeof(int32_t)); }

void KvStore::Clear() {
  slots_.pos().clear();
  k_.Release(0);
  v_.Release(0);
}

KvStore KvStore::Copy() const {
  KvStore copy(span_, heads_, KvShape{shape_.n_kv_heads, shape_.head_dim}, options_);
  copy.slots_.pos() = slots_.pos();
  const size_t bytes = slots_.pos().size() * row_bytes_;
  if (bytes > 0) {
    std::memcpy(copy.k_.data(), k_.data(), bytes);
    std::memcpy(copy.v_.data(), v_.data(), bytes);
  }
  return copy;
}

namespace {

std::vector<int32_t> AllHeads(int32_t n) {
  std::vector<int32_t> heads(size_t(std::max(n, 0)));  // [n]
  for (int32_t h = 0; h < n; ++h) heads[size_t(h)] = h;
  return heads;
}

}  // namespace

LayerKvCache::LayerKvCache(const Span& span, const KvShape& shape, const KvCacheOptions& options)
    : span_(span), shape_(shape) {
  stores_.emplace_back(span, AllHeads(shape.n_kv_heads), shape, options);
}

LayerKvCache::LayerKvCache(const Span& span, const std::vector<int32_t>& full_heads, const KvShape& shape,
                           const KvCacheOptions& options)
    : span_(span), shape_(shape), per_head_(true) {
  ValidateSpan(span);
  for (HeadGroup& g : SplitHeads(full_heads, shape.n_kv_heads, span)) {
    if (g.span.full()) full_heads_ = g.kv_heads;
    stores_.emplace_back(g.span, std::move(g.kv_heads), shape, options);
  }
}

LayerKvCache LayerKvCache::Linear(const Span& window, const KvShape& shape, const KvCacheOptions& options) {
  if (shape.linear_phi_dim <= 0 || shape.n_kv_heads <= 0 || shape.head_dim <= 0)
    throw std::invalid_argument("KV cache: a linear layer needs the feature maps' size (linear_phi_dim)");
  LayerKvCache cache;
  cache.shape_ = shape;
  cache.linear_ = true;
  cache.span_ = window;
  if (!window.full()) cache.stores_.emplace_back(window, AllHeads(shape.n_kv_heads), shape, options);
  cache.Clear();
  return cache;
}

LinearState& LayerKvCache::linear_state() {
  if (!linear_) throw std::logic_error("LayerKvCache: not a linear layer");
  return state_;
}

void LayerKvCache::Write(const float* k, const float* v, const int32_t* pos, int64_t n) {
  if (stores_.empty()) throw std::logic_error("LayerKvCache::Write: a linear layer keeps a state, not keys");
  if (stores_.size() == 1) {
    stores_[0].Write(k, v, pos, n);
    return;
  }
  for (KvStore& s : stores_) s.Write(k, v, pos, n, shape_.n_kv_heads);
}

KvView LayerKvCache::View() const {
  if (stores_.empty()) throw std::logic_error("LayerKvCache::View: a linear layer without a window has no keys");
  if (stores_.size() != 1) throw std::logic_error("LayerKvCache::View: a per-head layer has a view per head group");
  return stores_[0].View();
}

std::vector<HeadGroup> LayerKvCache::Groups() const {
  if (linear_) throw std::logic_error("LayerKvCache::Groups: a linear layer has no keys");
  std::vector<HeadGroup> groups;
  for (const KvStore& s : stores_) groups.push_back(HeadGroup{s.heads(), s.span(), s.View()});
  return groups;
}

bool LayerKvCache::is_ring() const {
  for (const KvStore& s : stores_)
    if (s.is_ring()) return true;
  return false;
}

int64_t LayerKvCache::n_slots() const {
  int64_t total = 0;
  for (const KvStore& s : stores_) total += s.n_slots();
  return total;
}

size_t LayerKvCache::Bytes() const {
  size_t total = linear_ ? size_t(state_.bytes()) : 0;
  for (const KvStore& s : stores_) total += s.Bytes();
  return total;
}

void LayerKvCache::Clear() {
  // The state's size depends on KV, D and P only (one query head per KV head here).
  if (linear_)
    state_.Reset(LinearAttentionShape{shape_.n_kv_heads, shape_.n_kv_heads, shape_.head_dim, shape_.linear_phi_dim});
  for (KvStore& s : stores_) s.Clear();
}

LayerKvCache LayerKvCache::Copy() const {
  LayerKvCache copy;
  copy.span_ = span_;
  copy.shape_ = shape_;
  copy.per_head_ = per_head_;
  copy.full_heads_ = full_heads_;
  copy.linear_ = linear_;
  copy.state_ = state_;
  for (const KvStore& s : stores_) copy.stores_.push_back(s.Copy());
  return copy;
}

KvCache::KvCache(const std::vector<Span>& spans, const KvShape& shape, const KvCacheOptions& options)
    : KvCache(spans, std::vector<std::vector<int32_t>>(spans.size()), shape, options) {}

KvCache::KvCache(const std::vector<Span>& spans, const std::vector<std::vector<int32_t>>& full_heads,
                 const KvShape& shape, const KvCacheOptions& options)
    : KvCache(spans, full_heads, std::vector<bool>(spans.size(), false), shape, options) {}

KvCache::KvCache(const std::vector<Span>& spans, const std::vector<std::vector<int32_t>>& full_heads,
                 const std::vector<bool>& linear, const KvShape& shape, const KvCacheOptions& options)
    : options_(options) {
  if (full_heads.size() != spans.size() || linear.size() != spans.size())
    throw std::invalid_argument("KV cache: one list of full heads and one linear flag per layer");
  layers_.reserve(spans.size());
  for (size_t i = 0; i < spans.size(); ++i) {
    if (linear[i])
      layers_.push_back(LayerKvCache::Linear(spans[i], shape, options));
    else if (full_heads[i].empty())
      layers_.emplace_back(spans[i], shape, options);
    else
      layers_.emplace_back(spans[i], full_heads[i], shape, options);
  }
}

size_t KvCache::Bytes() const {
  size_t total = 0;
  for (const LayerKvCache& l : layers_) total += l.Bytes();
  return total;
}

void KvCache::Clear() {
  for (LayerKvCache& l : layers_) l.Clear();
}

KvCache KvCache::Copy() const {
  KvCache copy;
  copy.options_ = options_;
  copy.layers_.reserve(layers_.size());
  for (const LayerKvCache& l : layers_) copy.layers_.push_back(l.Copy());
  return copy;
}

KvType KvTypeFromString(const std::string& name) {
  if (name == "f32") return KvType::kF32;
  if (name == "bf16") return KvType::kBF16;
  if (name == "q8_0") return KvType::kQ8_0;
  throw std::invalid_argument("KV cache type must be f32, bf16 or q8_0, got '" + name + "'");
}

const char* KvTypeName(KvType type) {
  switch (type) {
    case KvType::kF32: return "f32";
    case KvType::kBF16: return "bf16";
    case KvType::kF16: return "f16";
    case KvType::kQ8_0: return "q8_0";
  }
  return "?";
}

size_t LayerKvBytesAt(const Span& span, const KvShape& shape, const KvCacheOptions& options, int64_t n_ctx) {
  CheckStorage(options.type, shape);
  const size_t row_bytes = size_t(KvBytes(options.type, int64_t(shape.n_kv_heads) * shape.head_dim));
  const int64_t slots = SlotsAt(span, options, n_ctx);
  return size_t(slots) * (2 * row_bytes + sizeof(int32_t));
}

size_t LayerKvBytesAt(const Span& span, const std::vector<int32_t>& full_heads, const KvShape& shape,
                      const KvCacheOptions& options, int64_t n_ctx) {
  size_t total = 0;
  for (const HeadGroup& g : SplitHeads(full_heads, shape.n_kv_heads, span))
    total += LayerKvBytesAt(g.span, KvShape{int32_t(g.kv_heads.size()), shape.head_dim}, options, n_ctx);
  return total;
}

}  // namespace swan
