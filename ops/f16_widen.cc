#include "ops/f16_widen.h"

#include "util/bf16.h"
#include "util/f16.h"
#include "util/parallel_ranges.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/f16_widen.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "ops/f16_load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace swan {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void WidenRange(float* dst, const uint16_t* src, int64_t n) {
  const hn::ScalableTag<float> df;
  const int64_t L = int64_t(hn::Lanes(df));
  int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(LoadF16(df, src + i), df, dst + i);
  for (; i < n; ++i) dst[i] = F16ToF32(src[i]);
}

// bf16 is float32's top half: each value shifted into place.
void WidenBF16Range(float* dst, const uint16_t* src, int64_t n) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du32;
  const hn::Rebind<uint16_t, decltype(df)> du16;
  const int64_t L = int64_t(hn::Lanes(df));
  int64_t i = 0;
  for (; i + L <= n; i += L)
    hn::StoreU(hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, src + i)))), df, dst + i);
  for (; i < n; ++i) dst[i] = BF16ToF32(src[i]);
}

}  // namespace HWY_NAMESPACE
}  // namespace swan
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace swan {

HWY_EXPORT(WidenRange);
HWY_EXPORT(WidenBF16Range);

// Pieces of 64K values per thread.
constexpr int64_t kWidenPiece = int64_t(1) << 16;

void WidenF16(float* dst, const uint16_t* src, int64_t n) {
  ParallelRanges(n, kWidenPiece, [&](int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(WidenRange)(dst + begin, src + begin, end - begin);
  });
}

void WidenBF16(float* dst, const uint16_t* src, int64_t n) {
  ParallelRanges(n, kWidenPiece, [&](int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(WidenBF16Range)(dst + begin, src + begin, end - begin);
  });
}

}  // namespace swan
#endif  // HWY_ONCE
