// The Hedgehog feature map (arXiv 2402.04347), the learned φ of linear
// attention (attention/linear_attention.h), one per head:
//   u = x · W + b                       x [D], W [D, F], b [F]
//   φ(x) = [softmax(u), softmax(−u)]    [2F], every entry > 0
// so φ(q) · φ(k) > 0 for any q, k, and a trained W makes it follow
// exp(q · k / sqrt(D)) (LoLCATs, arXiv 2410.10254, trains it to).
#pragma once

#include <cstdint>

namespace swan {

struct FeatureMapShape {
  int32_t heads = 0;        // maps: one per query head (φ_q) or per KV head (φ_k)
  int32_t head_dim = 0;     // D
  int32_t feature_dim = 0;  // F; φ has 2F entries
  int64_t phi_dim() const { return 2 * int64_t(feature_dim); }
};

// phi [n, heads, 2F] from x [n, heads, D], w [heads, D, F], b [heads, F].
void HedgehogForward(float* phi, const float* x, const float* w, const float* b, int64_t n, const FeatureMapShape& s);

// From d_phi [n, heads, 2F] and the forward's phi: d_w [heads, D, F] (+=),
// d_b [heads, F] (+=), dx [n, heads, D] (+=; may be null).
void HedgehogBackward(float* dx, float* d_w, float* d_b, const float* d_phi, const float* phi, const float* x,
                      const float* w, int64_t n, const FeatureMapShape& s);

// The plain float64 reference, for tests.   phi [n, heads, 2F], x [n, heads, D]
void HedgehogReference(double* phi, const double* x, const double* w, const double* b, int64_t n,
                       const FeatureMapShape& s);

// The start LoLCATs uses: W = the first F columns of the identity, scaled by
// D^(-1/4) (so u_q · u_k is q · k / sqrt(D) on those dimensions), b = 0.
//   w [heads, D, F], b [heads, F]
void InitHedgehog(float* w, float* b, const FeatureMapShape& s);

}  // namespace swan
