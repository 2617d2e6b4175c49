#include "ops/bf16_round.h"

#include "util/bf16.h"
#include "util/f16.h"
#include "util/parallel_ranges.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/bf16_round.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "ops/f16_load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace swan {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// bf16 bits of L float32 lanes, rounded to nearest even; NaN stays NaN.
template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> RoundVec(DF df, hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du32;
  const hn::RebindToSigned<DF> di32;
  const hn::Rebind<uint16_t, DF> du16;
  const auto bits = hn::BitCast(du32, v);
  // Nearest even: add 0x7fff plus the lowest kept bit, then truncate.
  const auto odd = hn::And(hn::ShiftRight<16>(bits), hn::Set(du32, 1u));
  const auto rounded = hn::Add(bits, hn::Add(hn::Set(du32, 0x7fffu), odd));
  // NaN: truncate and set the quiet bit, so rounding never makes it infinite.
  const auto quiet = hn::Or(bits, hn::Set(du32, 0x00400000u));
  // (|bits| > infinity's bits, compared as int32: float compares are ordered)
  const auto magnitude = hn::BitCast(di32, hn::And(bits, hn::Set(du32, 0x7fffffffu)));
  const auto nan = hn::RebindMask(du32, hn::Gt(magnitude, hn::Set(di32, 0x7f800000)));
  const auto kept = hn::IfThenElse(nan, quiet, rounded);
  // The top halves (at most 0xffff) fit int32, whose demotion saturates.
  return hn::DemoteTo(du16, hn::BitCast(di32, hn::ShiftRight<16>(kept)));
}

void RoundRange(uint16_t* dst, const float* src, int64_t n) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<uint16_t, decltype(df)> du16;
  const int64_t L = int64_t(hn::Lanes(df));
  int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(RoundVec(df, hn::LoadU(df, src + i)), du16, dst + i);
  for (; i < n; ++i) dst[i] = F32ToBF16(src[i]);
}

void F16Range(uint16_t* dst, const uint16_t* src, int64_t n) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<uint16_t, decltype(df)> du16;
  const int64_t L = int64_t(hn::Lanes(df));
  int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(RoundVec(df, LoadF16(df, src + i)), du16, dst + i);
  for (; i < n; ++i) dst[i] = F32ToBF16(F16ToF32(src[i]));
}

}  // namespace HWY_NAMESPACE
}  // namespace swan
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace swan {

HWY_EXPORT(RoundRange);
HWY_EXPORT(F16Range);

void RoundToBF16(uint16_t* dst, const float* src, int64_t n) {
  // Pieces of 64K values per thread.
  ParallelRanges(n, int64_t(1) << 16, [&](int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(RoundRange)(dst + begin, src + begin, end - begin);
  });
}

void F16ToBF16(uint16_t* dst, const uint16_t* src, int64_t n) {
  ParallelRanges(n, int64_t(1) << 16, [&](int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(F16Range)(dst + begin, src + begin, end - begin);
  });
}

}  // namespace swan
#endif  // HWY_ONCE
