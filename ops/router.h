// Switch Attention's router (docs/design.md §4), one op for inference and
// training: a logit per token, logit = xn · w + b on the normed attention
// input, summed in double so that float rounding order does not flip a
// near-zero route; the token takes full attention iff logit > 0.
#pragma once

#include <cstdint>

namespace swan {

// The hard gate: the token attends to every earlier key.
inline bool RoutesFull(float logit) { return logit > 0.0f; }

//   logit [n], xn [n, dim], w [dim], b [1]
void RouterForward(float* logit, const float* xn, const float* w, const float* b, int64_t n, int64_t dim);
//   d_xn [n, dim] (+=: the attention input also collects Q, K and V's
//   gradients), d_w [dim] (+=), d_b [1] (+=)
void RouterBackward(float* d_xn, float* d_w, float* d_b, const float* d_logit, const float* xn, const float* w,
                    int64_t n, int64_t dim);

}  // namespace swan
