// Decode tasks of the fast kernel (FlashPlan::decode): one query or a few,
// whose rows are the G query heads of each KV head (R = n_q x G rows per
// KV head); a task runs a contiguous run of key blocks over its KV heads.
// Decode reads every K and V byte once and does a few multiply-adds per
// byte, so it runs at the memory bound only if it keeps loads in flight and
// spends no instruction on anything but the needed arithmetic:
//  * K and V rows are read straight into registers, bf16 promoted there: a
//    vector of L bf16 pairs gives its even and its odd elements as two f32
//    vectors (a shift, a mask). Queries and output accumulators are kept in
//    that "pair order": each 2L-element step of head_dim stored as its L
//    even then its L odd elements. A dot product does not care about the
//    order, and the outputs are put back in order once at the end.
//  * Scores: a vector accumulator along head_dim per (key, row); two keys'
//    accumulators fold into one vector, and L/2 such vectors into the L
//    scores of L keys (unpacks and adds within 128-bit blocks, then the
//    blocks' sums) instead of one horizontal sum per (key, row).
//  * The softmax runs on scores stored [row][key]: exp over the keys of the
//    real rows, none over rows padded to a vector.
//  * P.V: each V row is loaded once per block for all rows of its KV head.
//  * While a key block is computed, the next one is requested (software
//    prefetch): decode does too little work per byte for the hardware
//    prefetchers alone to keep enough cache lines in flight.
#include "attention/flash_decode.h"
#include "attention/flash_decode_bf16.h"

#include <hwy/cache_control.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "attention/attention.h"
#include "attention/block_visibility.h"
#include "attention/decode_walk.h"
#include "attention/kv_rows.h"
#include "attention/softmax_state.h"
#include "ops/quant_blocks.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "attention/flash_decode.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include "attention/softmax_exp-inl.h"

#include "ops/f16_load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace swan {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr int64_t kLanes = int64_t(hn::MaxLanes(DF()));
// Rows whose accumulators a kernel keeps in registers: 16 accumulators and
// a few operands fit 32 vector registers (AVX-512), 8 fit 16.
constexpr size_t kMaxRegisterRows = HWY_MAX_BYTES >= 64 ? 8 : 4;
static_assert(kBlockKeys % kLanes == 0, "score rows hold whole vectors of keys");

// Where each part of a head_dim row lies in a query or accumulator row:
// [0, pairs) in pair order (whole 2L steps), then one L step in order if
// `one`, then `part` < L elements zero-padded to L; `padded` floats in all.
struct DimLayout {
  int64_t pairs = 0;
  bool one = false;
  int64_t part = 0;
  int64_t padded = 0;

  explicit DimLayout(int64_t d) {
    pairs = d / (2 * kLanes) * 2 * kLanes;
    one = d - pairs >= kLanes;
    part = (d - pairs) % kLanes;
    padded = (d + kLanes - 1) / kLanes * kLanes;
  }
};

// Reads K or V elements of type T (float; uint16_t holding bf16) as f32
// vectors. Pair: 2L elements as their even and odd elements (for f32 the
// first and second L: its pair order is the identity).
template <class T>
struct KvLoad;

template <>
struct KvLoad<float> {
  static constexpr bool kPairOrder = false;
  static HWY_INLINE void Pair(const float* p, VF& even, VF& odd) {
    even = hn::LoadU(DF(), p);
    odd = hn::LoadU(DF(), p + kLanes);
  }
  static HWY_INLINE VF One(const float* p) { return hn::LoadU(DF(), p); }
};

template <>
struct KvLoad<uint16_t> {
  static constexpr bool kPairOrder = true;
  static HWY_INLINE void Pair(const uint16_t* p, VF& even, VF& odd) {
    const DF df;
    const hn::RebindToUnsigned<DF> du;
    // Little-endian: element 2i is the low half of 32-bit lane i, and a
    // bf16 is the high half of its f32.
    const auto w = hn::LoadU(du, reinterpret_cast<const uint32_t*>(p));
    even = hn::BitCast(df, hn::ShiftLeft<16>(w));
    odd = hn::BitCast(df, hn::And(w, hn::Set(du, 0xFFFF0000u)));
  }
  static HWY_INLINE VF One(const uint16_t* p) {
    const DF df;
    const hn::RebindToUnsigned<DF> du;
    const hn::Rebind<uint16_t, DF> du16;
    return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(du16, p))));
  }
};

