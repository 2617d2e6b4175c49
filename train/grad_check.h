// Helpers for gradient checks in tests: central differences of a float64
// function and a relative error measure.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace swan::testing {

// d f / d x_i by central differences, f evaluated in float64.
template <typename F>
std::vector<double> NumericGradient(F&& f, std::vector<double> x, double h = 1e-6) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    const double step = h * std::max(1.0, std::abs(keep));
    x[i] = keep + step;
    const double up = f(x);
    x[i] = keep - step;
    const double down = f(x);
    x[i] = keep;
    g[i] = (up - down) / (2 * step);
  }
  return g;
}

// max_i |a_i - b_i| / max(max_i |b_i|, floor): error relative to the
// tensor's scale, so tiny entries do not dominate.
inline double RelativeError(const std::vector<float>& a, const std::vector<double>& b, double floor = 1e-6) {
  double diff = 0, scale = floor;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return diff / scale;
}

inline std::vector<double> RandomVector(std::mt19937_64& rng, size_t n, double scale = 1.0) {
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

inline std::vector<float> ToFloat(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

}  // namespace swan::testing
