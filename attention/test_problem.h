// Random attention problems for tests and benchmarks: queries, a KV view
// (optionally bf16 or q8_0, shuffled, with empty slots) and reference
// comparison.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "attention/attention.h"
#include "attention/kv_rows.h"
#include "ops/quant_blocks.h"
#include "util/bf16.h"

namespace swan::testing {

struct Problem {
  AttentionShape shape;
  Span span;
  std::vector<float> q;            // [n_q, n_heads, head_dim]
  std::vector<int32_t> q_pos;      // [n_q]
  std::vector<float> k, v;         // [n_rows, n_kv_heads, head_dim] (f32 storage)
  std::vector<uint16_t> k16, v16;  // same, bf16 storage
  std::vector<uint8_t> k8, v8;     // same, q8_0 blocks (head_dim a multiple of 32)
  std::vector<int32_t> k_pos;      // [n_rows], -1 = empty slot
  std::vector<float> sinks;        // [n_heads] learned sink logits, empty = none
  KvType type = KvType::kF32;

  int64_t n_q() const { return int64_t(q_pos.size()); }
  int64_t n_rows() const { return int64_t(k_pos.size()); }

  AttentionArgs Args() const {
    AttentionArgs a;
    a.shape = shape;
    a.q = q.data();
    a.q_pos = q_pos.data();
    a.n_q = n_q();
    a.kv.k = type == KvType::kF32    ? static_cast<const void*>(k.data())
             : type == KvType::kQ8_0 ? static_cast<const void*>(k8.data())
                                     : k16.data();
    a.kv.v = type == KvType::kF32    ? static_cast<const void*>(v.data())
             : type == KvType::kQ8_0 ? static_cast<const void*>(v8.data())
                                     : v16.data();
    a.kv.pos = k_pos.data();
    a.kv.n_rows = n_rows();
    a.kv.type = type;
    a.span = span;
    a.sink_logits = sinks.empty() ? nullptr : sinks.data();
    return a;
  }
};

// A prefill: n queries at positions [start, start + n) over keys at
// [0, start + n) stored in order. Values ~ N(0, 1), queries scaled so that
// logits have a spread like a trained model's.
inline Problem MakePrefill(std::mt19937& rng, AttentionShape shape, Span span, int64_t n_keys, int64_t n_q,
                           bool learned_sinks = false, KvType type = KvType::kF32) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Problem p;
  p.shape = shape;
  p.span = span;
  p.type = type;
  const int64_t d = shape.head_dim;
  p.q.resize(size_t(n_q * shape.n_heads * d));
  for (auto& x : p.q) x = normal(rng) * 1.5f;
  p.k.resize(size_t(n_keys * shape.n_kv_heads * d));
  p.v.resize(p.k.size());
  for (auto& x : p.k) x = normal(rng);
  for (auto& x : p.v) x = normal(rng);
  if (type == KvType::kBF16) {
    // bf16 storage: the reference reads the same rounded values.
    p.k16.resize(p.k.size());
    p.v16.resize(p.v.size());
    for (size_t i = 0; i < p.k.size(); ++i) {
      p.k16[i] = F32ToBF16(p.k[i]);
      p.v16[i] = F32ToBF16(p.v[i]);
    }
  }
  if (type == KvType::kQ8_0) {
    // q8_0 storage: the reference reads the same blocks.
    p.k8.resize(size_t(KvBytes(type, int64_t(p.k.size()))));
    p.v8.resize(p.k8.size());
    QuantizeRowQ8_0(reinterpret_cast<BlockQ8_0*>(p.k8.data()), p.k.data(), int64_t(p.k.size()));
    QuantizeRowQ8_0(reinterpret_cast<BlockQ8_0*>(p.v8.data()), p.v.data(), int64_t(p.v.size()));
  }
  p.k_pos.resize(size_t(n_keys));
  std::iota(p.k_pos.begin(), p.k_pos.end(), 0);
  p.q_pos.resize(size_t(n_q));
  std::iota(p.q_pos.begin(), p.q_pos.end(), int32_t(n_keys - n_q));
  if (learned_sinks) {
    p.sinks.resize(size_t(shape.n_heads));
    for (auto& s : p.sinks) s = normal(rng) * 2.0f;
  }
  return p;
}

// max |a - b| / max |b|: the error relative to the tensor's scale.
inline double RelativeError(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isinf(b[i]) && a[i] == b[i]) continue;
    diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// The queries of `a` [n_q, heads, head_dim] rounded to bf16, as the bf16
// dot-product decode kernel (flash_decode_bf16.h) multiplies them: the
// reference's input for a call that kernel runs.
inline std::vector<float> BF16Queries(const AttentionArgs& a) {
  std::vector<float> q(a.q, a.q + a.n_q * a.shape.n_heads * a.shape.head_dim);
  for (float& x : q) x = BF16ToF32(F32ToBF16(x));
  return q;
}

// What is left of that kernel's error once its queries are rounded as it
// rounds them is its rounding of the probabilities to bf16, 2^-9 of each at
// most: an output, sum_j p_j v_j / l, moves by at most 2^-9 max_j |v_j| (l
// sums the unrounded p_j). The scores, and so lse and max, are float32's.
inline double BF16ProbabilitiesBound(const AttentionArgs& a) {
  double v_max = 0;
  for (int64_t j = 0; j < a.kv.n_rows; ++j)
    for (int32_t h = 0; h < a.shape.n_kv_heads; ++h)
      for (int64_t c = 0; c < a.shape.head_dim; ++c)
        v_max = std::max(v_max, std::fabs(KvElement(a.kv, a.shape, j, h, c, /*is_key=*/false)));
  return v_max / 512;
}

inline double MaxAbsDifference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
  return diff;
}

}  // namespace swan::testing
