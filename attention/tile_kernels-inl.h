// Per-target SIMD building blocks of the attention kernels (forward and
// backward): score a block of keys against a tile of query rows, and
// accumulate probability-weighted rows. Highway "-inl" header: included
// once per target from files that use foreach_target.
#if defined(SWAN_ATTENTION_TILE_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SWAN_ATTENTION_TILE_KERNELS_INL_H_
#undef SWAN_ATTENTION_TILE_KERNELS_INL_H_
#else
#define SWAN_ATTENTION_TILE_KERNELS_INL_H_
#endif

#include <cstdint>
#include <cstring>

#include <hwy/highway.h>

#include "attention/attention.h"
#include "util/bf16.h"
#include "util/f16.h"

HWY_BEFORE_NAMESPACE();
namespace swan {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

// The tiles below keep their accumulators, one operand row and a broadcast
// in vector registers. AVX-512 has 32 of them; AVX2 and SSE4 have 16, where
// the AVX-512 tiles (21 live vectors) spill two accumulators to the stack
// every step and reload the other operand from memory in every FMA. There
// the tiles are two vectors wide and six tall (15 live vectors).
#if HWY_ARCH_X86 && HWY_TARGET > HWY_AVX3
constexpr bool kSixteenRegisters = true;
#else
constexpr bool kSixteenRegisters = false;
#endif
constexpr size_t kTileVecs = kSixteenRegisters ? 2 : 4;  // vectors across a tile

// dst [n] = the values of `n` / 32 q8_0 blocks at `blocks` (scale x int8).
HWY_INLINE void WidenQ8_0(const uint8_t* HWY_RESTRICT blocks, int64_t n, float* HWY_RESTRICT dst) {
  const DF df;
  const hn::Rebind<int32_t, DF> di32;
  const hn::Rebind<int8_t, DF> di8;
  constexpr int64_t L = int64_t(hn::MaxLanes(DF()));
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

// Converts `n` elements of K or V (f32, bf16 or q8_0: then `index` and `n`
// are multiples of 32) to float.
HWY_INLINE void LoadRowAsFloat(const void* base, KvType type, int64_t index, int64_t n, float* HWY_RESTRICT dst) {
  if (type == KvType::kF32) {
    std::memcpy(dst, static_cast<const float*>(base) + index, size_t(n) * sizeof(float));
    return;
  }
  if (type == KvType::kQ8_0) {
    WidenQ8_0(static_cast<const uint8_t*>(base) + KvBytes(type, index), n, dst);
    return;
  }
  const uint16_t* src = static_cast<const uint16_t*>(base) + index;
  const DF df;
  const hn::RebindToUnsigned<DF> du32;
  const hn::Rebind<uint16_t, DF> du16;
  const int64_t L = int64_t(hn::Lanes(df));
  int64_t c = 0;
  for (; c + L <= n; c += L) {
    const auto wide = hn::PromoteTo(du32, hn::LoadU(du16, src + c));
    hn::StoreU(hn::BitCast(df, hn::ShiftLeft<16>(wide)), df, dst + c);
  }
  for (; c < n; ++c) dst[c] = BF16ToF32(src[c]);
}

// ST[j][r0 .. r0 + kVecs*L) = sum_c K[j][c] * QT[c][...] for kKeys keys
// starting at j0 (QT's rows qt_stride apart, ST's st_stride).
template <size_t kKeys, size_t kVecs>
HWY_INLINE void ScoreKeys(const float* HWY_RESTRICT kf, int64_t k_stride, int64_t head_dim,
                          const float* HWY_RESTRICT qt, int64_t qt_stride, int64_t st_stride, int64_t j0, int64_t r0,
                          float* HWY_RESTRICT st) {
  const DF df;
  const size_t L = hn::Lanes(df);
  hn::Vec<DF> acc[kKeys][kVecs];
  for (size_t k = 0; k < kKeys; ++k)
    for (size_t v = 0; v < kVecs; ++v) acc[k][v] = hn::Zero(df);
  const float* krow = kf + j0 * k_stride;
  for (int64_t c = 0; c < head_dim; ++c) {
    const float* qrow = qt + c * qt_stride + r0;
    hn::Vec<DF> q[kVecs];
    for (size_t v = 0; v < kVecs; ++v) q[v] = hn::LoadU(df, qrow + v * L);
    for (size_t k = 0; k < kKeys; ++k) {
      const auto kv = hn::Set(df, krow[int64_t(k) * k_stride + c]);
      for (size_t v = 0; v < kVecs; ++v) acc[k][v] = hn::MulAdd(kv, q[v], acc[k][v]);
    }
  }
  for (size_t k = 0; k < kKeys; ++k)
    for (size_t v = 0; v < kVecs; ++v)
      hn::StoreU(acc[k][v], df, st + (j0 + int64_t(k)) * st_stride + r0 + int64_t(v * L));
}

// Scores of `n_keys` keys (rows of kf, k_stride apart) for `rows_padded`
// rows (a multiple of the vector): ST[j][r] = sum_c kf[j][c] * QT[c][r],
// QT's rows qt_stride apart (a strip of a wider QT), ST's rows_padded.
HWY_MAYBE_UNUSED inline void ScoreBlock(const float* kf, int64_t k_stride, int64_t head_dim, const float* qt,
                                        int64_t qt_stride, int64_t rows_padded, int64_t n_keys, float* st) {
  const int64_t L = int64_t(hn::Lanes(DF()));
  const int64_t ss = rows_padded;
  int64_t r = 0;
  if constexpr (kSixteenRegisters) {
    for (; r + 2 * L <= rows_padded; r += 2 * L) {
      int64_t j = 0;
      for (; j + 6 <= n_keys; j += 6) ScoreKeys<6, 2>(kf, k_stride, head_dim, qt, qt_stride, ss, j, r, st);
      for (; j + 4 <= n_keys; j += 4) ScoreKeys<4, 2>(kf, k_stride, head_dim, qt, qt_stride, ss, j, r, st);
      for (; j < n_keys; ++j) ScoreKeys<1, 2>(kf, k_stride, head_dim, qt, qt_stride, ss, j, r, st);
    }
  } else {
    for (; r + 4 * L <= rows_padded; r += 4 * L) {
      int64_t j = 0;
      for (; j + 4 <= n_keys; j += 4) ScoreKeys<4, 4>(kf, k_stride, head_dim, qt, qt_stride, ss, j, r, st);
      for (; j < n_keys; ++j) ScoreKeys<1, 4>(kf, k_stride, head_dim, qt, qt_stride, ss, j, r, st);
    }
    const int64_t left = (rows_padded - r) / L;
    if (left == 0) return;
    if (left >= 2) {
      for (; r + 2 * L <= rows_padded; r += 2 * L) {
        int64_t j = 0;
        for (; j + 8 <= n_keys; j += 8) ScoreKeys<8, 2>(kf, k_stride, head_dim, qt, qt_stride, ss, j, r, st);
        for (; j < n_keys; ++j) ScoreKeys<1, 2>(kf, k_stride, head_dim, qt, qt_stride, ss, j, r, st);
      }
    }
  }
  for (; r < rows_padded; r += L) {
    int64_t j = 0;
    for (; j + 8 <= n_keys; j += 8) ScoreKeys<8, 1>(kf, k_stride, head_dim, qt, qt_stride, ss, j, r, st);
    for (; j < n_keys; ++j) ScoreKeys<1, 1>(kf, k_stride, head_dim, qt, qt_stride, ss, j, r, st);
  }
}

// ScoreBlock over all of QT's rows_padded rows.
HWY_MAYBE_UNUSED inline void ScoreBlock(const float* kf, int64_t k_stride, int64_t head_dim, const float* qt,
                                        int64_t rows_padded, int64_t n_keys, float* st) {
  ScoreBlock(kf, k_stride, head_dim, qt, rows_padded, rows_padded, n_keys, st);
}

// acc[r][c0 .. c0 + kVecs*L) += sum_j PT[j][r] * V[j][...] for kRows rows.
template <size_t kRows, size_t kVecs>
HWY_INLINE void AccumulateValues(const float* HWY_RESTRICT pt, int64_t rows_padded, const float* HWY_RESTRICT vf,
                                 int64_t dim_padded, int64_t n_keys, int64_t r0, int64_t c0, float* HWY_RESTRICT acc) {
  const DF df;
  const size_t L = hn::Lanes(df);
  hn::Vec<DF> o[kRows][kVecs];
  for (size_t r = 0; r < kRows; ++r)
    for (size_t v = 0; v < kVecs; ++v)
      o[r][v] = hn::LoadU(df, acc + (r0 + int64_t(r)) * dim_padded + c0 + int64_t(v * L));
  for (int64_t j = 0; j < n_keys; ++j) {
    hn::Vec<DF> val[kVecs];
    for (size_t v = 0; v < kVecs; ++v) val[v] = hn::LoadU(df, vf + j * dim_padded + c0 + int64_t(v * L));
    const float* prow = pt + j * rows_padded + r0;
    for (size_t r = 0; r < kRows; ++r) {
      const auto p = hn::Set(df, prow[r]);
      for (size_t v = 0; v < kVecs; ++v) o[r][v] = hn::MulAdd(p, val[v], o[r][v]);
    }
  }
  for (size_t r = 0; r < kRows; ++r)
    for (size_t v = 0; v < kVecs; ++v)
      hn::StoreU(o[r][v], df, acc + (r0 + int64_t(r)) * dim_padded + c0 + int64_t(v * L));
}

template <size_t kRows>
HWY_MAYBE_UNUSED inline void AccumulateRows(const float* pt, int64_t rows_padded, const float* vf, int64_t dim_padded,
                                            int64_t n_keys, int64_t r0, float* acc) {
  const int64_t L = int64_t(hn::Lanes(DF()));
  int64_t c = 0;
  for (; c + int64_t(kTileVecs) * L <= dim_padded; c += int64_t(kTileVecs) * L)
    AccumulateValues<kRows, kTileVecs>(pt, rows_padded, vf, dim_padded, n_keys, r0, c, acc);
  for (; c < dim_padded; c += L) AccumulateValues<kRows, 1>(pt, rows_padded, vf, dim_padded, n_keys, r0, c, acc);
}

// acc[r][...] += sum_j PT[j][r] * V[j][...] for rows [0, rows): the tallest
// tile the registers hold, then the rest.
HWY_MAYBE_UNUSED inline void AccumulateAllRows(const float* pt, int64_t rows_padded, const float* vf,
                                               int64_t dim_padded, int64_t n_keys, int64_t rows, float* acc) {
  int64_t r = 0;
  if constexpr (kSixteenRegisters)
    for (; r + 6 <= rows; r += 6) AccumulateRows<6>(pt, rows_padded, vf, dim_padded, n_keys, r, acc);
  for (; r + 4 <= rows; r += 4) AccumulateRows<4>(pt, rows_padded, vf, dim_padded, n_keys, r, acc);
  for (; r < rows; ++r) AccumulateRows<1>(pt, rows_padded, vf, dim_padded, n_keys, r, acc);
}

}  // namespace HWY_NAMESPACE
}  // namespace swan
HWY_AFTER_NAMESPACE();

#endif  // SWAN_ATTENTION_TILE_KERNELS_INL_H_
