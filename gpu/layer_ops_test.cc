// The shaders of a layer's other steps against the CPU on random inputs:
// attention against attention/attention.h's float64 AttendReference (ring
// slots, empty slots, windows, sinks, learned sink logits, GQA, f32 and
// bf16 KV), RoPE against ops/rope.h, the MLP gates against
// ops/elementwise.h, and the residual add.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "attention/attention.h"
#include "attention/head_groups.h"
#include "gpu/device_ops.h"
#include "gpu/device_test_util.h"
#include "model/cache_positions.h"
#include "ops/elementwise.h"
#include "ops/rope.h"
#include "util/bf16.h"

namespace swan {
namespace {

// A buffer holding `values`.
template <class T>
DeviceBuffer Holding(const std::vector<T>& values) {
  DeviceBuffer b(*Device(), values.size() * sizeof(T));
  b.Upload(values.data(), values.size() * sizeof(T));
  return b;
}

template <class T = float>
std::vector<T> Downloaded(const DeviceBuffer& b, size_t n) {
  std::vector<T> out(n);
  b.Download(out.data(), n * sizeof(T));
  return out;
}

// The CPU reference's arguments: q [n_q, heads, hd] at q_pos [n_q] over k
// and v [n_rows, stride] at kv_pos [n_rows] (float32).
AttentionArgs ReferenceArgs(const AttentionShape& shape, const float* q, const std::vector<int32_t>& q_pos,
                            const std::vector<float>& k, const std::vector<float>& v,
                            const std::vector<int32_t>& kv_pos, int64_t stride, const Span& span) {
  AttentionArgs args;
  args.shape = shape;
  args.q = q;
  args.q_pos = q_pos.data();
  args.n_q = int64_t(q_pos.size());
  args.kv = {k.data(), v.data(), kv_pos.data(), int64_t(kv_pos.size()), stride, KvType::kF32};
  args.span = span;
  return args;
}

class DeviceAttend : public VulkanTest {
 protected:
  // n_q queries at the last positions over n_rows slots: a ring of the
  // positions [first, first + n_rows) in rotated order, `empty` of them
  // marked empty; compares the device's output with AttendReference.
  // full_heads: KV heads that see every key (a per-head layer: their rows
  // and the other heads' in stores of their own, a call each); routed:
  // each query row gets a random route logit, and those above 0 see every
  // key. The reference is AttendReference under the span or under full
  // attention, taken per head or row.
  void Check(const AttentionShape& shape, int64_t n_q, int64_t n_rows, int64_t empty, KvType type, Span span,
             bool sink_logits, int64_t row_pad = 0, const std::vector<int32_t>& full_heads = {}, bool routed = false) {
    SCOPED_TRACE(std::to_string(shape.n_heads) + "/" + std::to_string(shape.n_kv_heads) + " heads of " +
                 std::to_string(shape.head_dim) + ", " + std::to_string(n_q) + " queries, " + std::to_string(n_rows) +
                 " slots, " + span.ToString() + (type == KvType::kBF16 ? ", bf16" : ", f32") +
                 (sink_logits ? ", sink logits" : "") + (full_heads.empty() ? "" : ", per-head") +
                 (routed ? ", routed" : ""));
    std::normal_distribution<float> normal;
    const int64_t width = int64_t(shape.n_kv_heads) * shape.head_dim, stride = width + row_pad;
    std::vector<float> q(size_t(n_q * shape.n_heads * shape.head_dim)), k(size_t(n_rows * stride)),
        v(size_t(n_rows * stride)), sinks(size_t(shape.n_heads));  // [n_q, heads, hd], [n_rows, stride] x2, [heads]
    for (float& x : q) x = normal(rng);
    for (float& x : sinks) x = normal(rng);
    for (int64_t i = 0; i < n_rows * stride; ++i) {
      k[size_t(i)] = normal(rng);
      v[size_t(i)] = normal(rng);
      if (type == KvType::kBF16) {  // the values a bf16 cache holds
        k[size_t(i)] = BF16ToF32(F32ToBF16(k[size_t(i)]));
        v[size_t(i)] = BF16ToF32(F32ToBF16(v[size_t(i)]));
      }
    }
    const int32_t first = 3;
    std::vector<int32_t> kv_pos(static_cast<size_t>(n_rows)), q_pos(static_cast<size_t>(n_q));  // [n_rows], [n_q]
    const int64_t rotate = n_rows / 3;                                                          // a ring that wrapped
    for (int64_t r = 0; r < n_rows; ++r) kv_pos[size_t((r + rotate) % n_rows)] = int32_t(first + r);
    for (int64_t e = 0; e < empty; ++e) kv_pos[size_t(std::uniform_int_distribution<int64_t>(0, n_rows - 1)(rng))] = -1;
    for (int64_t i = 0; i < n_q; ++i) q_pos[size_t(i)] = int32_t(first + n_rows - n_q + i);

    AttentionArgs args = ReferenceArgs(shape, q.data(), q_pos, k, v, kv_pos, stride, span);
    args.sink_logits = sink_logits ? sinks.data() : nullptr;
    std::vector<float> expected(q.size());  // [n_q, heads, hd]
    AttendReference(args, expected.data());
    std::vector<float> route_logits(static_cast<size_t>(n_q));  // [n_q]
    for (float& x : route_logits) x = normal(rng);
    if (routed || !full_heads.empty()) {
      args.span = Span{};
      std::vector<float> full(q.size());  // [n_q, heads, hd] every query seeing every key
      AttendReference(args, full.data());
      const int64_t group = shape.n_heads / shape.n_kv_heads, hd = shape.head_dim;
      for (int64_t i = 0; i < n_q; ++i)
        for (int64_t h = 0; h < shape.n_heads; ++h) {
          const bool head_full = std::count(full_heads.begin(), full_heads.end(), int32_t(h / group)) > 0;
          if (!head_full && !(routed && route_logits[size_t(i)] > 0)) continue;
          const size_t at = size_t((i * shape.n_heads + h) * hd);
          std::copy_n(full.begin() + ptrdiff_t(at), hd, expected.begin() + ptrdiff_t(at));
        }
    }

    // The cache's stores: every head, or (per-head) the full heads' and the
    // window heads' rows apart, as the decoder keeps them.
    struct Store {
      std::vector<int32_t> kv_heads;  // empty: every head
      Span span;
      std::vector<float> k, v;  // [n_rows, row stride]
      int64_t stride = 0;
    };
    std::vector<Store> stores;
    if (full_heads.empty()) {
      stores.push_back({{}, span, k, v, stride});
    } else {
      for (const HeadGroup& g : SplitHeads(full_heads, shape.n_kv_heads, span)) {
        const int64_t g_width = int64_t(g.kv_heads.size()) * shape.head_dim;
        Store store{g.kv_heads, g.span, std::vector<float>(size_t(n_rows * g_width)),
                    std::vector<float>(size_t(n_rows * g_width)), g_width};
        for (int64_t r = 0; r < n_rows; ++r) {
          GatherHeads(store.k.data() + r * g_width, k.data() + r * stride, 1, shape.n_kv_heads, shape.head_dim,
                      g.kv_heads);
          GatherHeads(store.v.data() + r * g_width, v.data() + r * stride, 1, shape.n_kv_heads, shape.head_dim,
                      g.kv_heads);
        }
        stores.push_back(std::move(store));
      }
    }
    DeviceKernels kernels(*Device());
    const DeviceBuffer dq = Holding(q), dpos = Holding(kv_pos), dqpos = Holding(q_pos), dsinks = Holding(sinks);
    const DeviceBuffer droutes = Holding(route_logits);
    DeviceBuffer out(*Device(), q.size() * 4);
    std::vector<DeviceBuffer> held;  // [stores, 3] keys, values and partials, kept until the batch ran
    held.reserve(3 * stores.size());
    CommandBatch batch(*Device());
    for (const Store& store : stores) {
      std::vector<uint16_t> k16(store.k.size()), v16(store.v.size());  // the bf16 cache
      for (size_t i = 0; i < store.k.size(); ++i) k16[i] = F32ToBF16(store.k[i]), v16[i] = F32ToBF16(store.v[i]);
      held.push_back(type == KvType::kBF16 ? Holding(k16) : Holding(store.k));
      held.push_back(type == KvType::kBF16 ? Holding(v16) : Holding(store.v));
      const DeviceAttention a{
          shape, n_q, n_rows, store.stride, type, store.span, 0.0f, store.kv_heads, routed ? &droutes : nullptr};
      held.emplace_back(*Device(), size_t(AttendScratchFloats(a)) * 4);
      // From 3 queries on, the rows go in two calls, as the sequences of a batched step do.
      const int64_t parts = n_q >= 3 ? 2 : 1;
      for (int64_t part = 0; part < parts; ++part) {
        DeviceAttention rows = a;
        rows.first_q = part * (n_q / 2), rows.n_q = parts == 1 ? n_q : part == 0 ? n_q / 2 : n_q - n_q / 2;
        rows.q_rows = n_q;
        RecordAttend(batch, kernels, rows, dq, held[held.size() - 3], held[held.size() - 2], dpos, dqpos,
                     sink_logits ? &dsinks : nullptr, held.back(), out);
      }
    }
    batch.Run();
    const std::vector<float> got = Downloaded(out, q.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 2e-5f * (1 + std::fabs(expected[i]))) << i;
  }
};

TEST_F(DeviceAttend, MatchesTheReferenceUnderEveryKindOfSpan) {
  SWAN_NEED_VULKAN();
  const AttentionShape gqa{4, 2, 40}, mha{2, 2, 64};
  for (KvType type : {KvType::kF32, KvType::kBF16}) {
    Check(gqa, 1, 37, 0, type, Span{}, false);
    Check(gqa, 1, 37, 3, type, Span{5, 0}, false);
    Check(gqa, 3, 37, 0, type, Span{5, 2}, false);
    Check(mha, 2, 130, 5, type, Span{16, 4}, true);
    Check(mha, 1, 130, 0, type, Span{}, true, 6);
    Check(gqa, 1, 1, 0, type, Span{1, 0}, false);
    // Block windows: a block that starts at the first query, one the
    // queries are well into, and a query before the first offset.
    Check(gqa, 3, 37, 0, type, Span{16, 0, true, 5}, false);
    Check(mha, 2, 130, 5, type, Span{16, 4, true, 12}, true);
    Check(gqa, 1, 1, 0, type, Span{8, 0, true, 6}, false);
  }
}

// The keys split in kAttendSplit rows (one split, several, a last one of
// a row, a split of only empty slots) and GQA groups of every size against
// the heads one pass scores (1, 4, 7, 10), up to the largest head_dim.
TEST_F(DeviceAttend, SplitsAndGroupsOfEverySize) {
  SWAN_NEED_VULKAN();
  for (KvType type : {KvType::kF32, KvType::kBF16}) {
    Check(AttentionShape{7, 1, 72}, 1, 700, 0, type, Span{}, false);
    Check(AttentionShape{10, 1, 32}, 2, 257, 3, type, Span{}, true);
    Check(AttentionShape{8, 2, 256}, 1, 129, 0, type, Span{}, false);
    Check(AttentionShape{4, 1, 16}, 1, 600, 0, type, Span{100, 2}, false);  // splits that see nothing
    Check(AttentionShape{3, 3, 8}, 2, 384, 0, type, Span{}, false);
  }
}

// Prefill rows in tiles of kAttendQueryTile (whole tiles and a part tile,
// in calls that start mid-tile), their (row, head) pairs in passes of 8:
// GQA groups of 1, 4 and 7, wide heads, routed rows.
TEST_F(DeviceAttend, QueryTilesOfEverySize) {
  SWAN_NEED_VULKAN();
  for (KvType type : {KvType::kF32, KvType::kBF16}) {
    Check(AttentionShape{8, 2, 40}, 11, 300, 4, type, Span{}, true);
    Check(AttentionShape{7, 1, 24}, 9, 200, 0, type, Span{16, 4}, false);
    Check(AttentionShape{4, 4, 64}, 13, 140, 2, type, Span{32, 0, true, 7}, false);
    Check(AttentionShape{8, 2, 256}, 6, 129, 0, type, Span{}, false);
    Check(AttentionShape{6, 3, 24}, 10, 90, 0, type, Span{5, 1}, false, 0, {}, true);
  }
}

// Per-head layers (some KV heads see every key, from a store of their own)
// and routed ones (a query row whose route logit is above 0 does).
TEST_F(DeviceAttend, FullHeadsAndRoutedRowsSeeEveryKey) {
  SWAN_NEED_VULKAN();
  const AttentionShape gqa{6, 3, 24}, mha{4, 4, 32};
  for (KvType type : {KvType::kF32, KvType::kBF16}) {
    Check(gqa, 2, 41, 2, type, Span{5, 1}, false, 0, {1});
    Check(mha, 1, 70, 0, type, Span{8, 0}, true, 0, {0, 3});
    Check(gqa, 8, 41, 0, type, Span{6, 2}, false, 0, {}, true);
    Check(mha, 5, 70, 3, type, Span{16, 4, true, 3}, true, 0, {}, true);
  }
}

// StreamingLLM positions (pos:cache): the sinks out of the window are
// scored with the query rotated to min(q, S + W - 1), against the CPU's
// AttendCachePositions (two softmax parts merged by their log-sum-exps).
// The cache: the sinks in its first rows, then a ring that wrapped.
TEST_F(DeviceAttend, CachePositionsMatchTheCpu) {
  SWAN_NEED_VULKAN();
  std::normal_distribution<float> normal;
  const AttentionShape shape{4, 2, 16};
  const Rope rope(RopeSettings{}, shape.head_dim);
  for (KvType type : {KvType::kF32, KvType::kBF16}) {
    for (const Span span : {Span{6, 2}, Span{9, 4}}) {
      for (int32_t last : {5, 9, 13, 40}) {  // the last query's position: inside the first window and past it
        SCOPED_TRACE(span.ToString() + " at " + std::to_string(last) + (type == KvType::kBF16 ? ", bf16" : ""));
        const int64_t n_q = 3, ring = span.window, n_rows = span.sinks + ring;
        const int64_t width = int64_t(shape.n_kv_heads) * shape.head_dim,
                      q_values = n_q * shape.n_heads * shape.head_dim;
        std::vector<int32_t> kv_pos(size_t(n_rows), -1), q_pos(static_cast<size_t>(n_q));  // [n_rows], [n_q]
        for (int32_t j = 0; j < span.sinks && j <= last; ++j) kv_pos[size_t(j)] = j;
        for (int32_t p = span.sinks; p <= last; ++p) kv_pos[size_t(span.sinks + (p - span.sinks) % ring)] = p;
        for (int64_t i = 0; i < n_q; ++i) q_pos[size_t(i)] = std::max<int32_t>(0, last - int32_t(n_q - 1 - i));
        std::vector<float> k(size_t(n_rows * width)), v(k.size()),
            q_plain(static_cast<size_t>(q_values));  // [n_rows, width] x2
        for (float& x : k) x = type == KvType::kBF16 ? BF16ToF32(F32ToBF16(normal(rng))) : normal(rng);
        for (float& x : v) x = type == KvType::kBF16 ? BF16ToF32(F32ToBF16(normal(rng))) : normal(rng);
        for (float& x : q_plain) x = normal(rng);  // [n_q, heads, hd] before RoPE
        // The device's queries: rotated at q, then at min(q, S + W - 1).
        std::vector<float> q_both(q_plain.begin(), q_plain.end());  // [2, n_q, heads, hd]
        q_both.insert(q_both.end(), q_plain.begin(), q_plain.end());
        std::vector<int32_t> sink_pos(q_pos);  // [n_q]
        for (int32_t& p : sink_pos) p = std::min(p, span.sinks + span.window - 1);
        rope.Apply(q_both.data(), q_pos.data(), n_q, shape.n_heads);
        rope.Apply(q_both.data() + q_values, sink_pos.data(), n_q, shape.n_heads);

        const AttentionArgs args = ReferenceArgs(shape, q_both.data(), q_pos, k, v, kv_pos, width, span);
        std::vector<float> expected(static_cast<size_t>(q_values));  // [n_q, heads, hd]
        AttendCachePositions(expected.data(), args, q_plain.data(), rope);

        std::vector<uint16_t> k16(k.size()), v16(v.size());  // the bf16 cache
        for (size_t i = 0; i < k.size(); ++i) k16[i] = F32ToBF16(k[i]), v16[i] = F32ToBF16(v[i]);
        DeviceKernels kernels(*Device());
        const DeviceBuffer dq = Holding(q_both), dpos = Holding(kv_pos), dqpos = Holding(q_pos);
        const DeviceBuffer dk = type == KvType::kBF16 ? Holding(k16) : Holding(k);
        const DeviceBuffer dv = type == KvType::kBF16 ? Holding(v16) : Holding(v);
        DeviceAttention a{shape, n_q, n_rows, width, type, span, 0.0f, {}, nullptr};
        a.cache_positions = true;
        DeviceBuffer scratch(*Device(), size_t(AttendScratchFloats(a)) * 4), out(*Device(), expected.size() * 4);
        CommandBatch batch(*Device());
        // Rows 0-1 and row 2 in calls of their own: the rotated queries are q_rows further on.
        for (const auto& [first_q, rows] : {std::pair<int64_t, int64_t>{0, 2}, {2, 1}}) {
          DeviceAttention part = a;
          part.first_q = first_q, part.n_q = rows, part.q_rows = n_q;
          RecordAttend(batch, kernels, part, dq, dk, dv, dpos, dqpos, nullptr, scratch, out);
        }
        batch.Run();
        const std::vector<float> got = Downloaded(out, expected.size());
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], expected[i], 2e-5f * (1 + std::fabs(expected[i]))) << i;
      }
    }
  }
}