// A q8_0 view read in place: a position counted in values, value i in
// block i / 32 (an f16 scale, then 32 int8), so that the kernels step
// through rows and head dims as through float or bf16 elements. Each load
// (L or 2L values at a multiple of L; 2L <= 32) lies inside one block.
struct Q8Values {
  const uint8_t* blocks;  // the view's first block
  int64_t index;          // value index
  Q8Values operator+(int64_t n) const { return {blocks, index + n}; }
  const uint8_t* block() const { return blocks + index / 32 * 34; }
  const int8_t* values() const { return reinterpret_cast<const int8_t*>(block() + 2) + index % 32; }
};

// What the kernels hold to read K or V rows of type T: a pointer for float
// and bf16, a Q8Values for q8_0.
template <class T>
struct KvPointer {
  using type = const T* HWY_RESTRICT;
};
template <>
struct KvPointer<BlockQ8_0> {
  using type = Q8Values;
};
template <class T>
using KvPtr = typename KvPointer<T>::type;

// q8_0 values as f32 vectors: int8 widened and times the block's scale, in
// order (pair order is the identity, as for f32).
template <>
struct KvLoad<BlockQ8_0> {
  static constexpr bool kPairOrder = false;
  static HWY_INLINE VF Widen(const int8_t* q, VF scale) {
    const DF df;
    const hn::Rebind<int32_t, DF> di32;
    const hn::Rebind<int8_t, DF> di8;
    return hn::Mul(scale, hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, q))));
  }
  static HWY_INLINE void Pair(Q8Values p, VF& even, VF& odd) {
    const VF scale = hn::Set(DF(), LoadOneF16(p.block()));
    even = Widen(p.values(), scale);
    odd = Widen(p.values() + kLanes, scale);
  }
  static HWY_INLINE VF One(Q8Values p) { return Widen(p.values(), hn::Set(DF(), LoadOneF16(p.block()))); }
};

// `n` < L elements, zero-padded (for head dims that are not a multiple of L).
template <class T>
HWY_INLINE VF LoadPart(const T* p, int64_t n) {
  T buf[kLanes] = {};
  std::memcpy(buf, p, size_t(n) * sizeof(T));
  return KvLoad<T>::One(buf);
}
// q8_0 heads are whole blocks, so no part of a vector is ever left: this
// only completes the kernels' instantiation.
HWY_INLINE VF LoadPart(Q8Values p, int64_t n) {
  float buf[kLanes] = {};
  const float scale = LoadOneF16(p.block());
  for (int64_t i = 0; i < n; ++i) buf[i] = scale * float(p.values()[i]);
  return hn::LoadU(DF(), buf);
}

// Keeps `v` in a register: GCC otherwise folds a load used by several
// multiply-adds into each of them, and the loads, not the multiply-adds,
// become the bottleneck.
HWY_INLINE VF InRegister(VF v) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128 && defined(__GNUC__)
  __asm__("" : "+v"(v.raw));
#endif
  return v;
}

// Requests the cache lines of kBytes bytes from p (software prefetch).
template <int64_t kBytes, class T>
HWY_INLINE void PrefetchBytes(const T* p) {
  for (int64_t b = 0; b < kBytes; b += 64) hwy::Prefetch(reinterpret_cast<const char*>(p) + b);
}
// q8_0: the block holding the values (kBytes counts whole blocks' bytes).
template <int64_t kBytes>
HWY_INLINE void PrefetchBytes(Q8Values p) {
  hwy::Prefetch(p.block());
  hwy::Prefetch(p.block() + 33);
}
template <class T>
HWY_INLINE void PrefetchOne(const T* p) {
  hwy::Prefetch(p);
}
HWY_INLINE void PrefetchOne(Q8Values p) { hwy::Prefetch(p.values()); }

