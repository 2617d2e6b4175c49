// e^x for the online softmax's x = score - max <= 0, in prefill
// (flash.cc) and decode (flash_decode.cc) (Highway per-target
// header: include inside a foreach_target unit). It computes e^x as
// 2^n e^r, r = x - n ln 2 in [-ln 2 / 2, ln 2 / 2], with Cephes' expf
// polynomial for e^r: about 16 operations where Highway's Exp takes about
// 25 (it scales by 2^n in two multiplications, for a range softmax does not
// need), and within 2e-7 of e^x relative on [-87, 0] (softmax_exp_test.cc;
// 7.4e-8 measured).
// x below -87 (e^x < 1.7e-38), -inf and NaN give exactly 0, so a masked
// score adds nothing; x > 0 is outside its range (no overflow check).
#if defined(SWAN_ATTENTION_SOFTMAX_EXP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SWAN_ATTENTION_SOFTMAX_EXP_INL_H_
#undef SWAN_ATTENTION_SOFTMAX_EXP_INL_H_
#else
#define SWAN_ATTENTION_SOFTMAX_EXP_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace swan {
namespace HWY_NAMESPACE {

template <class DF>
HWY_INLINE hwy::HWY_NAMESPACE::Vec<DF> SoftmaxExp(DF df, hwy::HWY_NAMESPACE::Vec<DF> x) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::RebindToSigned<DF> di;
  // n = x / ln 2 rounded to an integer, in [-126, 0] where it counts: adding
  // 1.5 2^23 rounds it (the sum's unit is 1) and leaves n in the sum's low
  // mantissa bits, read out below. Round and a checked float-to-int
  // conversion took 6 more operations on AVX2.
  const auto magic = hn::Set(df, 12582912.0f);
  const auto t = hn::MulAdd(x, hn::Set(df, 1.44269504088896341f), magic);
  const auto n = hn::Sub(t, magic);
  // r = x - n ln 2 in [-ln 2 / 2, ln 2 / 2], ln 2 in two parts so that n ln 2 is exact.
  auto r = hn::MulAdd(n, hn::Set(df, -0.693359375f), x);
  r = hn::MulAdd(n, hn::Set(df, 2.12194440e-4f), r);
  auto p = hn::Set(df, 1.9875691500e-4f);
  p = hn::MulAdd(p, r, hn::Set(df, 1.3981999507e-3f));
  p = hn::MulAdd(p, r, hn::Set(df, 8.3334519073e-3f));
  p = hn::MulAdd(p, r, hn::Set(df, 4.1665795894e-2f));
  p = hn::MulAdd(p, r, hn::Set(df, 1.6666665459e-1f));
  p = hn::MulAdd(p, r, hn::Set(df, 5.0000001201e-1f));
  const auto er = hn::Add(hn::MulAdd(p, hn::Mul(r, r), r), hn::Set(df, 1.0f));  // e^r in [0.70, 1.42]
  // e^n ln 2 e^r: n added to the exponent field (a normal float for n >= -125).
  // t's bits are 0x4B400000 + n, and 0x4B400000 shifted by 23 is 0 mod 2^32.
  const auto scaled = hn::BitCast(df, hn::Add(hn::BitCast(di, er), hn::ShiftLeft<23>(hn::BitCast(di, t))));
  return hn::IfThenElseZero(hn::Ge(x, hn::Set(df, -87.0f)), scaled);
}

}  // namespace HWY_NAMESPACE
}  // namespace swan
HWY_AFTER_NAMESPACE();

#endif  // SWAN_ATTENTION_SOFTMAX_EXP_INL_H_
