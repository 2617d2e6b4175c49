#include "ops/rope.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "util/parallel_ranges.h"

namespace swan {
namespace {

constexpr double kPi = 3.14159265358979323846;

// YaRN: the dimension index whose wavelength fits `n_rotations` times in the
// original context (transformers' find_correction_dim).
double CorrectionDim(double n_rotations, int32_t dim, double base, double max_pos) {
  return (dim * std::log(max_pos / (n_rotations * 2 * kPi))) / (2 * std::log(base));
}

}  // namespace

std::string RopeScaling::ToString() const {
  std::ostringstream s;
  switch (kind) {
    case Kind::kNone: return "none";
    case Kind::kLinear: s << "linear x" << factor; break;
    case Kind::kYarn: s << "yarn x" << factor << " (orig " << original_max_position_embeddings << ")"; break;
    case Kind::kLlama3: s << "llama3 x" << factor << " (orig " << original_max_position_embeddings << ")"; break;
    case Kind::kFrequencyFactors: {
      const auto [low, high] = std::minmax_element(frequency_factors.begin(), frequency_factors.end());
      s << "per-freq";
      if (low != frequency_factors.end()) s << std::setprecision(3) << " x" << *low << "-" << *high;
      break;
    }
  }
  return s.str();
}

std::string RopeSettings::ToString() const {
  if (!enabled) return "nope";
  std::ostringstream s;
  s << "rope " << base;
  if (scaling.kind != RopeScaling::Kind::kNone) s << " " << scaling.ToString();
  return s.str();
}

Rope::Rope(const RopeSettings& settings, int32_t head_dim) : enabled_(settings.enabled), head_dim_(head_dim) {
  if (head_dim <= 0 || head_dim % 2 != 0)
    throw std::invalid_argument("RoPE needs an even head_dim, got " + std::to_string(head_dim));
  const int32_t half = head_dim / 2;
  const double base = settings.base;
  if (!(base > 1.0)) throw std::invalid_argument("RoPE base must be > 1, got " + std::to_string(base));
  inv_freq_.resize(size_t(half));
  for (int32_t i = 0; i < half; ++i) inv_freq_[size_t(i)] = std::pow(base, -2.0 * i / head_dim);

  const RopeScaling& sc = settings.scaling;
  if (sc.kind != RopeScaling::Kind::kNone && !(sc.factor > 0))
    throw std::invalid_argument("RoPE scaling factor must be > 0");
  switch (sc.kind) {
    case RopeScaling::Kind::kNone: break;
    case RopeScaling::Kind::kFrequencyFactors:
      if (sc.frequency_factors.size() != size_t(half))
        throw std::invalid_argument("per-frequency RoPE factors: " + std::to_string(sc.frequency_factors.size()) +
                                    " for " + std::to_string(half) + " frequencies");
      for (int32_t i = 0; i < half; ++i) {
        const double f = sc.frequency_factors[size_t(i)];
        if (!(f > 0) || !std::isfinite(f))
          throw std::invalid_argument("per-frequency RoPE factor " + std::to_string(i) + " is " + std::to_string(f) +
                                      ", not a positive number");
        inv_freq_[size_t(i)] /= f;
      }
      break;
    case RopeScaling::Kind::kLinear:
      for (double& f : inv_freq_) f /= sc.factor;
      break;
    case RopeScaling::Kind::kLlama3: {
      const double orig = double(sc.original_max_position_embeddings);
      if (orig <= 0) throw std::invalid_argument("llama3 RoPE scaling needs original_max_position_embeddings");
      const double low_wavelen = orig / sc.low_freq_factor;
      const double high_wavelen = orig / sc.high_freq_factor;
      for (double& f : inv_freq_) {
        const double wavelen = 2 * kPi / f;
        if (wavelen > low_wavelen) {
          f /= sc.factor;
        } else if (wavelen >= high_wavelen) {
          const double smooth = (orig / wavelen - sc.low_freq_factor) / (sc.high_freq_factor - sc.low_freq_factor);
          f = (1 - smooth) * f / sc.factor + smooth * f;
        }
      }
      break;
    }
    case RopeScaling::Kind::kYarn: {
      const double orig = double(sc.original_max_position_embeddings);
      if (orig <= 0) throw std::invalid_argument("YaRN RoPE scaling needs original_max_position_embeddings");
      attention_factor_ =
          sc.attention_factor > 0 ? sc.attention_factor : (sc.factor <= 1 ? 1.0 : 0.1 * std::log(sc.factor) + 1.0);
      double low = std::floor(CorrectionDim(sc.beta_fast, head_dim, base, orig));
      double high = std::ceil(CorrectionDim(sc.beta_slow, head_dim, base, orig));
      low = std::max(low, 0.0);
      high = std::min(high, double(head_dim - 1));
      if (low == high) high += 0.001;  // avoid a division by zero in the ramp
      for (int32_t i = 0; i < half; ++i) {
        const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
        const double extrapolation_weight = 1.0 - ramp;
        const double extrapolated = inv_freq_[size_t(i)];
        const double interpolated = extrapolated / sc.factor;
        inv_freq_[size_t(i)] = interpolated * (1 - extrapolation_weight) + extrapolated * extrapolation_weight;
      }
      break;
    }
  }
}

std::vector<double> FrequencyFactors(const RopeSettings& settings, int32_t head_dim) {
  if (settings.scaling.kind == RopeScaling::Kind::kFrequencyFactors) return settings.scaling.frequency_factors;
  RopeSettings plain = settings;
  plain.scaling = RopeScaling{};
  const std::vector<double> unscaled = Rope(plain, head_dim).inv_freq(), scaled = Rope(settings, head_dim).inv_freq();
  std::vector<double> factors(unscaled.size());  // [head_dim / 2]
  for (size_t i = 0; i < factors.size(); ++i) factors[i] = unscaled[i] / scaled[i];
  return factors;
}

void Rope::TokenCosSin(int32_t pos, float* cos_sin) const {
  const int32_t half = head_dim_ / 2;
  for (int32_t i = 0; i < half; ++i) {
    const double angle = double(pos) * inv_freq_[size_t(i)];
    cos_sin[i] = float(std::cos(angle) * attention_factor_);
    cos_sin[half + i] = float(std::sin(angle) * attention_factor_);
  }
}

void Rope::CosSin(const int32_t* pos, int64_t n_tokens, float* out) const {
  for (int64_t t = 0; t < n_tokens; ++t) TokenCosSin(pos[t], out + t * head_dim_);
}

void Rope::Apply(float* x, const int32_t* pos, int64_t n_tokens, int32_t n_heads) const {
  Apply(x, n_heads, nullptr, 0, pos, n_tokens);
}

void Rope::Apply(float* q, int32_t q_heads, float* k, int32_t k_heads, const int32_t* pos, int64_t n_tokens) const {
  if (!enabled_) return;
  const int32_t half = head_dim_ / 2;
  ParallelFor(n_tokens, n_tokens > 16, [&](int64_t t) {
    thread_local std::vector<float> cos_sin;  // [2, head_dim / 2] this token's cosines, then sines
    if (cos_sin.size() < size_t(2 * half)) cos_sin.resize(size_t(2 * half));
    float* cos_t = cos_sin.data();
    float* sin_t = cos_t + half;
    TokenCosSin(pos[t], cos_t);
    auto rotate = [&](float* x, int32_t n_heads) {
      for (int32_t h = 0; h < n_heads; ++h) {
        float* v = x + (t * n_heads + h) * head_dim_;  // [head_dim]
        for (int32_t i = 0; i < half; ++i) {
          const float a = v[i], b = v[i + half];
          v[i] = a * cos_t[i] - b * sin_t[i];
          v[i + half] = b * cos_t[i] + a * sin_t[i];
        }
      }
    };
    rotate(q, q_heads);
    if (k) rotate(k, k_heads);
  });
}

}  // namespace swan
