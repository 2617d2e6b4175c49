#include "ops/elementwise.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "util/parallel_ranges.h"

namespace swan {

// RmsNorm: ops/rms_norm.cc (Highway).

void RmsNormBackward(float* dx, float* d_weight, const float* d_out, const float* x, const float* rstd,
                     const float* weight, int64_t n, int64_t dim, bool accumulate_dx) {
  // With g = d_out * weight and xhat = x * rstd:
  //   dx = rstd * (g - xhat * mean(g * xhat)),   d_weight += sum_t d_out * xhat
  ParallelFor(n, n > 64, [&](int64_t t) {
    const float* xt = x + t * dim;
    const float* gt = d_out + t * dim;
    float* dxt = dx + t * dim;
    const float r = rstd[t];
    double dot = 0;
    for (int64_t i = 0; i < dim; ++i) dot += double(gt[i]) * weight[i] * xt[i] * r;
    const float mean = float(dot / double(dim));
    for (int64_t i = 0; i < dim; ++i) {
      const float v = r * (gt[i] * weight[i] - xt[i] * r * mean);
      dxt[i] = accumulate_dx ? dxt[i] + v : v;
    }
  });
  if (!d_weight) return;
  ParallelFor(dim, n * dim > 65536, [&](int64_t i) {
    double acc = 0;
    for (int64_t t = 0; t < n; ++t) acc += double(d_out[t * dim + i]) * x[t * dim + i] * rstd[t];
    d_weight[i] += float(acc);
  });
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

void SiluMulBackward(float* d_gate, float* d_up, const float* d_out, const float* gate, const float* up, int64_t n) {
  ParallelFor(n, n > 65536, [&](int64_t i) {
    const float g = gate[i];
    const float sig = 1.0f / (1.0f + std::exp(-g));
    const float silu = g * sig;
    // silu'(g) = sig * (1 + g * (1 - sig))
    const float d = d_out[i];
    d_up[i] = d * silu;
    d_gate[i] = d * up[i] * sig * (1.0f + g * (1.0f - sig));
  });
}

void GeluTanhMulBackward(float* d_gate, float* d_up, const float* d_out, const float* gate, const float* up,
                         int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCubic = 0.044715f;
  ParallelFor(n, n > 65536, [&](int64_t i) {
    const float g = gate[i];
    const float th = std::tanh(kSqrt2OverPi * (g + kCubic * g * g * g));
    const float gelu = 0.5f * g * (1.0f + th);
    // gelu'(g) = (1 + th) / 2 + g / 2 (1 - th²) sqrt(2/pi) (1 + 3 · 0.044715 g²)
    const float d_inner = kSqrt2OverPi * (1.0f + 3.0f * kCubic * g * g);
    const float d = d_out[i];
    d_up[i] = d * gelu;
    d_gate[i] = d * up[i] * (0.5f * (1.0f + th) + 0.5f * g * (1.0f - th * th) * d_inner);
  });
}

}  // namespace swan