// A query that sees no key gets zeros; with a learned sink logit, too.
TEST_F(DeviceAttend, AQueryThatSeesNothingGetsZeros) {
  SWAN_NEED_VULKAN();
  Check(AttentionShape{2, 1, 32}, 1, 4, 4, KvType::kF32, Span{}, false);
  Check(AttentionShape{2, 1, 32}, 1, 4, 4, KvType::kF32, Span{}, true);
}

TEST_F(DeviceAttend, RefusesQ8_0CachesAndShortBuffers) {
  SWAN_NEED_VULKAN();
  DeviceKernels kernels(*Device());
  EXPECT_THROW(kernels.Attend(KvType::kQ8_0), std::invalid_argument);
  DeviceBuffer small(*Device(), 16), scores(*Device(), 1024);
  CommandBatch batch(*Device());
  const DeviceAttention a{AttentionShape{2, 1, 32}, 1, 4, 0, KvType::kF32, Span{}, 0.0f, {}, nullptr};
  EXPECT_THROW(RecordAttend(batch, kernels, a, small, small, small, small, small, nullptr, scores, small),
               std::invalid_argument);
  const DeviceAttention no_window{AttentionShape{2, 1, 32}, 1, 4, 0, KvType::kF32, Span{0, 4}, 0.0f, {}, nullptr};
  EXPECT_THROW(RecordAttend(batch, kernels, no_window, scores, scores, scores, scores, scores, nullptr, scores, scores),
               std::invalid_argument);
  const DeviceAttention too_wide{AttentionShape{1, 1, 258}, 1, 4, 0, KvType::kF32, Span{}, 0.0f, {}, nullptr};
  EXPECT_THROW(RecordAttend(batch, kernels, too_wide, scores, scores, scores, scores, scores, nullptr, scores, scores),
               std::invalid_argument);
  DeviceAttention bad_head{AttentionShape{2, 1, 32}, 1, 4, 0, KvType::kF32, Span{2, 0}, 0.0f, {1}, nullptr};
  EXPECT_THROW(RecordAttend(batch, kernels, bad_head, scores, scores, scores, scores, scores, nullptr, scores, scores),
               std::invalid_argument);
  EXPECT_EQ(batch.dispatches(), 0);
}

