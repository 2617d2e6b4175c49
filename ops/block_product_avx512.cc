// BlockProduct's AVX-512 VNNI kernel (Q6_K's: GroupTileQ6K below). Per group of 16 weight rows and block
// of 32 values, 8 vpdpbusd give each row's exact int32 sum in a lane of its
// own: unsigned weight bytes times 4 signed input values broadcast to every
// lane. Q4_0's nibbles are unsigned already (n = value + 8); Q8_0's int8 are
// made unsigned by flipping the top bit (w + 128). Both offsets come out
// through the block's input sum: Σ (w + o) q = Σ w q + o Σ q, so each row's
// sum starts at -o Σ q. Q4_1's nibbles are its values; its value n d + m
// adds m Σ q times the input's scale after the scaled integer sum. Q4_K
// is Q4_1 with d = d_super sc and m = -(dmin m_sub), formed per block;
// Q5_K is Q4_K with a fifth bit above each nibble; Q5_0 and Q5_1 are Q4_0
// (its values + 16) and Q4_1 so.
#if defined(__x86_64__)

#include <immintrin.h>

#include <cstring>

#include "ops/block_kernels.h"

#define SWAN_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,avx2,fma,f16c")))

namespace swan::block_kernels {
namespace {

// The masked forms of the conversions: g++ 12 warns that the unmasked
// ones read an uninitialized register (_mm512_undefined_ps).
constexpr __mmask16 kAll = 0xffff;

SWAN_VNNI_TARGET inline __m512i Broadcast4(const int8_t* p) {
  int32_t four;
  std::memcpy(&four, p, sizeof(four));
  return _mm512_set1_epi32(four);
}

// Q5_x's top bit of a value from bit `bit` of each byte of `top`, in place
// (bit 4); bits a 16-bit shift carries across a byte are masked off.
template <int bit>
SWAN_VNNI_TARGET inline __m512i FifthBit(__m512i top) {
  const __m512i mask = _mm512_set1_epi8(0x10);
  if constexpr (bit < 4) return _mm512_and_si512(_mm512_slli_epi16(top, 4 - bit), mask);
  if constexpr (bit == 4) return _mm512_and_si512(top, mask);
  return _mm512_and_si512(_mm512_srli_epi16(top, bit - 4), mask);
}

// Block b of a group's 16 rows, unsigned: chunk c of wv holds values
// 4c .. 4c + 3 of every row.
template <Packed kFormat>
SWAN_VNNI_TARGET inline void UnpackBlock(const uint8_t* p, __m512i (&wv)[8]) {
  const __m512i low = _mm512_set1_epi8(0x0f), flip = _mm512_set1_epi8(char(0x80));
  if constexpr (kFormat != Packed::kQ8_0) {
    for (int c = 0; c < 4; ++c) {
      const __m512i bytes = _mm512_loadu_si512(p + 64 * c);
      wv[c] = _mm512_and_si512(bytes, low);
      wv[c + 4] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low);
    }
  } else {
    for (int c = 0; c < 8; ++c) wv[c] = _mm512_xor_si512(_mm512_loadu_si512(p + 64 * c), flip);
  }
  if constexpr (HasFifthBit(kFormat)) {
    const __m512i top = _mm512_loadu_si512(p + 256);
    wv[0] = _mm512_or_si512(wv[0], FifthBit<0>(top));
    wv[1] = _mm512_or_si512(wv[1], FifthBit<1>(top));
    wv[2] = _mm512_or_si512(wv[2], FifthBit<2>(top));
    wv[3] = _mm512_or_si512(wv[3], FifthBit<3>(top));
    wv[4] = _mm512_or_si512(wv[4], FifthBit<4>(top));
    wv[5] = _mm512_or_si512(wv[5], FifthBit<5>(top));
    wv[6] = _mm512_or_si512(wv[6], FifthBit<6>(top));
    wv[7] = _mm512_or_si512(wv[7], FifthBit<7>(top));
  }
}

// Block b's scale (dw) and min (mw) of each of the 16 rows; d and dmin
// hold a K-quant super-block's, loaded at its first block.
template <Packed kFormat>
SWAN_VNNI_TARGET inline void BlockScales(const GroupTileData& t, int64_t b, __m512& d, __m512& dmin, __m512& dw,
                                         __m512& mw) {
  constexpr bool kSuper = kFormat == Packed::kQ4_K || kFormat == Packed::kQ5_K;  // d sc, dmin m
  mw = _mm512_setzero_ps();
  if constexpr (kSuper) {
    // d sc and -(dmin m): the products ggml forms, exact in float32
    if (b % 8 == 0) {
      d = _mm512_maskz_cvtph_ps(kAll,
                                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.scales + b / 8 * kPackedRows)));
      dmin = _mm512_maskz_cvtph_ps(kAll,
                                   _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.mins + b / 8 * kPackedRows)));
    }
    const int8_t* sub = t.sub_scales + b * 2 * kPackedRows;  // [2, 16] sc, m
    dw = _mm512_mul_ps(
        d, _mm512_maskz_cvtepi32_ps(
               kAll, _mm512_maskz_cvtepu8_epi32(kAll, _mm_loadu_si128(reinterpret_cast<const __m128i*>(sub)))));
    mw = _mm512_sub_ps(
        _mm512_setzero_ps(),
        _mm512_mul_ps(dmin, _mm512_maskz_cvtepi32_ps(
                                kAll, _mm512_maskz_cvtepu8_epi32(kAll, _mm_loadu_si128(reinterpret_cast<const __m128i*>(
                                                                           sub + kPackedRows))))));
  } else {
    dw = _mm512_maskz_cvtph_ps(kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.scales + b * kPackedRows)));
  }
  if constexpr (HasBlockMin(kFormat))
    mw = _mm512_maskz_cvtph_ps(kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.mins + b * kPackedRows)));
}

