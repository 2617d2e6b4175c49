// A vector of float32 from float16 bits, for the Highway kernels that read
// f16 weights (per-target header: include inside a foreach_target unit).
// On AVX2 and AVX-512, F16C promotes in one instruction. Below them,
// Highway 1.0.3's emulated PromoteTo turns infinities and NaN into finite
// numbers (ops/f16_widen_test.cc found it), so those targets convert each
// lane exactly (util/f16.h).

#if defined(SWAN_OPS_F16_LOAD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SWAN_OPS_F16_LOAD_INL_H_
#undef SWAN_OPS_F16_LOAD_INL_H_
#else
#define SWAN_OPS_F16_LOAD_INL_H_
#endif

#include <hwy/highway.h>

#include <cstring>

#include "util/f16.h"

HWY_BEFORE_NAMESPACE();
namespace swan {
namespace HWY_NAMESPACE {

// Lanes(df) values from p [Lanes(df)] float16 bits.
template <class DF>
HWY_INLINE hwy::HWY_NAMESPACE::Vec<DF> LoadF16(DF df, const uint16_t* p) {
  namespace hn = hwy::HWY_NAMESPACE;
#if HWY_ARCH_X86 && HWY_TARGET > HWY_AVX2
  HWY_ALIGN float lanes[hn::MaxLanes(df)];
  for (size_t i = 0; i < hn::Lanes(df); ++i) lanes[i] = F16ToF32(p[i]);
  return hn::Load(df, lanes);
#else
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
#endif
}

// One float16 (a block's scale) as float32: F16C where the target has it.
HWY_INLINE float LoadOneF16(const void* p) {
  namespace hn = hwy::HWY_NAMESPACE;
#if HWY_ARCH_X86 && HWY_TARGET > HWY_AVX2
  uint16_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  return F16ToF32(bits);
#else
  const hn::CappedTag<float, 1> d1;
  const hn::Rebind<hwy::float16_t, decltype(d1)> dh1;
  return hn::GetLane(hn::PromoteTo(d1, hn::LoadU(dh1, static_cast<const hwy::float16_t*>(p))));
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace swan
HWY_AFTER_NAMESPACE();

#endif  // SWAN_OPS_F16_LOAD_INL_H_