#if HWY_TARGET != HWY_SCALAR
// Folds of keys' partial sums (vectors whose lanes add up to one key's
// score) that stay within 128-bit blocks until the last step: AVX2 and
// AVX-512 move lanes across blocks at three times the latency of an unpack.
//
// Two keys a, b into one vector: block i holds [a0+a2, b0+b2, a1+a3,
// b1+b3] of block i of a and b.
HWY_INLINE VF FoldTwoKeys(VF a, VF b) {
  const DF df;
  return hn::Add(hn::InterleaveLower(df, a, b), hn::InterleaveUpper(df, a, b));
}
// FoldTwoKeys of keys 0, 1 and of keys 2, 3 into one vector: block i holds
// the 4 keys' partial sums over block i, in key order.
HWY_INLINE VF FoldFourKeys(VF ab, VF cd) {
  const DF df;
  const hn::Repartition<double, DF> dd;  // 64-bit lanes: two keys' sums
  const auto x = hn::BitCast(dd, ab), y = hn::BitCast(dd, cd);
  return hn::Add(hn::BitCast(df, hn::InterleaveLower(dd, x, y)), hn::BitCast(df, hn::InterleaveUpper(dd, x, y)));
}
// Lower half of lo plus its upper half, then the same of hi: the halves'
// sums of two vectors in one.
HWY_INLINE VF AddHalves(VF hi, VF lo) {
  const DF df;
  return hn::Add(hn::ConcatLowerLower(df, hi, lo), hn::ConcatUpperUpper(df, hi, lo));
}
// quads[i] (FoldFourKeys of keys 4i .. 4i + 3), i < L / 4, into the scores
// of the L keys in order: each key's sum over the vector's blocks.
HWY_INLINE VF SumBlocks(const VF* quads) {
#if HWY_MAX_BYTES == 64 && HWY_ARCH_X86
  // Halves first: block i + 2 onto block i, two quads per vector.
  const VF h0 = AddHalves(quads[1], quads[0]), h1 = AddHalves(quads[3], quads[2]);
  // Then odd blocks onto even ones: blocks (0, 2) of h0, h1 plus (1, 3).
  return VF{_mm512_add_ps(_mm512_shuffle_f32x4(h0.raw, h1.raw, 0x88), _mm512_shuffle_f32x4(h0.raw, h1.raw, 0xDD))};
#elif HWY_MAX_BYTES == 32
  return AddHalves(quads[1], quads[0]);
#else
  static_assert(kLanes == 4, "one 128-bit block of 4 keys");
  return quads[0];
#endif
}
#endif

// a0[r], a1[r] = vectors whose lanes sum to the dot products of keys k0
// and k1 (rows of K) with query row r of kRows (qp, pair order, `q_stride`
// floats apart). kTail: head_dim has elements past its whole 2L steps.
// Each K element read requests the one `ahead` elements further (0: none).
template <class T, size_t kRows, bool kTail>
HWY_INLINE void DotKeyPair(KvPtr<T> k0, KvPtr<T> k1, const DimLayout& dim, const float* HWY_RESTRICT qp,
                           int64_t q_stride, int64_t ahead, VF (&a0)[kRows], VF (&a1)[kRows]) {
  const DF df;
  for (size_t r = 0; r < kRows; ++r) a0[r] = a1[r] = hn::Zero(df);
  int64_t c = 0;
  for (; c < dim.pairs; c += 2 * kLanes) {
    if (ahead) {
      PrefetchBytes<2 * kLanes * int64_t(sizeof(T))>(k0 + ahead + c);
      PrefetchBytes<2 * kLanes * int64_t(sizeof(T))>(k1 + ahead + c);
    }
    VF e0, o0, e1, o1;
    KvLoad<T>::Pair(k0 + c, e0, o0);
    KvLoad<T>::Pair(k1 + c, e1, o1);
    for (size_t r = 0; r < kRows; ++r) {
      const float* q = qp + int64_t(r) * q_stride + c;
      const VF qe = InRegister(hn::LoadU(df, q)), qo = InRegister(hn::LoadU(df, q + kLanes));
      a0[r] = hn::MulAdd(e0, qe, a0[r]);
      a1[r] = hn::MulAdd(e1, qe, a1[r]);
      a0[r] = hn::MulAdd(o0, qo, a0[r]);
      a1[r] = hn::MulAdd(o1, qo, a1[r]);
    }
  }
  if constexpr (kTail) {
    for (int step = 0; step < 2; ++step) {
      const bool active = step == 0 ? dim.one : dim.part != 0;
      if (!active) continue;
      if (ahead) {
        PrefetchOne(k0 + ahead + c);
        PrefetchOne(k1 + ahead + c);
      }
      const VF x0 = step == 0 ? KvLoad<T>::One(k0 + c) : LoadPart(k0 + c, dim.part);
      const VF x1 = step == 0 ? KvLoad<T>::One(k1 + c) : LoadPart(k1 + c, dim.part);
      for (size_t r = 0; r < kRows; ++r) {
        const VF q = InRegister(hn::LoadU(df, qp + int64_t(r) * q_stride + c));
        a0[r] = hn::MulAdd(x0, q, a0[r]);
        a1[r] = hn::MulAdd(x1, q, a1[r]);
      }
      c += kLanes;
    }
  }
}

