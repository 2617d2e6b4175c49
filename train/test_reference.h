// A float64 reference the train tests share: causal attention over packed
// sequences under a span, with an explicit mask, as plain loops; and random
// inputs for it.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "train/grad_check.h"
#include "train/layers.h"

namespace swan::testing {

// q [B*T, H, D], k, v [B*T, KV, D] -> out [B*T, H, D]
inline std::vector<double> AttentionRef(const std::vector<double>& q, const std::vector<double>& k,
                                        const std::vector<double>& v, const SequenceAttention& a) {
  const int32_t H = a.shape.n_heads, KV = a.shape.n_kv_heads, D = a.shape.head_dim;
  const int64_t T = a.seq;
  std::vector<double> out(q.size(), 0.0);
  const double scale = 1 / std::sqrt(double(D));
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t i = 0; i < T; ++i)
      for (int32_t h = 0; h < H; ++h) {
        const int32_t kh = h / (H / KV);
        std::vector<double> logit(size_t(T), -INFINITY);
        double max = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {
          if (!Sees(a.span, a.pos[i], a.pos[j])) continue;
          double s = 0;
          for (int32_t c = 0; c < D; ++c)
            s += q[size_t(((b * T + i) * H + h) * D + c)] * k[size_t(((b * T + j) * KV + kh) * D + c)];
          logit[size_t(j)] = s * scale;
          max = std::max(max, logit[size_t(j)]);
        }
        double sum = 0;
        for (int64_t j = 0; j < T; ++j)
          if (logit[size_t(j)] > -INFINITY) sum += std::exp(logit[size_t(j)] - max);
        for (int64_t j = 0; j < T; ++j) {
          if (logit[size_t(j)] == -INFINITY) continue;
          const double p = std::exp(logit[size_t(j)] - max) / sum;
          for (int32_t c = 0; c < D; ++c)
            out[size_t(((b * T + i) * H + h) * D + c)] += p * v[size_t(((b * T + j) * KV + kh) * D + c)];
        }
      }
  return out;
}

// Random inputs of one attention layer over packed sequences, 4 query
// heads on 2 KV heads of 8, and the weights r of a loss Σ r · out.
struct AttentionInputs {
  SequenceAttention a;
  std::vector<int32_t> pos;        // [T]
  std::vector<double> q, k, v, r;  // [N, H*D], [N, KV*D] x2, [N, H*D]

  AttentionInputs(std::mt19937_64& rng, Span span, int64_t batch, int64_t seq) {
    a.shape = AttentionShape{4, 2, 8};
    a.span = span;
    a.batch = batch;
    a.seq = seq;
    pos.resize(size_t(seq));
    std::iota(pos.begin(), pos.end(), 0);
    a.pos = pos.data();
    const int64_t N = batch * seq;
    q = RandomVector(rng, size_t(N * a.shape.n_heads * a.shape.head_dim));
    k = RandomVector(rng, size_t(N * a.shape.n_kv_heads * a.shape.head_dim));
    v = RandomVector(rng, k.size());
    r = RandomVector(rng, q.size());
  }
  AttentionInputs(const AttentionInputs&) = delete;  // a.pos points into pos
  int64_t width() const { return int64_t(a.shape.n_heads) * a.shape.head_dim; }
};

}  // namespace swan::testing
