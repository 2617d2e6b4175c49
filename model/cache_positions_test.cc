// Cache position mode against StreamingLLM written out directly: keys kept
// before RoPE and rotated by their slot in the cache (sinks first, then the
// window), the query by its own slot.
#include "model/cache_positions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kv/kv_cache.h"

namespace swan {
namespace {

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// One (query, head) of StreamingLLM attention.   out [head_dim]
void StreamingReference(float* out, const float* q_raw, int32_t q, int32_t head, const std::vector<float>& k_raw,
                        const std::vector<float>& v, const AttentionShape& s, const Span& span, const Rope& rope) {
  const int32_t d = s.head_dim, kv_head = head / (s.n_heads / s.n_kv_heads);
  const int32_t window_start = std::max(span.sinks, q - span.window + 1);
  auto slot = [&](int32_t pos) { return pos < span.sinks ? pos : span.sinks + (pos - window_start); };
  std::vector<float> qr(q_raw, q_raw + d);  // [head_dim]
  const int32_t q_slot = slot(q);
  rope.Apply(qr.data(), &q_slot, 1, 1);
  std::vector<double> logits;
  std::vector<int32_t> keys;
  for (int32_t k = 0; k <= q; ++k) {
    if (!(k < span.sinks || q - k < span.window)) continue;
    std::vector<float> kr(&k_raw[size_t((int64_t(k) * s.n_kv_heads + kv_head) * d)],
                          &k_raw[size_t((int64_t(k) * s.n_kv_heads + kv_head) * d)] + d);
    const int32_t k_slot = slot(k);
    rope.Apply(kr.data(), &k_slot, 1, 1);
    double dot = 0;
    for (int32_t c = 0; c < d; ++c) dot += double(qr[size_t(c)]) * kr[size_t(c)];
    logits.push_back(dot / std::sqrt(double(d)));
    keys.push_back(k);
  }
  const double m = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  std::vector<double> acc(size_t(d), 0.0);
  for (size_t i = 0; i < keys.size(); ++i) {
    const double w = std::exp(logits[i] - m);
    sum += w;
    for (int32_t c = 0; c < d; ++c)
      acc[size_t(c)] += w * v[size_t((int64_t(keys[i]) * s.n_kv_heads + kv_head) * d + c)];
  }
  for (int32_t c = 0; c < d; ++c) out[c] = float(acc[size_t(c)] / sum);
}

TEST(CachePositions, MatchesStreamingLlmAcrossRingWraps) {
  const AttentionShape s{4, 2, 8};
  const int32_t n = 70, chunk = 3;
  const Rope rope(RopeSettings{}, s.head_dim);
  const size_t q_row = size_t(s.n_heads) * s.head_dim, kv_row = size_t(s.n_kv_heads) * s.head_dim;
  const std::vector<float> q_raw = Random(n * q_row, 1), k_raw = Random(n * kv_row, 2), v = Random(n * kv_row, 3);
  for (const Span span : {Span{8, 2}, Span{5, 1}, Span{16, 4}}) {
    KvCacheOptions options;
    options.max_chunk = chunk;
    options.page_rows = 4;
    LayerKvCache cache(span, KvShape{s.n_kv_heads, s.head_dim}, options);
    double worst = 0, absolute_gap = 0;
    for (int32_t start = 0; start < n; start += chunk) {
      const int32_t len = std::min(chunk, n - start);
      std::vector<int32_t> pos(static_cast<size_t>(len));
      for (int32_t i = 0; i < len; ++i) pos[size_t(i)] = start + i;
      // What the attention block does: rotate at absolute positions, cache K and V.
      std::vector<float> q(&q_raw[start * q_row], &q_raw[(start + len) * q_row]);    // [len, n_heads, head_dim]
      std::vector<float> k(&k_raw[start * kv_row], &k_raw[(start + len) * kv_row]);  // [len, n_kv_heads, head_dim]
      rope.Apply(q.data(), pos.data(), len, s.n_heads);
      rope.Apply(k.data(), pos.data(), len, s.n_kv_heads);
      cache.Write(k.data(), &v[start * kv_row], pos.data(), len);
      AttentionArgs args;
      args.shape = s;
      args.q = q.data();
      args.q_pos = pos.data();
      args.n_q = len;
      args.kv = cache.View();
      args.span = span;
      std::vector<float> out(len * q_row);  // [len, n_heads, head_dim]
      AttendCachePositions(out.data(), args, &q_raw[start * q_row], rope);
      std::vector<float> absolute(len * q_row);  // [len, n_heads, head_dim] sinks at their own positions
      Attend(args, absolute.data());
      for (int32_t i = 0; i < len; ++i)
        for (int32_t h = 0; h < s.n_heads; ++h) {
          float expected[8];
          StreamingReference(expected, &q_raw[(start + i) * q_row + size_t(h) * s.head_dim], start + i, h, k_raw, v, s,
                             span, rope);
          for (int32_t c = 0; c < s.head_dim; ++c) {
            const size_t at = size_t(i) * q_row + size_t(h) * s.head_dim + size_t(c);
            worst = std::max(worst, double(std::fabs(out[at] - expected[c])));
            absolute_gap = std::max(absolute_gap, double(std::fabs(absolute[at] - expected[c])));
          }
        }
    }
    EXPECT_LT(worst, 1e-5) << span.ToString();
    EXPECT_GT(absolute_gap, 1e-2) << span.ToString();  // absolute positions are a different model
  }
}

TEST(CachePositions, NeedsSinks) {
  AttentionArgs args;
  args.span = Span{8, 0};
  float out = 0;
  EXPECT_THROW(AttendCachePositions(&out, args, &out, Rope(RopeSettings{}, 8)), std::invalid_argument);
}

}  // namespace
}  // namespace swan