// S[r][j] = qp[r] . K[j] for kRows query rows and n keys from k (rows
// `stride` elements apart); S rows kBlockKeys floats apart. On vector
// targets n <= L, and `pairs` is scratch of [kRows][L/2][L]: each row's
// folded key pairs, then folded into the scores of the n keys.
template <class T, size_t kRows, bool kTail>
HWY_NOINLINE void ScoreKeys(KvPtr<T> k, int64_t stride, int64_t n, const DimLayout& dim, const float* qp, int64_t ahead,
                            float* pairs, float* s) {
  VF a0[kRows], a1[kRows];
#if HWY_TARGET == HWY_SCALAR
  (void)pairs;
  for (int64_t j = 0; j < n; j += 2) {
    const KvPtr<T> k0 = k + j * stride;
    DotKeyPair<T, kRows, kTail>(k0, j + 1 < n ? k0 + stride : k0, dim, qp, dim.padded, ahead, a0, a1);
    for (size_t r = 0; r < kRows; ++r) {
      s[int64_t(r) * kBlockKeys + j] = hn::GetLane(a0[r]);
      if (j + 1 < n) s[int64_t(r) * kBlockKeys + j + 1] = hn::GetLane(a1[r]);
    }
  }
#else
  const DF df;
  constexpr int64_t kPairs = kLanes / 2;  // pair vectors per L keys
  const int64_t n_pairs = (n + 1) / 2;
  for (int64_t p = 0; p < n_pairs; ++p) {
    const KvPtr<T> k0 = k + 2 * p * stride;
    // An odd last key pairs with itself; the lanes of the copy are ignored.
    DotKeyPair<T, kRows, kTail>(k0, 2 * p + 1 < n ? k0 + stride : k0, dim, qp, dim.padded, ahead, a0, a1);
    for (size_t r = 0; r < kRows; ++r)
      hn::StoreU(FoldTwoKeys(a0[r], a1[r]), df, pairs + (int64_t(r) * kPairs + p) * kLanes);
  }
  for (size_t r = 0; r < kRows; ++r) {
    VF v[kPairs];
    for (int64_t p = 0; p < kPairs; ++p)
      v[p] = p < n_pairs ? hn::LoadU(df, pairs + (int64_t(r) * kPairs + p) * kLanes) : hn::Zero(df);
    VF quads[kPairs / 2];
    for (int64_t i = 0; i < kPairs / 2; ++i) quads[i] = FoldFourKeys(v[2 * i], v[2 * i + 1]);
    hn::StoreU(SumBlocks(quads), df, s + int64_t(r) * kBlockKeys);
  }
#endif
}

