// Widening q8_0 KV rows to float, per Highway target: shared by the
// prefill/backward tiles and the decode kernel. Highway "-inl" header:
// included once per target from files that use foreach_target.
#if defined(SWAN_ATTENTION_WIDEN_Q8_0_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SWAN_ATTENTION_WIDEN_Q8_0_INL_H_
#undef SWAN_ATTENTION_WIDEN_Q8_0_INL_H_
#else
#define SWAN_ATTENTION_WIDEN_Q8_0_INL_H_
#endif

#include <cstdint>
#include <cstring>

#include <hwy/highway.h>

#include "util/f16.h"

HWY_BEFORE_NAMESPACE();
namespace swan {
namespace HWY_NAMESPACE {
// dst [n] = the values of `n` / 32 q8_0 blocks at `blocks` (scale x int8).
HWY_INLINE void WidenQ8_0(const uint8_t* HWY_RESTRICT blocks, int64_t n, float* HWY_RESTRICT dst) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di32;
  const hn::Rebind<int8_t, decltype(df)> di8;
  constexpr int64_t L = int64_t(hn::MaxLanes(hn::ScalableTag<float>()));
  for (int64_t b = 0; b < n / 32; ++b, blocks += 34, dst += 32) {
    uint16_t half;
    std::memcpy(&half, blocks, 2);
    const int8_t* q = reinterpret_cast<const int8_t*>(blocks + 2);
    if constexpr (32 % L == 0) {
      const auto scale = hn::Set(df, F16ToF32(half));
      for (int64_t c = 0; c < 32; c += L)
        hn::StoreU(hn::Mul(scale, hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, q + c)))), df, dst + c);
    } else {
      for (int64_t c = 0; c < 32; ++c) dst[c] = F16ToF32(half) * float(q[c]);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace swan
HWY_AFTER_NAMESPACE();

#endif  // include guard