// One input row's block (its 8 chunks of 4 values broadcast, x4) against
// an unpacked block: each row's exact int32 sum, started at -offset Σ x.
template <Packed kFormat>
SWAN_VNNI_TARGET inline __m512i BlockDot(const __m512i (&wv)[8], const __m512i (&x4)[8], int32_t x_sum) {
  // Q4_0's nibbles are value + 8 (Q5_0's with a fifth bit value + 16), Q8_0's
  // bytes value + 128 once flipped; Q4_1's and Q4_K's nibbles (Q5_1's and
  // Q5_K's with a fifth bit) are their values, the min added from the
  // input's sum.
  constexpr int32_t kOffset = kFormat == Packed::kQ8_0 ? 128 : NibbleOffset(kFormat);
  // two chains of 4: dpbusd's latency hides behind the other
  __m512i even = _mm512_set1_epi32(-kOffset * x_sum), odd = _mm512_setzero_si512();
  for (int c = 0; c < 8; c += 2) {
    even = _mm512_dpbusd_epi32(even, wv[c], x4[c]);
    odd = _mm512_dpbusd_epi32(odd, wv[c + 1], x4[c + 1]);
  }
  return _mm512_add_epi32(even, odd);
}

// The input row's block b of 32 values, 4 at a time in every lane.
SWAN_VNNI_TARGET inline void BroadcastBlock(const int8_t* x, __m512i (&x4)[8]) {
  for (int c = 0; c < 8; ++c) x4[c] = Broadcast4(x + 4 * c);
}