// Calls f.template operator()<kRows>(r0) over chunks of at most
// kMaxRegisterRows of `rows` rows.
template <class F>
HWY_INLINE void ForRowChunks(int64_t rows, const F& f) {
  int64_t r0 = 0;
  for (; r0 + int64_t(kMaxRegisterRows) <= rows; r0 += int64_t(kMaxRegisterRows))
    f.template operator()<kMaxRegisterRows>(r0);
  switch (rows - r0) {
    case 1: f.template operator()<1>(r0); break;
    case 2: f.template operator()<2>(r0); break;
    case 3: f.template operator()<3>(r0); break;
    case 4: f.template operator()<4>(r0); break;
    case 5:
      if constexpr (kMaxRegisterRows > 5) f.template operator()<5>(r0);
      break;
    case 6:
      if constexpr (kMaxRegisterRows > 6) f.template operator()<6>(r0);
      break;
    case 7:
      if constexpr (kMaxRegisterRows > 7) f.template operator()<7>(r0);
      break;
    default: break;
  }
}

// S[r][j] = qp[r] . K[j] for the block's n_keys keys (rows of `k`, `stride`
// elements apart) and `rows` query rows; S rows kBlockKeys floats apart.
// Vector targets fill S in whole vectors: lanes past n_keys are garbage.
// The K rows `ahead` elements further are requested as these are read.
template <class T>
void ScoreBlock(KvPtr<T> k, int64_t stride, int64_t n_keys, const DimLayout& dim, const float* qp, int64_t rows,
                int64_t ahead, float* pairs, float* s) {
  const bool tail = dim.one || dim.part != 0;
  const int64_t group = HWY_TARGET == HWY_SCALAR ? n_keys : kLanes;
  for (int64_t g = 0; g < n_keys; g += group) {
    const int64_t n = std::min(group, n_keys - g);
    ForRowChunks(rows, [&]<size_t kRows>(int64_t r0) {
      const float* q = qp + r0 * dim.padded;
      float* out = s + r0 * kBlockKeys + g;
      const int64_t request = r0 == 0 ? ahead : 0;  // once per key
      if (tail)
        ScoreKeys<T, kRows, true>(k + g * stride, stride, n, dim, q, request, pairs, out);
      else
        ScoreKeys<T, kRows, false>(k + g * stride, stride, n, dim, q, request, pairs, out);
    });
  }
}

// One online-softmax step per row over S[r][0, n_keys) (masked keys -inf):
// new max m, alpha[r] = e^{m_old - m} (the factor for acc), l; S becomes
// the probabilities e^{s - m}.
void SoftmaxBlock(float* s, int64_t n_keys, int64_t rows, float* m, float* l, float* alpha) {
  const DF df;
  const int64_t n_padded = (n_keys + kLanes - 1) / kLanes * kLanes;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = s + r * kBlockKeys;
    for (int64_t j = n_keys; j < n_padded; ++j) row[j] = kNegInf;
    VF top = hn::Set(df, kNegInf);
    for (int64_t j = 0; j < n_padded; j += kLanes) top = hn::Max(top, hn::LoadU(df, row + j));
    const float block_max = hn::GetLane(hn::MaxOfLanes(df, top));
    const float m_new = std::max(m[r], block_max);
    if (m_new == kNegInf) {  // nothing seen yet: every probability is 0
      alpha[r] = 1.0f;
      std::fill_n(row, n_padded, 0.0f);
      continue;
    }
    alpha[r] = m[r] == kNegInf ? 0.0f : std::exp(m[r] - m_new);
    const VF shift = hn::Set(df, m_new);
    VF sum = hn::Zero(df);
    for (int64_t j = 0; j < n_padded; j += kLanes) {
      const VF p = SoftmaxExp(df, hn::Sub(hn::LoadU(df, row + j), shift));
      hn::StoreU(p, df, row + j);
      sum = hn::Add(sum, p);
    }
    l[r] = l[r] * alpha[r] + hn::GetLane(hn::SumOfLanes(df, sum));
    m[r] = m_new;
  }
}

