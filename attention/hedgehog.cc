#include "attention/hedgehog.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace swan {
namespace {

// out [F] = softmax(sign * u)
void Softmax(float* out, const double* u, double sign, int64_t F) {
  double max = -INFINITY;
  for (int64_t f = 0; f < F; ++f) max = std::max(max, sign * u[f]);
  double sum = 0;
  for (int64_t f = 0; f < F; ++f) sum += std::exp(sign * u[f] - max);
  for (int64_t f = 0; f < F; ++f) out[f] = float(std::exp(sign * u[f] - max) / sum);
}

}  // namespace

void HedgehogForward(float* phi, const float* x, const float* w, const float* b, int64_t n, const FeatureMapShape& s) {
  const int64_t D = s.head_dim, F = s.feature_dim, P = s.phi_dim();
#pragma omp parallel for if (n * s.heads * D * F > 65536)
  for (int64_t t = 0; t < n; ++t) {
    std::vector<double> u(static_cast<size_t>(F));  // [F]
    for (int64_t h = 0; h < s.heads; ++h) {
      const float* xh = x + (t * s.heads + h) * D;
      const float* wh = w + h * D * F;
      for (int64_t f = 0; f < F; ++f) u[size_t(f)] = b[h * F + f];
      for (int64_t d = 0; d < D; ++d)
        for (int64_t f = 0; f < F; ++f) u[size_t(f)] += double(xh[d]) * wh[d * F + f];
      float* out = phi + (t * s.heads + h) * P;
      Softmax(out, u.data(), 1.0, F);
      Softmax(out + F, u.data(), -1.0, F);
    }
  }
}

void HedgehogBackward(float* dx, float* d_w, float* d_b, const float* d_phi, const float* phi, const float* x,
                      const float* w, int64_t n, const FeatureMapShape& s) {
  const int64_t D = s.head_dim, F = s.feature_dim, P = s.phi_dim();
  std::vector<double> du(size_t(n * F));  // [n, F] of one head
  for (int64_t h = 0; h < s.heads; ++h) {
    // softmax'(u) for both halves: du = s1 ⊙ (d1 − s1·d1) − s2 ⊙ (d2 − s2·d2).
    for (int64_t t = 0; t < n; ++t) {
      const float* p = phi + (t * s.heads + h) * P;
      const float* g = d_phi + (t * s.heads + h) * P;
      double dot1 = 0, dot2 = 0;
      for (int64_t f = 0; f < F; ++f) {
        dot1 += double(p[f]) * g[f];
        dot2 += double(p[F + f]) * g[F + f];
      }
      for (int64_t f = 0; f < F; ++f) du[size_t(t * F + f)] = p[f] * (g[f] - dot1) - p[F + f] * (g[F + f] - dot2);
    }
    const float* wh = w + h * D * F;
    // d_w [D, F] += xᵀ du, d_b += Σ_t du
#pragma omp parallel for if (n * D * F > 65536)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t f = 0; f < F; ++f) {
        double acc = 0;
        for (int64_t t = 0; t < n; ++t) acc += double(x[(t * s.heads + h) * D + d]) * du[size_t(t * F + f)];
        d_w[(h * D + d) * F + f] += float(acc);
      }
    for (int64_t f = 0; f < F; ++f) {
      double acc = 0;
      for (int64_t t = 0; t < n; ++t) acc += du[size_t(t * F + f)];
      d_b[h * F + f] += float(acc);
    }
    if (!dx) continue;
      // dx [D] += W du
#pragma omp parallel for if (n * D * F > 65536)
    for (int64_t t = 0; t < n; ++t)
      for (int64_t d = 0; d < D; ++d) {
        double acc = 0;
        for (int64_t f = 0; f < F; ++f) acc += double(wh[d * F + f]) * du[size_t(t * F + f)];
        dx[(t * s.heads + h) * D + d] += float(acc);
      }
  }
}

void HedgehogReference(double* phi, const double* x, const double* w, const double* b, int64_t n,
                       const FeatureMapShape& s) {
  const int64_t D = s.head_dim, F = s.feature_dim;
  std::vector<double> u(static_cast<size_t>(F));  // [F]
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int64_t f = 0; f < F; ++f) {
        u[size_t(f)] = b[h * F + f];
        for (int64_t d = 0; d < D; ++d) u[size_t(f)] += x[(t * s.heads + h) * D + d] * w[(h * D + d) * F + f];
      }
      double* out = phi + (t * s.heads + h) * 2 * F;
      for (const double sign : {1.0, -1.0}) {
        double sum = 0;
        for (const double a : u) sum += std::exp(sign * a);
        for (int64_t f = 0; f < F; ++f) out[(sign > 0 ? 0 : F) + f] = std::exp(sign * u[size_t(f)]) / sum;
      }
    }
}

void InitHedgehog(float* w, float* b, const FeatureMapShape& s) {
  const int64_t D = s.head_dim, F = s.feature_dim;
  const float scale = float(std::pow(double(D), -0.25));
  std::fill(w, w + s.heads * D * F, 0.0f);
  std::fill(b, b + s.heads * F, 0.0f);
  for (int64_t h = 0; h < s.heads; ++h)
    for (int64_t f = 0; f < std::min(D, F); ++f) w[(h * D + f) * F + f] = scale;
}

}  // namespace swan