// Rows [row, row + kRows) of the input against group g: tile [kRows, 16].
template <int kRows, Packed kFormat>
SWAN_VNNI_TARGET void GroupTile(const BlockJob& job, int64_t g, int64_t row, float* tile) {
  const GroupTileData t = TileData(job, g, row);
  const int64_t blocks = t.blocks, k = t.k;
  constexpr bool kMins = AddsMins(kFormat);
  constexpr int64_t kPayload = PayloadBytes(kFormat);
  __m512 acc[kRows];
  for (int r = 0; r < kRows; ++r) acc[r] = _mm512_setzero_ps();
  __m512 d = _mm512_setzero_ps(), dmin = _mm512_setzero_ps();  // Q4_K: the super-block's
  for (int64_t b = 0; b < blocks; ++b) {
    if (row == 0) PrefetchGroups<1>(&t, b, kPayload);  // later tiles read the group from cache
    __m512i wv[8];
    UnpackBlock<kFormat>(t.payload + b * kPayload, wv);
    __m512 dw, mw;
    BlockScales<kFormat>(t, b, d, dmin, dw, mw);
    for (int r = 0; r < kRows; ++r) {
      __m512i x4[8];
      BroadcastBlock(t.xq + r * k + b * kQuantBlockValues, x4);
      const float xd = t.xd[r * blocks + b];
      const __m512 dot = _mm512_maskz_cvtepi32_ps(kAll, BlockDot<kFormat>(wv, x4, t.xs[r * blocks + b]));
      acc[r] = _mm512_fmadd_ps(dot, _mm512_mul_ps(dw, _mm512_set1_ps(xd)), acc[r]);
      if constexpr (kMins) acc[r] = _mm512_fmadd_ps(mw, _mm512_set1_ps(xd * float(t.xs[r * blocks + b])), acc[r]);
    }
  }
  for (int r = 0; r < kRows; ++r) _mm512_storeu_ps(tile + r * kPackedRows, acc[r]);
}

// Groups a decode thread reads side by side: 2 streams of memory read the
// 1B Q4_K_M file's products 1.13-1.15x faster than 1 on the Zen 5 of
// docs/performance.md, and 4 0.90x as fast as 2.
constexpr int kDecodeStreams = 2;

// One input row against kGroups groups g0 + i step (decode): their blocks
// read side by side, kGroups streams of memory a thread where one read
// slower (docs/performance.md), and each input block broadcast once for
// all. tile [kGroups, 16].
template <Packed kFormat, int kGroups>
SWAN_VNNI_TARGET void GroupsSideBySide(const BlockJob& job, int64_t g0, int64_t step, float* tile) {
  GroupTileData t[kGroups];
  for (int i = 0; i < kGroups; ++i) t[i] = TileData(job, g0 + i * step, 0);
  const int64_t blocks = t[0].blocks;
  constexpr bool kMins = AddsMins(kFormat);
  constexpr int64_t kPayload = PayloadBytes(kFormat);
  __m512 acc[kGroups], d[kGroups], dmin[kGroups];
  for (int i = 0; i < kGroups; ++i) acc[i] = d[i] = dmin[i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    __m512i x4[8];
    BroadcastBlock(t[0].xq + b * kQuantBlockValues, x4);
    const float xd = t[0].xd[b];
    const int32_t xs = t[0].xs[b];
    PrefetchGroups<kGroups>(t, b, kPayload);
    for (int i = 0; i < kGroups; ++i) {
      __m512i wv[8];
      UnpackBlock<kFormat>(t[i].payload + b * kPayload, wv);
      __m512 dw, mw;
      BlockScales<kFormat>(t[i], b, d[i], dmin[i], dw, mw);
      const __m512 dot = _mm512_maskz_cvtepi32_ps(kAll, BlockDot<kFormat>(wv, x4, xs));
      acc[i] = _mm512_fmadd_ps(dot, _mm512_mul_ps(dw, _mm512_set1_ps(xd)), acc[i]);
      if constexpr (kMins) acc[i] = _mm512_fmadd_ps(mw, _mm512_set1_ps(xd * float(xs)), acc[i]);
    }
  }
  for (int i = 0; i < kGroups; ++i) _mm512_storeu_ps(tile + i * kPackedRows, acc[i]);
}

