// Tests of architecture families: tiny random checkpoints written as
// safetensors, and the pieces of a plain float64 forward pass (following
// the Hugging Face modeling code) that each family's reference composes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "model/test_files.h"

namespace swan::test {

using Vec = std::vector<double>;

// Named tensors with seeded normal values, exactly representable in float32
// (so the reference and the engine start from the same numbers).
class TinyCheckpoint {
 public:
  explicit TinyCheckpoint(uint64_t seed) : rng_(seed) {}

  // A tensor of `shape` with values mean + std * N(0, 1).
  const Vec& Add(const std::string& name, const std::vector<int64_t>& shape, double std,
                 double mean = 0.0) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::normal_distribution<double> normal;
    Vec v(static_cast<size_t>(n));
    for (double& x : v) x = double(float(mean + std * normal(rng_)));
    shapes_[name] = shape;
    return values_[name] = std::move(v);
  }
  const Vec& operator[](const std::string& name) const { return values_.at(name); }

  // Writes DIR/config.json and DIR/model.safetensors without the tensors in `leave_out`.
  void Write(const std::filesystem::path& dir, const std::string& config_json,
             const std::set<std::string>& leave_out = {}) const {
    std::vector<RawTensor> tensors;
    for (const auto& [name, values] : values_) {
      if (leave_out.count(name)) continue;
      tensors.push_back(
          F32Tensor(name, shapes_.at(name), std::vector<float>(values.begin(), values.end())));
    }
    WriteFile(dir / "model.safetensors", SafetensorsBytes(tensors));
    WriteFile(dir / "config.json", config_json);
  }

 private:
  std::mt19937_64 rng_;
  std::map<std::string, std::vector<int64_t>> shapes_;
  std::map<std::string, Vec> values_;
};

// y = x w^T (+ bias): x [n, in], w [out, in], bias [out] or null -> y [n, out]
inline Vec RefLinear(const Vec& x, int64_t n, const Vec& w, int64_t out, int64_t in,
                     const Vec* bias = nullptr) {
  Vec y(static_cast<size_t>(n * out));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t o = 0; o < out; ++o) {
      double s = bias ? (*bias)[size_t(o)] : 0.0;
      for (int64_t i = 0; i < in; ++i) s += x[size_t(t * in + i)] * w[size_t(o * in + i)];
      y[size_t(t * out + o)] = s;
    }
  return y;
}

// Each row of x [rows, dim]: x / sqrt(mean(x²) + eps) * (offset + w). offset 0
// is LlamaRMSNorm, 1 Gemma's RMSNorm.
inline Vec RefRmsNorm(const Vec& x, int64_t rows, int64_t dim, const Vec& w, double eps,
                      double offset = 0.0) {
  Vec y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += x[size_t(r * dim + i)] * x[size_t(r * dim + i)];
    const double inv = 1.0 / std::sqrt(ss / double(dim) + eps);
    for (int64_t i = 0; i < dim; ++i)
      y[size_t(r * dim + i)] = x[size_t(r * dim + i)] * inv * (offset + w[size_t(i)]);
  }
  return y;
}

// HF apply_rotary_pos_emb (rotate_half) on x [n, heads, d], token t at
// position pos[t] / linear_factor (linear RoPE scaling; 1 = none).
inline void RefRope(Vec& x, int64_t n, int64_t heads, int64_t d, const std::vector<int32_t>& pos,
                    double base, double linear_factor = 1.0) {
  const int64_t half = d / 2;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      double* v = &x[size_t((t * heads + h) * d)];
      for (int64_t i = 0; i < half; ++i) {
        const double inv_freq = 1.0 / std::pow(base, double(2 * i) / double(d));
        const double angle = double(pos[size_t(t)]) / linear_factor * inv_freq;
        const double a = v[i], b = v[i + half];
        v[i] = a * std::cos(angle) - b * std::sin(angle);
        v[i + half] = b * std::cos(angle) + a * std::sin(angle);
      }
    }
}

// Causal softmax attention of n tokens at positions 0..n-1 (eager HF
// attention with GQA): key j visible to query i iff j <= i and (window == 0
// or i - j < window).
//   q [n, heads, d], k, v [n, kv_heads, d] -> out [n, heads, d]
inline Vec RefAttention(const Vec& q, const Vec& k, const Vec& v, int64_t n, int64_t heads,
                        int64_t kv_heads, int64_t d, int64_t window, double scale) {
  Vec out(static_cast<size_t>(n * heads * d), 0.0);
  const int64_t group = heads / kv_heads;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t kh = h / group;
      std::vector<double> logits;
      double top = -INFINITY;
      for (int64_t j = 0; j <= i; ++j) {
        double s = 0;
        for (int64_t c = 0; c < d; ++c)
          s += q[size_t((i * heads + h) * d + c)] * k[size_t((j * kv_heads + kh) * d + c)];
        s *= scale;
        if (window > 0 && i - j >= window) s = -INFINITY;
        logits.push_back(s);
        top = std::max(top, s);
      }
      double sum = 0;
      for (double& l : logits) sum += (l = std::exp(l - top));
      for (int64_t j = 0; j <= i; ++j)
        for (int64_t c = 0; c < d; ++c)
          out[size_t((i * heads + h) * d + c)] +=
              logits[size_t(j)] / sum * v[size_t((j * kv_heads + kh) * d + c)];
    }
  return out;
}

// Rows of `table` [vocab, dim] for `ids`.
inline Vec RefEmbed(const Vec& table, const std::vector<int32_t>& ids, int64_t dim) {
  Vec x;
  for (int32_t id : ids)
    x.insert(x.end(), table.begin() + id * dim, table.begin() + (id + 1) * dim);
  return x;
}

inline void AddInto(Vec& x, const Vec& y) {
  for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

inline double MaxAbsDiff(const std::vector<float>& a, const Vec& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

}  // namespace swan::test
