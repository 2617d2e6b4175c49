// The MLP gates SiluMul and GeluTanhMul (declared in ops/elementwise.h),
// vectorized with Highway's exp and tanh: glibc's scalar tanhf made Gemma's
// GELU 7x the cost of Llama's SiLU, a quarter of a small model's prefill.
#include "ops/elementwise.h"

#include <algorithm>
#include <cmath>

#include "util/parallel_ranges.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/gated_activations.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

HWY_BEFORE_NAMESPACE();
namespace swan {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// silu(g) * u = g / (1 + e^-g) * u. e^-g is taken at -g <= 88 (Highway's
// exp is valid to 104): past it the quotient is 0 to a float either way.
// Runs `vector(out, gate, up)` over n values a vector at a time; the last
// partial vector goes through the same code from zero-padded copies. A
// scalar tail (std::exp) rounded differently from Highway's exp, so a
// value's result depended on where it fell: at the end of a row alone, or
// inside a vector when rows shared the call (a server's decode batch).
template <class Vector>
void EveryValueAlike(float* out, const float* gate, const float* up, int64_t n, const Vector& vector) {
  const hn::ScalableTag<float> df;
  const int64_t L = int64_t(hn::Lanes(df));
  int64_t i = 0;
  for (; i + L <= n; i += L) vector(out + i, gate + i, up + i);
  if (i == n) return;
  HWY_ALIGN float g[hn::MaxLanes(df)] = {}, u[hn::MaxLanes(df)] = {}, o[hn::MaxLanes(df)];  // [L] the tail, padded
  std::copy(gate + i, gate + n, g);
  std::copy(up + i, up + n, u);
  vector(o, g, u);
  std::copy(o, o + (n - i), out + i);
}

void SiluMulRange(float* out, const float* gate, const float* up, int64_t n) {
  const hn::ScalableTag<float> df;
  const auto one = hn::Set(df, 1.0f), limit = hn::Set(df, 88.0f);
  EveryValueAlike(out, gate, up, n, [&](float* o, const float* gp, const float* up_) {
    const auto g = hn::LoadU(df, gp);
    const auto e = hn::Exp(df, hn::Min(hn::Neg(g), limit));
    hn::StoreU(hn::Mul(hn::Div(g, hn::Add(one, e)), hn::LoadU(df, up_)), df, o);
  });
}

// gelu_tanh(g) * u = g/2 (1 + tanh(z)) * u, z = sqrt(2/pi) (g + 0.044715 g³),
// computed as g / (1 + e^-2z) * u (1 + tanh(z) = 2 / (1 + e^-2z)): one exp
// where Highway's tanh took about twice the operations (1.6% of Gemma 3
// f16's prefill capped to AVX2). e^-2z is taken at -2z <= 88, as in SiluMul.
void GeluTanhMulRange(float* out, const float* gate, const float* up, int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCubic = 0.044715f;
  const hn::ScalableTag<float> df;
  const auto one = hn::Set(df, 1.0f), limit = hn::Set(df, 88.0f);
  const auto minus_two_scale = hn::Set(df, -2.0f * kSqrt2OverPi), cubic = hn::Set(df, kCubic);
  EveryValueAlike(out, gate, up, n, [&](float* o, const float* gp, const float* up_) {
    const auto g = hn::LoadU(df, gp);
    const auto minus_2z = hn::Mul(minus_two_scale, hn::MulAdd(hn::Mul(cubic, g), hn::Mul(g, g), g));
    const auto e = hn::Exp(df, hn::Min(minus_2z, limit));
    hn::StoreU(hn::Mul(hn::Div(g, hn::Add(one, e)), hn::LoadU(df, up_)), df, o);
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace swan
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace swan {

HWY_EXPORT(SiluMulRange);
HWY_EXPORT(GeluTanhMulRange);

// Pieces of 64K values per thread.
void SiluMul(float* out, const float* gate, const float* up, int64_t n) {
  ParallelRanges(n, int64_t(1) << 16, [&](int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(SiluMulRange)(out + begin, gate + begin, up + begin, end - begin);
  });
}

void GeluTanhMul(float* out, const float* gate, const float* up, int64_t n) {
  ParallelRanges(n, int64_t(1) << 16, [&](int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(GeluTanhMulRange)(out + begin, gate + begin, up + begin, end - begin);
  });
}

}  // namespace swan
#endif  // HWY_ONCE