// Q6_K's top 2 bits of chunk c from a high-bit vector, in place (bits 4-5
// of each byte). 16-bit shifts: the bits a shift carries across a byte are
// masked off.
template <int c>
SWAN_VNNI_TARGET inline __m512i TopBits(__m512i high) {
  const __m512i mask = _mm512_set1_epi8(0x30);
  if constexpr (c < 2) return _mm512_and_si512(_mm512_slli_epi16(high, 4 - 2 * c), mask);
  if constexpr (c == 2) return _mm512_and_si512(high, mask);
  return _mm512_and_si512(_mm512_srli_epi16(high, 2), mask);
}

// Q6_K's block b of a group's 16 rows: q in [0, 63] as unsigned bytes,
// chunk c of wv values 4c .. 4c + 3 of every row; sc_low and sc_high the
// int8 scales of each row's half blocks.
SWAN_VNNI_TARGET inline void UnpackQ6K(const GroupTileData& t, int64_t b, __m512i (&wv)[8], __m512i& sc_low,
                                       __m512i& sc_high) {
  const __m512i low = _mm512_set1_epi8(0x0f);
  const uint8_t* p = t.payload + b * PayloadBytes(Packed::kQ6_K);
  const __m512i h0 = _mm512_loadu_si512(p + 256), h1 = _mm512_loadu_si512(p + 320);
  const __m512i b0 = _mm512_loadu_si512(p), b1 = _mm512_loadu_si512(p + 64), b2 = _mm512_loadu_si512(p + 128),
                b3 = _mm512_loadu_si512(p + 192);
  wv[0] = _mm512_or_si512(_mm512_and_si512(b0, low), TopBits<0>(h0));
  wv[1] = _mm512_or_si512(_mm512_and_si512(b1, low), TopBits<1>(h0));
  wv[2] = _mm512_or_si512(_mm512_and_si512(b2, low), TopBits<2>(h0));
  wv[3] = _mm512_or_si512(_mm512_and_si512(b3, low), TopBits<3>(h0));
  wv[4] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(b0, 4), low), TopBits<0>(h1));
  wv[5] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(b1, 4), low), TopBits<1>(h1));
  wv[6] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(b2, 4), low), TopBits<2>(h1));
  wv[7] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(b3, 4), low), TopBits<3>(h1));
  const int8_t* sc = t.sub_scales + b * 2 * kPackedRows;  // [2, 16]
  sc_low = _mm512_maskz_cvtepi8_epi32(kAll, _mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
  sc_high = _mm512_maskz_cvtepi8_epi32(kAll, _mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 16)));
}

// One input row's Q6_K block: each half block's int32 sum started at -32
// times its input sum, times its int8 scale. first: Σ x of values 0-15,
// second: of 16-31.
SWAN_VNNI_TARGET inline __m512i BlockDotQ6K(const __m512i (&wv)[8], const __m512i (&x4)[8], __m512i sc_low,
                                            __m512i sc_high, int32_t first, int32_t second) {
  __m512i lo = _mm512_set1_epi32(-32 * first), hi = _mm512_set1_epi32(-32 * second);
  for (int c = 0; c < 4; ++c) {
    lo = _mm512_dpbusd_epi32(lo, wv[c], x4[c]);
    hi = _mm512_dpbusd_epi32(hi, wv[c + 4], x4[c + 4]);
  }
  return _mm512_add_epi32(_mm512_mullo_epi32(lo, sc_low), _mm512_mullo_epi32(hi, sc_high));
}