class DeviceLayerSteps : public VulkanTest {};

// A KV store's rows: rows of a step's keys at a store's heads, into slots
// further on, the words around them untouched; in f32 as they are, in bf16
// rounded as util/bf16.h rounds (ties to even, NaN and infinities).
TEST_F(DeviceLayerSteps, StoredRowsGatherHeadsAndRoundAsTheCpu) {
  SWAN_NEED_VULKAN();
  DeviceKernels kernels(*Device());
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const int64_t n = 5, n_kv_heads = 3, hd = 10, from_row = 1, count = 3, to_slot = 2, slots = 7;
  std::vector<float> x(size_t(n * n_kv_heads * hd));  // [n, n_kv_heads, hd]
  for (float& v : x) v = normal(rng);
  // Ties: a bf16 value plus half its last place (2^-8 in [1, 2)), rounding
  // up to even and down to even; and the special values, in rows stored.
  float* special = x.data() + from_row * n_kv_heads * hd;
  special[0] = BF16ToF32(0x3f81) + std::ldexp(1.0f, -8), special[1] = BF16ToF32(0x3f80) + std::ldexp(1.0f, -8);
  special[2] = std::numeric_limits<float>::infinity(), special[3] = -std::numeric_limits<float>::infinity();
  special[4] = std::numeric_limits<float>::quiet_NaN(), special[5] = -0.0f, special[6] = 3.4e38f, special[7] = 1e-40f;
  const DeviceBuffer dx = Holding(x);
  for (KvType type : {KvType::kF32, KvType::kBF16})
    for (const std::vector<int32_t>& heads : {std::vector<int32_t>{}, {0, 2}, {1}}) {
      SCOPED_TRACE(std::string(KvTypeName(type)) + ", " + std::to_string(heads.size()) + " heads");
      const std::vector<int32_t> all = {0, 1, 2};
      const std::vector<int32_t>& stored = heads.empty() ? all : heads;
      const int64_t width = int64_t(stored.size()) * hd, per_word = type == KvType::kBF16 ? 2 : 1;
      const int64_t words = slots * width / per_word;
      DeviceBuffer out = Holding(std::vector<uint32_t>(size_t(words), 0xdeadbeefu));
      CommandBatch batch(*Device());
      RecordStoreKv(batch, kernels, type, dx, out, count, n_kv_heads, hd, from_row, to_slot, heads);
      batch.Run();
      const std::vector<uint32_t> got = Downloaded<uint32_t>(out, size_t(words));
      for (int64_t w = 0; w < words; ++w) {
        const int64_t slot = w * per_word / width;
        if (slot < to_slot || slot >= to_slot + count) {
          ASSERT_EQ(got[size_t(w)], 0xdeadbeefu) << "word " << w;
          continue;
        }
        const int64_t within = w * per_word % width, head = stored[size_t(within / hd)];
        const size_t i = size_t(((from_row + slot - to_slot) * n_kv_heads + head) * hd + within % hd);
        uint32_t want = 0;
        if (type == KvType::kBF16) {
          want = F32ToBF16(x[i]) | uint32_t(F32ToBF16(x[i + 1])) << 16;
        } else {
          std::memcpy(&want, &x[i], 4);
        }
        ASSERT_EQ(got[size_t(w)], want) << "word " << w;
      }
    }
  CommandBatch batch(*Device());
  DeviceBuffer out(*Device(), 4096);
  EXPECT_THROW(RecordStoreKv(batch, kernels, KvType::kF32, dx, out, 1, n_kv_heads, 7, 0, 0), std::invalid_argument);
  EXPECT_THROW(RecordStoreKv(batch, kernels, KvType::kF32, dx, out, 1, n_kv_heads, hd, 0, 0, {2, 1}),
               std::invalid_argument);
  EXPECT_THROW(RecordStoreKv(batch, kernels, KvType::kQ8_0, dx, out, 1, n_kv_heads, hd, 0, 0), std::invalid_argument);
}

