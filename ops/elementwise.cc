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

void SiluMul(float* out, const float* gate, const float* up, int64_t n) {
#pragma omp parallel for if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void GeluTanhMul(float* out, const float* gate, const float* up, int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCubic = 0.044715f;
#pragma omp parallel for if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = 0.5f * g * (1.0f + std::tanh(kSqrt2OverPi * (g + kCubic * g * g * g))) * up[i];
  }
}

void AddBias(float* x, const float* bias, int64_t n_rows, int64_t dim) {
  for (int64_t t = 0; t < n_rows; ++t) {
    float* xt = x + t * dim;
    for (int64_t i = 0; i < dim; ++i) xt[i] += bias[i];
  }
}

}  // namespace swan