// Q6_K's GroupTile: the int32 sums scaled by d and the input's scale.
template <int kRows>
SWAN_VNNI_TARGET void GroupTileQ6K(const BlockJob& job, int64_t g, int64_t row, float* tile) {
  const GroupTileData t = TileData(job, g, row);
  const int64_t blocks = t.blocks, k = t.k;
  __m512 acc[kRows];
  for (int r = 0; r < kRows; ++r) acc[r] = _mm512_setzero_ps();
  __m512 dw = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    if (row == 0) PrefetchGroups<1>(&t, b, PayloadBytes(Packed::kQ6_K));
    __m512i wv[8], sc_low, sc_high;
    UnpackQ6K(t, b, wv, sc_low, sc_high);
    if (b % 8 == 0)
      dw = _mm512_maskz_cvtph_ps(kAll,
                                 _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.scales + b / 8 * kPackedRows)));
    for (int r = 0; r < kRows; ++r) {
      __m512i x4[8];
      BroadcastBlock(t.xq + r * k + b * kQuantBlockValues, x4);
      const int32_t first = t.xl[r * blocks + b], second = t.xs[r * blocks + b] - first;
      const __m512i dot = BlockDotQ6K(wv, x4, sc_low, sc_high, first, second);
      acc[r] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(kAll, dot),
                               _mm512_mul_ps(dw, _mm512_set1_ps(t.xd[r * blocks + b])), acc[r]);
    }
  }
  for (int r = 0; r < kRows; ++r) _mm512_storeu_ps(tile + r * kPackedRows, acc[r]);
}

// GroupsSideBySide's Q6_K.
template <int kGroups>
SWAN_VNNI_TARGET void GroupsSideBySideQ6K(const BlockJob& job, int64_t g0, int64_t step, float* tile) {
  GroupTileData t[kGroups];
  for (int i = 0; i < kGroups; ++i) t[i] = TileData(job, g0 + i * step, 0);
  const int64_t blocks = t[0].blocks;
  __m512 acc[kGroups], dw[kGroups];
  for (int i = 0; i < kGroups; ++i) acc[i] = dw[i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    __m512i x4[8];
    BroadcastBlock(t[0].xq + b * kQuantBlockValues, x4);
    const int32_t first = t[0].xl[b], second = t[0].xs[b] - first;
    const __m512 xd = _mm512_set1_ps(t[0].xd[b]);
    PrefetchGroups<kGroups>(t, b, PayloadBytes(Packed::kQ6_K));
    for (int i = 0; i < kGroups; ++i) {
      __m512i wv[8], sc_low, sc_high;
      UnpackQ6K(t[i], b, wv, sc_low, sc_high);
      if (b % 8 == 0)
        dw[i] = _mm512_maskz_cvtph_ps(
            kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t[i].scales + b / 8 * kPackedRows)));
      const __m512i dot = BlockDotQ6K(wv, x4, sc_low, sc_high, first, second);
      acc[i] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(kAll, dot), _mm512_mul_ps(dw[i], xd), acc[i]);
    }
  }
  for (int i = 0; i < kGroups; ++i) _mm512_storeu_ps(tile + i * kPackedRows, acc[i]);
}

}  // namespace

void GroupsAvx512Vnni(const BlockJob& job, int64_t g_begin, int64_t g_end) {
  WithPacked(job.w.type, [&](auto format) {
    if (job.m == 1) {
      // Decode: the groups in kDecodeStreams parts, read side by side.
      const int64_t part = (g_end - g_begin) / kDecodeStreams;
      float out[kDecodeStreams * kPackedRows];  // [kDecodeStreams, 16]
      for (int64_t g = g_begin; g < g_begin + part; ++g) {
        if constexpr (format() == Packed::kQ6_K)
          GroupsSideBySideQ6K<kDecodeStreams>(job, g, part, out);
        else
          GroupsSideBySide<format(), kDecodeStreams>(job, g, part, out);
        for (int i = 0; i < kDecodeStreams; ++i) StoreGroup(job, g + i * part, 0, 1, out + i * kPackedRows);
      }
      g_begin += kDecodeStreams * part;  // the rest, one by one
      if (g_begin == g_end) return;
    }
    ForEachTile<4>(job, g_begin, g_end, [&](auto rows, int64_t g, int64_t row, float* out) {
      if constexpr (format() == Packed::kQ6_K)
        GroupTileQ6K<rows()>(job, g, row, out);
      else
        GroupTile<rows(), format()>(job, g, row, out);
    });
  });
}

}  // namespace swan::block_kernels

#endif  // __x86_64__