TEST_F(DeviceLayerSteps, RopeMatchesTheCpuForPlainAndScaledFrequencies) {
  SWAN_NEED_VULKAN();
  DeviceKernels kernels(*Device());
  std::normal_distribution<float> normal;
  RopeSettings plain, yarn;
  yarn.base = 1e6;
  yarn.scaling.kind = RopeScaling::Kind::kYarn;
  yarn.scaling.factor = 4;
  yarn.scaling.original_max_position_embeddings = 64;
  for (const RopeSettings& settings : {plain, yarn}) {
    SCOPED_TRACE(settings.ToString());
    const int32_t head_dim = 48, heads = 3;
    const int64_t tokens = 5;
    const Rope rope(settings, head_dim);
    const std::vector<int32_t> pos = {0, 1, 17, 4095, 32767};  // [tokens]
    std::vector<float> x(size_t(tokens * heads * head_dim)), cos_sin(size_t(tokens * head_dim));
    for (float& v : x) v = normal(rng);
    rope.CosSin(pos.data(), tokens, cos_sin.data());
    DeviceBuffer dx = Holding(x);
    const DeviceBuffer dcs = Holding(cos_sin);
    CommandBatch batch(*Device());
    RecordRope(batch, kernels, dx, dcs, tokens, heads, head_dim);
    batch.Run();
    rope.Apply(x.data(), pos.data(), tokens, heads);
    const std::vector<float> got = Downloaded(dx, x.size());
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(got[i], x[i], 1e-6f * (1 + std::fabs(x[i]))) << i;
  }
}