// acc[r][c, c + kVecs L) = alpha[r] acc[r][...] + sum_j P[r][j] V[j][...]
// for kRows rows from r0. kVecs even: kVecs / 2 pair steps; kVecs 1: the
// in-order step (part 0) or the zero-padded `part` elements. Each V element
// read requests the one `ahead` elements further (0: none).
template <class T, size_t kRows, size_t kVecs>
HWY_NOINLINE void AccumulateColumns(KvPtr<T> v, int64_t stride, int64_t n_keys, const float* HWY_RESTRICT p,
                                    const float* HWY_RESTRICT alpha, int64_t c, int64_t part, int64_t ahead,
                                    int64_t acc_stride, float* HWY_RESTRICT acc) {
  const DF df;
  VF o[kRows][kVecs];
  for (size_t r = 0; r < kRows; ++r) {
    const VF a = hn::Set(df, alpha[r]);
    for (size_t i = 0; i < kVecs; ++i)
      o[r][i] = hn::Mul(a, hn::LoadU(df, acc + int64_t(r) * acc_stride + c + int64_t(i) * kLanes));
  }
  for (int64_t j = 0; j < n_keys; ++j) {
    const KvPtr<T> row = v + j * stride + c;
    if (ahead) PrefetchBytes<int64_t(kVecs) * kLanes * int64_t(sizeof(T))>(row + ahead);
    VF x[kVecs];
    if constexpr (kVecs % 2 == 0) {
      for (size_t i = 0; i < kVecs; i += 2) KvLoad<T>::Pair(row + int64_t(i) * kLanes, x[i], x[i + 1]);
    } else {
      x[0] = part ? LoadPart(row, part) : KvLoad<T>::One(row);
    }
    for (size_t r = 0; r < kRows; ++r) {
      const VF pr = hn::Set(df, p[int64_t(r) * kBlockKeys + j]);
      for (size_t i = 0; i < kVecs; ++i) o[r][i] = hn::MulAdd(pr, x[i], o[r][i]);
    }
  }
  for (size_t r = 0; r < kRows; ++r)
    for (size_t i = 0; i < kVecs; ++i) hn::StoreU(o[r][i], df, acc + int64_t(r) * acc_stride + c + int64_t(i) * kLanes);
}

// acc = alpha acc + P.V over the block's n_keys rows of V, every row; the
// V rows `ahead` elements further are requested as these are read.
template <class T>
void AccumulateBlock(KvPtr<T> v, int64_t stride, int64_t n_keys, const DimLayout& dim, const float* p,
                     const float* alpha, int64_t rows, int64_t ahead, float* acc) {
  ForRowChunks(rows, [&]<size_t kRows>(int64_t r0) {
    const float* pr = p + r0 * kBlockKeys;
    const float* ar = alpha + r0;
    float* out = acc + r0 * dim.padded;
    // Accumulators of kRows x kVecs vectors in registers: 16 at most.
    constexpr size_t kWide = kRows <= kMaxRegisterRows / 2 ? 4 : 2;
    int64_t c = 0;
    for (; c + int64_t(kWide) * kLanes <= dim.pairs; c += int64_t(kWide) * kLanes)
      AccumulateColumns<T, kRows, kWide>(v, stride, n_keys, pr, ar, c, 0, r0 == 0 ? ahead : 0, dim.padded, out);
    for (; c < dim.pairs; c += 2 * kLanes)
      AccumulateColumns<T, kRows, 2>(v, stride, n_keys, pr, ar, c, 0, r0 == 0 ? ahead : 0, dim.padded, out);
    if (dim.one) {
      AccumulateColumns<T, kRows, 1>(v, stride, n_keys, pr, ar, c, 0, r0 == 0 ? ahead : 0, dim.padded, out);
      c += kLanes;
    }
    if (dim.part)
      AccumulateColumns<T, kRows, 1>(v, stride, n_keys, pr, ar, c, dim.part, r0 == 0 ? ahead : 0, dim.padded, out);
  });
}

