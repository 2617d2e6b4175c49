// The running state of an online softmax for one query row, and the scalar
// steps that combine and finish such states. Shared by the fast kernel
// (finishing a tile, merging key splits) and the dual-output path.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace swan {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// A row's state over the keys seen so far: max logit m, sum of e^{logit - m}
// l, and acc = sum of e^{logit - m} v (unnormalised), acc of `dim` floats.
struct RowState {
  float* m;
  float* l;
  float* acc;  // [dim]
};

// Folds `src` into `dst`: dst becomes the state over both key sets.
inline void MergeRowState(const RowState& dst, const float* src_m, const float* src_l, const float* src_acc,
                          int64_t dim) {
  if (*src_m == kNegInf) return;  // src saw no key
  const float m = *dst.m > *src_m ? *dst.m : *src_m;
  const float a_dst = *dst.m == kNegInf ? 0.0f : std::exp(*dst.m - m);
  const float a_src = std::exp(*src_m - m);
  *dst.l = *dst.l * a_dst + *src_l * a_src;
  for (int64_t c = 0; c < dim; ++c) dst.acc[c] = dst.acc[c] * a_dst + src_acc[c] * a_src;
  *dst.m = m;
}

// Writes out = acc / (l + e^{sink}), lse = log(l e^m + e^{sink}) and
// max = m (each of lse, max may be null). `sink` is a learned sink logit or
// -inf for none. A row that saw nothing gets zeros, lse = sink (-inf without
// one) and max = -inf.
inline void FinishRow(float m, float l, const float* acc, float sink, int64_t dim, float* out, float* lse,
                      float* max = nullptr) {
  if (max) *max = m;
  float top = m > sink ? m : sink;
  if (top == kNegInf) {
    for (int64_t c = 0; c < dim; ++c) out[c] = 0.0f;
    if (lse) *lse = kNegInf;
    return;
  }
  const float a = m == kNegInf ? 0.0f : std::exp(m - top);
  const float denom = l * a + (sink == kNegInf ? 0.0f : std::exp(sink - top));
  const float inv = denom > 0.0f ? a / denom : 0.0f;
  for (int64_t c = 0; c < dim; ++c) out[c] = acc[c] * inv;
  if (lse) *lse = top + std::log(denom);
}

}  // namespace swan
