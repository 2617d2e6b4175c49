#include "kv/kv_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/quant_blocks.h"
#include "util/f16.h"

namespace swan {
namespace {

// Writes positions [start, start + n) with k = v = position (one element per row).
void WritePositions(LayerKvCache& cache, int32_t start, int32_t n) {
  std::vector<float> kv(static_cast<size_t>(n));  // [n, 1, 1]
  std::vector<int32_t> pos(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) kv[size_t(i)] = float(pos[size_t(i)] = start + i);
  cache.Write(kv.data(), kv.data(), pos.data(), n);
}

// The positions a view holds, and that each row's key equals its position.
std::vector<int32_t> Held(const LayerKvCache& cache) {
  const KvView v = cache.View();
  std::vector<int32_t> held;
  for (int64_t r = 0; r < v.n_rows; ++r) {
    if (v.pos[r] < 0) continue;
    EXPECT_EQ(static_cast<const float*>(v.k)[r], float(v.pos[r]));
    held.push_back(v.pos[r]);
  }
  std::sort(held.begin(), held.end());
  return held;
}

TEST(KvCache, RingKeepsWindowSinksAndChunk) {
  KvCacheOptions o;
  o.max_chunk = 3;
  o.page_rows = 4;
  LayerKvCache cache(Span{8, 2}, KvShape{1, 1}, o);
  EXPECT_TRUE(cache.is_ring());
  for (int32_t p = 0; p < 40; p += 3) {
    WritePositions(cache, p, 3);
    const std::vector<int32_t> held = Held(cache);
    // Sinks 0, 1 and every position the chunk's first query (p) may see.
    for (int32_t k = 0; k < 2; ++k) EXPECT_TRUE(std::count(held.begin(), held.end(), k)) << p;
    for (int32_t k = std::max(2, p - 7); k < p + 3; ++k)
      EXPECT_TRUE(std::count(held.begin(), held.end(), k)) << "pos " << k << " after chunk at " << p;
  }
  EXPECT_EQ(cache.n_slots(), 2 + 8 - 1 + 3);
}

// A per-head layer with f of H KV heads full holds f/H of a full layer's
// keys and values plus a ring for the other heads, and each store holds
// its own heads' rows.
TEST(KvCache, PerHeadLayerKeepsFullHeadsAndARing) {
  KvCacheOptions o;
  o.max_chunk = 4;
  o.page_rows = 16;
  const KvShape shape{4, 8};
  const Span span{32, 4};
  LayerKvCache per_head(span, {2}, shape, o), full(Span{}, shape, o);
  EXPECT_TRUE(per_head.per_head());
  EXPECT_EQ(per_head.full_heads(), (std::vector<int32_t>{2}));
  ASSERT_EQ(per_head.n_stores(), 2);
  EXPECT_THROW(per_head.View(), std::logic_error);
  const int64_t row = int64_t(shape.n_kv_heads) * shape.head_dim;
  for (int32_t start = 0; start < 1000; start += 4) {
    std::vector<float> k(size_t(4 * row)), v(k.size());  // [4, 4 heads, 8]: value = 100 pos + head
    std::vector<int32_t> pos(4);
    for (int32_t t = 0; t < 4; ++t) {
      pos[size_t(t)] = start + t;
      for (int64_t c = 0; c < row; ++c) {
        k[size_t(t * row + c)] = float(100 * (start + t) + c / shape.head_dim);
        v[size_t(t * row + c)] = -k[size_t(t * row + c)];
      }
    }
    per_head.Write(k.data(), v.data(), pos.data(), 4);
    full.Write(k.data(), v.data(), pos.data(), 4);
  }
  const size_t slot_meta = sizeof(int32_t);
  const KvStore& heads_full = per_head.store(0);
  const KvStore& ring = per_head.store(1);
  EXPECT_EQ(heads_full.heads(), (std::vector<int32_t>{2}));
  EXPECT_EQ(ring.heads(), (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(heads_full.n_slots(), full.n_slots());
  EXPECT_EQ(ring.n_slots(), 4 + 32 - 1 + 4);
  // K and V bytes: exactly 1/4 of the full layer's, plus the ring's.
  EXPECT_EQ(4 * (heads_full.Bytes() - size_t(heads_full.n_slots()) * slot_meta),
            full.Bytes() - size_t(full.n_slots()) * slot_meta);
  EXPECT_EQ(per_head.Bytes(), heads_full.Bytes() + ring.Bytes());
  EXPECT_EQ(per_head.Bytes(), LayerKvBytesAt(span, {2}, shape, o, 1000));
  EXPECT_LT(double(per_head.Bytes()), 0.3 * double(full.Bytes()));
  // Each store's rows hold its heads' values at their positions.
  for (const HeadGroup& g : per_head.Groups()) {
    const int64_t m = int64_t(g.kv_heads.size());
    for (int64_t r = 0; r < g.kv.n_rows; ++r) {
      if (g.kv.pos[r] < 0) continue;
      for (int64_t i = 0; i < m; ++i)
        ASSERT_EQ(static_cast<const float*>(g.kv.k)[(r * m + i) * shape.head_dim],
                  float(100 * g.kv.pos[r] + g.kv_heads[size_t(i)]));
    }
  }
  const LayerKvCache copy = per_head.Copy();
  EXPECT_EQ(copy.Bytes(), per_head.Bytes());
  EXPECT_EQ(copy.full_heads(), per_head.full_heads());
  EXPECT_THROW(LayerKvCache(Span{}, {1}, shape, o), std::invalid_argument);
  EXPECT_THROW(LayerKvCache(span, {4}, shape, o), std::invalid_argument);
}

TEST(KvCache, WindowBytesDoNotGrowWithContext) {
  KvCacheOptions o;
  o.max_chunk = 4;
  o.page_rows = 16;
  LayerKvCache window(Span{32, 4}, KvShape{2, 8}, o), full(Span{}, KvShape{2, 8}, o);
  size_t window_bytes_at_100 = 0;
  for (int32_t p = 0; p < 1000; p += 4) {
    std::vector<float> kv(4 * 16, 1.0f);
    const int32_t pos[4] = {p, p + 1, p + 2, p + 3};
    window.Write(kv.data(), kv.data(), pos, 4);
    full.Write(kv.data(), kv.data(), pos, 4);
    if (p == 100) window_bytes_at_100 = window.Bytes();
    EXPECT_EQ(window.Bytes(), LayerKvBytesAt(window.span(), KvShape{2, 8}, o, p + 4));
    EXPECT_EQ(full.Bytes(), LayerKvBytesAt(full.span(), KvShape{2, 8}, o, p + 4));
  }
  EXPECT_EQ(window.Bytes(), window_bytes_at_100);
  EXPECT_EQ(window.Bytes(), size_t(4 + 31 + 4) * (2 * 16 * 4 + 4));
  EXPECT_EQ(full.Bytes(), size_t(1008) * (2 * 16 * 4 + 4));  // 1000 rows in pages of 16
}

TEST(KvCache, FullLayerRowIsPositionAndBf16Storage) {
  KvCacheOptions o;
  o.type = KvType::kBF16;
  o.page_rows = 2;
  LayerKvCache cache(Span{}, KvShape{1, 2}, o);
  const float k[4] = {1.5f, -2.0f, 3.0f, 0.25f}, v[4] = {4, 5, 6, 7};
  const int32_t pos[2] = {0, 1};
  cache.Write(k, v, pos, 2);
  const KvView view = cache.View();
  EXPECT_EQ(view.type, KvType::kBF16);
  EXPECT_EQ(view.n_rows, 2);
  EXPECT_EQ(static_cast<const uint16_t*>(view.k)[1], 0xc000);  // -2.0 in bf16
  EXPECT_EQ(cache.Bytes(), size_t(2) * (2 * 2 * 2 + 4));
}

TEST(KvCache, Q8_0StorageIsBlocksOfTheRows) {
  KvCacheOptions o;
  o.type = KvType::kQ8_0;
  o.page_rows = 4;
  const KvShape shape{2, 64};  // a row: 2 heads x 2 blocks of 32 values
  LayerKvCache cache(Span{}, shape, o);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> k(3 * 128), v(3 * 128);  // [3, 2, 64]
  for (float& x : k) x = normal(rng);
  for (float& x : v) x = normal(rng);
  const int32_t pos[3] = {0, 1, 2};
  cache.Write(k.data(), v.data(), pos, 3);
  const KvView view = cache.View();
  EXPECT_EQ(view.type, KvType::kQ8_0);
  // 34 bytes per 32 values: 4 rows (a page) of 4 blocks, K and V, + positions.
  EXPECT_EQ(cache.Bytes(), size_t(4) * (2 * 4 * 34 + 4));
  EXPECT_EQ(cache.Bytes(), LayerKvBytesAt(Span{}, shape, o, 3));
  // Each value within half a step of its block, the step d = max |x| / 127
  // stored as f16 (which moves the value 127 steps away by up to 127 |d16 - d|).
  std::vector<float> back(3 * 128);
  DequantizeRows(WeightType::kQ8_0, back.data(), view.k, 3, 128);
  const BlockQ8_0* blocks = static_cast<const BlockQ8_0*>(view.k);
  for (int64_t b = 0; b < 3 * 128 / 32; ++b) {
    float amax = 0;
    for (int64_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(k[size_t(b * 32 + i)]));
    const double d = amax / 127.0, d16 = F16ToF32(blocks[b].d);
    for (int64_t i = 0; i < 32; ++i)
      EXPECT_LE(std::fabs(back[size_t(b * 32 + i)] - k[size_t(b * 32 + i)]),
                0.5 * d16 + 127 * std::fabs(d16 - d) + 1e-6);
  }
  // Writing the values read back gives the same blocks (checkpoints restore so).
  LayerKvCache again(Span{}, shape, o);
  std::vector<float> v_back(3 * 128);
  DequantizeRows(WeightType::kQ8_0, v_back.data(), view.v, 3, 128);
  again.Write(back.data(), v_back.data(), pos, 3);
  EXPECT_EQ(std::memcmp(again.View().k, view.k, 3 * 4 * 34), 0);
  EXPECT_EQ(std::memcmp(again.View().v, view.v, 3 * 4 * 34), 0);
}

TEST(KvCache, Q8_0NeedsHeadDimOfWholeBlocks) {
  KvCacheOptions o;
  o.type = KvType::kQ8_0;
  try {
    LayerKvCache cache(Span{}, KvShape{2, 8}, o);
    ADD_FAILURE() << "head_dim 8 was accepted for q8_0";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("head_dim is 8; use --kv bf16 or f32"), std::string::npos) << e.what();
  }
  EXPECT_THROW(LayerKvBytesAt(Span{}, KvShape{2, 8}, o, 100), std::invalid_argument);  // swan inspect
  EXPECT_EQ(KvTypeFromString("q8_0"), KvType::kQ8_0);
  EXPECT_THROW(KvTypeFromString("q4_0"), std::invalid_argument);
}

TEST(KvCache, RejectsOversizedChunksAndBadPositions) {
  KvCacheOptions o;
  o.max_chunk = 2;
  LayerKvCache cache(Span{4, 0}, KvShape{1, 1}, o);
  const float kv[3] = {0, 0, 0};
  const int32_t pos[3] = {0, 1, 2};
  EXPECT_THROW(cache.Write(kv, kv, pos, 3), std::invalid_argument);
  const int32_t neg = -1;
  EXPECT_THROW(cache.Write(kv, kv, &neg, 1), std::invalid_argument);
  EXPECT_THROW(LayerKvCache(Span{0, 2}, KvShape{1, 1}, o), std::invalid_argument);
}

TEST(KvCache, FullLayerStopsAtMaxContext) {
  KvCacheOptions o;
  o.max_context = 8;
  o.page_rows = 3;
  LayerKvCache cache(Span{}, KvShape{1, 1}, o);
  WritePositions(cache, 0, 8);
  EXPECT_EQ(cache.n_slots(), 8);  // pages of 3, capped at the maximum
  try {
    WritePositions(cache, 8, 1);
    ADD_FAILURE() << "position 8 was accepted";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("maximum context of 8"), std::string::npos) << e.what();
  }
}

TEST(KvCache, CopyIsACheckpointAndClearForgets) {
  KvCacheOptions o;
  o.max_chunk = 2;
  o.page_rows = 4;
  KvCache cache({Span{}, Span{4, 1}}, KvShape{1, 1}, o);
  for (int32_t p = 0; p < 10; p += 2)
    for (int32_t l = 0; l < 2; ++l) WritePositions(cache.layer(l), p, 2);
  const KvCache checkpoint = cache.Copy();
  for (int32_t l = 0; l < 2; ++l) WritePositions(cache.layer(l), 10, 2);
  EXPECT_EQ(Held(checkpoint.layer(0)), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(Held(checkpoint.layer(1)), (std::vector<int32_t>{0, 5, 6, 7, 8, 9}));
  EXPECT_EQ(Held(cache.layer(1)), (std::vector<int32_t>{0, 7, 8, 9, 10, 11}));
  cache = checkpoint.Copy();
  EXPECT_EQ(Held(cache.layer(1)), (std::vector<int32_t>{0, 5, 6, 7, 8, 9}));
  EXPECT_EQ(cache.Bytes(), checkpoint.Bytes());
  cache.Clear();
  EXPECT_EQ(cache.Bytes(), 0u);
  EXPECT_TRUE(Held(cache.layer(0)).empty());
  WritePositions(cache.layer(0), 0, 2);
  EXPECT_EQ(Held(cache.layer(0)), (std::vector<int32_t>{0, 1}));
}

}  // namespace
}  // namespace swan