// Natural order <-> pair order of the first `pairs` elements of a row (the
// rest is in order in both).
HWY_INLINE void ToPairOrder(const float* in, int64_t pairs, float* out) {
  for (int64_t c = 0; c < pairs; c += 2 * kLanes)
    for (int64_t i = 0; i < kLanes; ++i) {
      out[c + i] = in[c + 2 * i];
      out[c + kLanes + i] = in[c + 2 * i + 1];
    }
}
HWY_INLINE void FromPairOrder(const float* in, int64_t pairs, float* out) {
  for (int64_t c = 0; c < pairs; c += 2 * kLanes)
    for (int64_t i = 0; i < kLanes; ++i) {
      out[c + 2 * i] = in[c + i];
      out[c + 2 * i + 1] = in[c + kLanes + i];
    }
}

// Requests K and V elements [begin, end) of rows [first, last) into L1.
template <class T>
HWY_INLINE void PrefetchRows(const T* k, const T* v, int64_t stride, int64_t first, int64_t last, int64_t begin,
                             int64_t end) {
  constexpr int64_t kLine = 64 / int64_t(sizeof(T));  // elements per cache line
  for (int64_t j = first; j < last; ++j)
    for (int64_t e = j * stride + begin; e < j * stride + end; e += kLine) {
      hwy::Prefetch(k + e);
      hwy::Prefetch(v + e);
    }
}
HWY_INLINE void PrefetchRows(Q8Values k, Q8Values v, int64_t stride, int64_t first, int64_t last, int64_t begin,
                             int64_t end) {
  const int64_t bytes = KvBytes(KvType::kQ8_0, end - begin);
  for (int64_t j = first; j < last; ++j)
    for (int64_t b = 0; b < bytes; b += 64) {
      hwy::Prefetch((k + j * stride + begin).block() + b);
      hwy::Prefetch((v + j * stride + begin).block() + b);
    }
}

// Where a view's K or V values start, `index` values in.
template <class T>
HWY_INLINE KvPtr<T> ViewAt(const void* base, int64_t index) {
  if constexpr (std::is_same_v<T, BlockQ8_0>)
    return Q8Values{static_cast<const uint8_t*>(base), index};
  else
    return static_cast<const T*>(base) + index;
}

// Per-thread scratch of one task, grown on demand.
struct DecodeScratch {
  std::vector<float> qp;     // [heads][rows][dim.padded] scaled queries, pair order
  std::vector<float> acc;    // [heads][rows][dim.padded] sum of p v, pair order
  std::vector<float> m, l;   // [heads][rows]
  std::vector<float> s;      // [rows][kBlockKeys] scores, then probabilities
  std::vector<float> pairs;  // [kMaxRegisterRows][L/2][L] folded key pairs
  std::vector<float> alpha;  // [rows]
  std::vector<float> row;    // [dim.padded] one row in order
};

