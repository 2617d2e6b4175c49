#include "ops/elementwise.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace swan {

void RmsNorm(float* out, const float* x, const float* weight, float eps, int64_t n_tokens,
             int64_t dim) {
#pragma omp parallel for if (n_tokens > 16)
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* xt = x + t * dim;
    float* ot = out + t * dim;
    double sum_sq = 0;
    for (int64_t i = 0; i < dim; ++i) sum_sq += double(xt[i]) * xt[i];
    const float inv = float(1.0 / std::sqrt(sum_sq / double(dim) + double(eps)));
    for (int64_t i = 0; i < dim; ++i) ot[i] = xt[i] * inv * weight[i];
  }
}

void AddBias(float* x, const float* bias, int64_t n_rows, int64_t dim) {
  for (int64_t t = 0; t < n_rows; ++t) {
    float* xt = x + t * dim;
    for (int64_t i = 0; i < dim; ++i) xt[i] += bias[i];
  }
}

void AddBiasBackward(float* d_bias, const float* dx, int64_t n_rows, int64_t dim) {
  for (int64_t t = 0; t < n_rows; ++t) {
    const float* row = dx + t * dim;
    for (int64_t i = 0; i < dim; ++i) d_bias[i] += row[i];
  }
}

}  // namespace swan