TEST_F(DeviceLayerSteps, GatesMatchTheCpu) {
  SWAN_NEED_VULKAN();
  DeviceKernels kernels(*Device());
  std::normal_distribution<float> normal(0.0f, 4.0f);
  const int64_t n = 1000;
  std::vector<float> gate(n), up(n), cpu(n);  // [n]
  for (float& v : gate) v = normal(rng);
  for (float& v : up) v = normal(rng);
  gate[0] = 60.0f;  // far out on both sides
  gate[1] = -60.0f;
  for (const bool gelu : {false, true}) {
    SCOPED_TRACE(gelu ? "gelu_tanh" : "silu");
    const DeviceBuffer dg = Holding(gate), du = Holding(up);
    DeviceBuffer dout(*Device(), n * 4);
    CommandBatch batch(*Device());
    RecordGated(batch, kernels, dg, du, dout, n, gelu);
    batch.Run();
    (gelu ? GeluTanhMul : SiluMul)(cpu.data(), gate.data(), up.data(), n);
    const std::vector<float> got = Downloaded(dout, n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_NEAR(got[size_t(i)], cpu[size_t(i)], 2e-5f * (1 + std::fabs(cpu[size_t(i)]))) << i;
  }
}

TEST_F(DeviceLayerSteps, AddScalesIntoTheStream) {
  SWAN_NEED_VULKAN();
  DeviceKernels kernels(*Device());
  std::normal_distribution<float> normal;
  const int64_t n = 70001;        // an odd size, 1094 workgroups
  std::vector<float> x(n), y(n);  // [n]
  for (float& v : x) v = normal(rng);
  for (float& v : y) v = normal(rng);
  const DeviceBuffer dx = Holding(x);
  DeviceBuffer dy = Holding(y);
  CommandBatch batch(*Device());
  RecordAdd(batch, kernels, dx, dy, n, 0.5f);
  RecordAdd(batch, kernels, dx, dy, n);
  batch.Run();
  const std::vector<float> got = Downloaded(dy, n);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_FLOAT_EQ(got[size_t(i)], (y[size_t(i)] + 0.5f * x[size_t(i)]) + x[size_t(i)]) << i;
  // A bias of 7 values added to each of 5 rows.
  const int64_t period = 7, rows = 5;
  DeviceBuffer rows_y = Holding(std::vector<float>(y.begin(), y.begin() + period * rows));
  RecordAdd(batch, kernels, dx, rows_y, period * rows, 1.0f, period);
  batch.Run();
  const std::vector<float> biased = Downloaded(rows_y, period * rows);
  for (int64_t i = 0; i < period * rows; ++i)
    ASSERT_FLOAT_EQ(biased[size_t(i)], y[size_t(i)] + x[size_t(i % period)]) << i;
  EXPECT_THROW(RecordAdd(batch, kernels, dx, rows_y, period * rows, 1.0f, 6), std::invalid_argument);
}

}  // namespace
}  // namespace swan