// T: what the view stores, read in place: float, uint16_t (bf16) or
// BlockQ8_0.
template <class T>
void RunDecodeTyped(const FlashPlan& plan, const FlashTask& t) {
  const AttentionArgs& args = *plan.args;
  const AttentionShape& shape = args.shape;
  const DecodeTaskRows task(args, t);
  const int64_t d = task.d, rows = task.rows, heads = task.heads;
  const int32_t group = task.group;
  const DimLayout dim(d);
  const bool pair_order = KvLoad<T>::kPairOrder;

  static thread_local DecodeScratch s;
  auto grow = [](std::vector<float>& v, int64_t n) {
    if (int64_t(v.size()) < n) v.resize(size_t(n));
  };
  grow(s.qp, heads * rows * dim.padded);
  grow(s.acc, heads * rows * dim.padded);
  grow(s.m, heads * rows);
  grow(s.l, heads * rows);
  grow(s.s, rows * kBlockKeys);
  grow(s.pairs, int64_t(kMaxRegisterRows) * kLanes * kLanes / 2 + kLanes);
  grow(s.alpha, rows);
  grow(s.row, dim.padded);
  task.ResetStates(s.acc.data(), dim.padded, s.m.data(), s.l.data());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t r = 0; r < rows; ++r) {
      const float* q = task.Query(args, t.kv_head + h, r);
      float* row = s.row.data();
      std::fill_n(row, dim.padded, 0.0f);
      for (int64_t c = 0; c < d; ++c) row[c] = q[c] * plan.scale;
      float* dst = s.qp.data() + (h * rows + r) * dim.padded;
      std::copy_n(row, dim.padded, dst);
      if (pair_order) ToPairOrder(row, dim.pairs, dst);
    }

  const KvView& kv = args.kv;
  const int64_t stride = KvRowStride(kv, shape);
  const KvPtr<T> k = ViewAt<T>(kv.k, int64_t(t.kv_head) * d);  // this task's first head
  const KvPtr<T> v = ViewAt<T>(kv.v, int64_t(t.kv_head) * d);
  const std::vector<BlockVisit> visits = plan.VisitsFor(t);
  auto request_block = [&](size_t vi) {  // every line of visit vi's block
    const int64_t first = visits[vi].block * kBlockKeys;
    PrefetchRows(k, v, stride, first, std::min(kv.n_rows, first + kBlockKeys), 0, heads * d);
  };
  if (!visits.empty()) request_block(0);
  for (size_t vi = 0; vi < visits.size(); ++vi) {
    const DecodeBlock b = DecodeBlockAt(visits, vi, kv.n_rows, stride);
    if (b.request_next) request_block(vi + 1);
    const int64_t j0 = b.first, n_keys = b.n_keys, ahead = b.ahead;
    for (int64_t h = 0; h < heads; ++h) {
      const KvPtr<T> kb = k + j0 * stride + h * d;
      const KvPtr<T> vb = v + j0 * stride + h * d;
      const float* qp = s.qp.data() + h * rows * dim.padded;
      ScoreBlock<T>(kb, stride, n_keys, dim, qp, rows, ahead, s.pairs.data(), s.s.data());
      if (visits[vi].span == Visibility::kPartial)
        MaskUnseen(s.s.data(), rows, n_keys, args.span, task.row_pos.data(), kv.pos + j0);
      SoftmaxBlock(s.s.data(), n_keys, rows, s.m.data() + h * rows, s.l.data() + h * rows, s.alpha.data());
      AccumulateBlock<T>(vb, stride, n_keys, dim, s.s.data(), s.alpha.data(), rows, ahead,
                         s.acc.data() + h * rows * dim.padded);
    }
  }

  for (int64_t h = 0; h < heads; ++h)
    for (int64_t r = 0; r < rows; ++r) {
      const float* acc = s.acc.data() + (h * rows + r) * dim.padded;
      std::copy_n(acc, dim.padded, s.row.data());
      if (pair_order) FromPairOrder(acc, dim.pairs, s.row.data());
      const DecodeRow at = DecodeRowOf(t.kv_head + h, r, group);
      plan.StoreRow(t, 0, at.query, at.head, s.m[size_t(h * rows + r)], s.l[size_t(h * rows + r)], s.row.data());
    }
}

void RunDecodeTaskImpl(const FlashPlan& plan, int64_t task) {
  const FlashTask t = plan.Task(task);
  switch (plan.args->kv.type) {
    case KvType::kF32: RunDecodeTyped<float>(plan, t); return;
    case KvType::kQ8_0: RunDecodeTyped<BlockQ8_0>(plan, t); return;
    default: RunDecodeTyped<uint16_t>(plan, t); return;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace swan
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace swan {

HWY_EXPORT(RunDecodeTaskImpl);
HWY_EXPORT(SoftmaxBlock);

void DecodeSoftmaxBlock(float* s, int64_t n_keys, int64_t rows, float* m, float* l, float* alpha) {
  HWY_DYNAMIC_DISPATCH(SoftmaxBlock)(s, n_keys, rows, m, l, alpha);
}

void RunDecodeTask(const FlashPlan& plan, int64_t task) {
  if (DecodeRunsBf16Dot(*plan.args)) return RunDecodeTaskBf16Dot(plan, plan.Task(task));
  HWY_DYNAMIC_DISPATCH(RunDecodeTaskImpl)(plan, task);
}

}  // namespace swan
#endif  // HWY_ONCE
