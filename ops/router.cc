#include "ops/router.h"

#include "util/parallel_ranges.h"

namespace swan {

void RouterForward(float* logit, const float* xn, const float* w, const float* b, int64_t n, int64_t dim) {
  ParallelFor(n, n * dim > 65536, [&](int64_t t) {
    double s = b[0];
    for (int64_t i = 0; i < dim; ++i) s += double(xn[t * dim + i]) * w[i];
    logit[t] = float(s);
  });
}

void RouterBackward(float* d_xn, float* d_w, float* d_b, const float* d_logit, const float* xn, const float* w,
                    int64_t n, int64_t dim) {
  double db = 0;
  for (int64_t t = 0; t < n; ++t) db += d_logit[t];
  d_b[0] += float(db);
  ParallelFor(dim, n * dim > 65536, [&](int64_t i) {
    double s = 0;
    for (int64_t t = 0; t < n; ++t) s += double(d_logit[t]) * xn[t * dim + i];
    d_w[i] += float(s);
  });
  ParallelFor(n, n * dim > 65536, [&](int64_t t) {
    for (int64_t i = 0; i < dim; ++i) d_xn[t * dim + i] += d_logit[t] * w[i];
  });
}

}  // namespace swan
