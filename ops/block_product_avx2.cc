// BlockProduct's AVX2 kernel, and the input quantization with AVX2. A
// vector holds 4 values of 8 rows (half a group); vpmaddubsw multiplies
// unsigned weight bytes by signed input bytes and adds pairs into int16,
// vpmaddwd by ones adds those pairs into each row's int32 lane.
//   Q4_0: nibbles n in [0, 15] against q in [-127, 127]: a pair is at most
//         3810 in magnitude, so a block's 8 chunks add up in int16 (30480)
//         before one vpmaddwd; the offset (n = value + 8) comes out through
//         the block's input sum.
//   Q4_1: Q4_0's sums without the offset; the block's min times its input
//         sum is added in float. Q4_K: Q4_1 with scale d sc, min -(dmin m).
//   Q5_K: Q4_K with a fifth bit: q up to 31, a pair up to 7874, so two
//         vpmaddwd of four chunks each. Q5_0 and Q5_1 are Q4_0 (offset 16)
//         and Q4_1 so.
//   Q8_0: signed times signed, by the sign trick: |w| times q with w's sign
//         (a pair at most 2 * 128 * 127 = 32512), each chunk widened apart.
#if defined(__x86_64__)

#include <immintrin.h>

#include <cstring>

#include "ops/block_kernels.h"

#define SWAN_AVX2_TARGET __attribute__((target("avx2,fma,f16c")))

namespace swan::block_kernels {
namespace {

SWAN_AVX2_TARGET inline __m256i Broadcast4(const int8_t* p) {
  int32_t four;
  std::memcpy(&four, p, sizeof(four));
  return _mm256_set1_epi32(four);
}

// Q5_x's top bit of a value from bit `bit` of each byte of `top`, in place
// (bit 4); bits a 16-bit shift carries across a byte are masked off.
template <int bit>
SWAN_AVX2_TARGET inline __m256i FifthBit(__m256i top) {
  const __m256i mask = _mm256_set1_epi8(0x10);
  if constexpr (bit < 4) return _mm256_and_si256(_mm256_slli_epi16(top, 4 - bit), mask);
  if constexpr (bit == 4) return _mm256_and_si256(top, mask);
  return _mm256_and_si256(_mm256_srli_epi16(top, bit - 4), mask);
}

// Rows [row, row + kRows) of the input against group g: tile [kRows, 16].
template <int kRows, Packed kFormat>
SWAN_AVX2_TARGET void GroupTile(const BlockJob& job, int64_t g, int64_t row, float* tile) {
  const GroupTileData t = TileData(job, g, row);
  const int64_t blocks = t.blocks, k = t.k;
  constexpr bool kQ4 = kFormat != Packed::kQ8_0;
  constexpr bool kSuper = kFormat == Packed::kQ4_K || kFormat == Packed::kQ5_K;  // d sc, dmin m
  constexpr int32_t kOffset = NibbleOffset(kFormat);  // Q4_0's nibbles are value + 8, Q5_0's value + 16
  constexpr int64_t kPayload = HasFifthBit(kFormat) ? 320 : kQ4 ? 256 : 512;
  const __m256i low = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  __m256 acc[kRows][2];
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* p = t.payload + b * kPayload;
    for (int half = 0; half < 2; ++half) {  // rows 8 half .. 8 half + 7: bytes [32 half, 32 half + 32) of a chunk
      __m256 dw, mw = _mm256_setzero_ps();
      if constexpr (kSuper) {
        // d sc and -(dmin m), as ggml forms them
        const __m256 d = _mm256_cvtph_ps(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(t.scales + b / 8 * kPackedRows + 8 * half)));
        const __m256 dmin = _mm256_cvtph_ps(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(t.mins + b / 8 * kPackedRows + 8 * half)));
        const int8_t* sub = t.sub_scales + b * 2 * kPackedRows + 8 * half;  // sc: [0, 8), m: [16, 24)
        dw = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sub)))));
        mw = _mm256_sub_ps(_mm256_setzero_ps(),
                           _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
                                                   _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sub + kPackedRows))))));
      } else {
        dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.scales + b * kPackedRows + 8 * half)));
      }
      if constexpr (HasBlockMin(kFormat))
        mw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.mins + b * kPackedRows + 8 * half)));
      __m256i wv[8];  // chunk c: values 4c .. 4c + 3 of the 8 rows
      if constexpr (kQ4) {
        for (int c = 0; c < 4; ++c) {
          const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * c + 32 * half));
          wv[c] = _mm256_and_si256(bytes, low);
          wv[c + 4] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low);
        }
      } else {
        for (int c = 0; c < 8; ++c)
          wv[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * c + 32 * half));
      }
      if constexpr (HasFifthBit(kFormat)) {
        const __m256i top = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 256 + 32 * half));
        wv[0] = _mm256_or_si256(wv[0], FifthBit<0>(top));
        wv[1] = _mm256_or_si256(wv[1], FifthBit<1>(top));
        wv[2] = _mm256_or_si256(wv[2], FifthBit<2>(top));
        wv[3] = _mm256_or_si256(wv[3], FifthBit<3>(top));
        wv[4] = _mm256_or_si256(wv[4], FifthBit<4>(top));
        wv[5] = _mm256_or_si256(wv[5], FifthBit<5>(top));
        wv[6] = _mm256_or_si256(wv[6], FifthBit<6>(top));
        wv[7] = _mm256_or_si256(wv[7], FifthBit<7>(top));
      }
      for (int r = 0; r < kRows; ++r) {
        const int8_t* x = t.xq + r * k + b * kQuantBlockValues;
        __m256i dot;
        if constexpr (HasFifthBit(kFormat)) {
          // q up to 31: a pair up to 7874, so four chunks (31496) per vpmaddwd
          __m256i pairs[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
          for (int c = 0; c < 8; ++c)
            pairs[c / 4] = _mm256_add_epi16(pairs[c / 4], _mm256_maddubs_epi16(wv[c], Broadcast4(x + 4 * c)));
          dot = _mm256_add_epi32(_mm256_madd_epi16(pairs[0], ones), _mm256_madd_epi16(pairs[1], ones));
          if constexpr (kOffset != 0) dot = _mm256_sub_epi32(dot, _mm256_set1_epi32(kOffset * t.xs[r * blocks + b]));
        } else if constexpr (kQ4) {
          __m256i pairs = _mm256_setzero_si256();
          for (int c = 0; c < 8; ++c) pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(wv[c], Broadcast4(x + 4 * c)));
          dot = _mm256_sub_epi32(_mm256_madd_epi16(pairs, ones), _mm256_set1_epi32(kOffset * t.xs[r * blocks + b]));
        } else {
          dot = _mm256_setzero_si256();
          for (int c = 0; c < 8; ++c) {
            const __m256i pairs =
                _mm256_maddubs_epi16(_mm256_abs_epi8(wv[c]), _mm256_sign_epi8(Broadcast4(x + 4 * c), wv[c]));
            dot = _mm256_add_epi32(dot, _mm256_madd_epi16(pairs, ones));
          }
        }
        acc[r][half] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dw, _mm256_set1_ps(t.xd[r * blocks + b])), acc[r][half]);
        if constexpr (HasBlockMin(kFormat) || kSuper)
          acc[r][half] = _mm256_fmadd_ps(mw, _mm256_set1_ps(t.xd[r * blocks + b] * float(t.xs[r * blocks + b])),
                                         acc[r][half]);
      }
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int half = 0; half < 2; ++half) _mm256_storeu_ps(tile + r * kPackedRows + 8 * half, acc[r][half]);
}

// Q6_K's top 2 bits of chunk c from a high-bit vector, in place (bits 4-5
// of each byte); bits a 16-bit shift carries across a byte are masked off.
template <int c>
SWAN_AVX2_TARGET inline __m256i TopBits(__m256i high) {
  const __m256i mask = _mm256_set1_epi8(0x30);
  if constexpr (c < 2) return _mm256_and_si256(_mm256_slli_epi16(high, 4 - 2 * c), mask);
  if constexpr (c == 2) return _mm256_and_si256(high, mask);
  return _mm256_and_si256(_mm256_srli_epi16(high, 2), mask);
}

// Q6_K: q in [0, 63] times q: a pair is at most 2 * 63 * 127 = 16002, so two
// chunks add in int16 before each vpmaddwd. Each half block's int32 sum,
// offset by -32 times its input sum, is multiplied by its int8 scale.
template <int kRows>
SWAN_AVX2_TARGET void GroupTileQ6K(const BlockJob& job, int64_t g, int64_t row, float* tile) {
  const GroupTileData t = TileData(job, g, row);
  const int64_t blocks = t.blocks, k = t.k;
  const __m256i low = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  __m256 acc[kRows][2];
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* p = t.payload + b * 384;
    for (int half = 0; half < 2; ++half) {  // rows 8 half .. 8 half + 7
      const __m256 dw = _mm256_cvtph_ps(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(t.scales + b / 8 * kPackedRows + 8 * half)));
      const int8_t* sc = t.sub_scales + b * 2 * kPackedRows + 8 * half;  // rows' scales: sc[0..8), sc[16..24)
      const __m256i sc_low = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc)));
      const __m256i sc_high = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 16)));
      const __m256i* at = reinterpret_cast<const __m256i*>(p + 32 * half);  // 64-byte chunks: at[2 c]
      const __m256i h0 = _mm256_loadu_si256(at + 8), h1 = _mm256_loadu_si256(at + 10);
      const __m256i b0 = _mm256_loadu_si256(at), b1 = _mm256_loadu_si256(at + 2), b2 = _mm256_loadu_si256(at + 4),
                    b3 = _mm256_loadu_si256(at + 6);
      __m256i wv[8];  // chunk c: values 4c .. 4c + 3 of the 8 rows, q
      wv[0] = _mm256_or_si256(_mm256_and_si256(b0, low), TopBits<0>(h0));
      wv[1] = _mm256_or_si256(_mm256_and_si256(b1, low), TopBits<1>(h0));
      wv[2] = _mm256_or_si256(_mm256_and_si256(b2, low), TopBits<2>(h0));
      wv[3] = _mm256_or_si256(_mm256_and_si256(b3, low), TopBits<3>(h0));
      wv[4] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b0, 4), low), TopBits<0>(h1));
      wv[5] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b1, 4), low), TopBits<1>(h1));
      wv[6] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b2, 4), low), TopBits<2>(h1));
      wv[7] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b3, 4), low), TopBits<3>(h1));
      for (int r = 0; r < kRows; ++r) {
        const int8_t* x = t.xq + r * k + b * kQuantBlockValues;
        const int32_t first = t.xl[r * blocks + b], second = t.xs[r * blocks + b] - first;
        __m256i sums[2];  // values 0-15, 16-31
        for (int h = 0; h < 2; ++h) {
          const int8_t* xh = x + 16 * h;
          const __m256i* w = wv + 4 * h;
          const __m256i pair01 = _mm256_add_epi16(_mm256_maddubs_epi16(w[0], Broadcast4(xh)),
                                                  _mm256_maddubs_epi16(w[1], Broadcast4(xh + 4)));
          const __m256i pair23 = _mm256_add_epi16(_mm256_maddubs_epi16(w[2], Broadcast4(xh + 8)),
                                                  _mm256_maddubs_epi16(w[3], Broadcast4(xh + 12)));
          sums[h] = _mm256_add_epi32(_mm256_madd_epi16(pair01, ones), _mm256_madd_epi16(pair23, ones));
          sums[h] = _mm256_sub_epi32(sums[h], _mm256_set1_epi32(32 * (h ? second : first)));
        }
        const __m256i dot = _mm256_add_epi32(_mm256_mullo_epi32(sums[0], sc_low), _mm256_mullo_epi32(sums[1], sc_high));
        acc[r][half] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dw, _mm256_set1_ps(t.xd[r * blocks + b])),
                                       acc[r][half]);
      }
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int half = 0; half < 2; ++half) _mm256_storeu_ps(tile + r * kPackedRows + 8 * half, acc[r][half]);
}

}  // namespace

void GroupsAvx2(const BlockJob& job, int64_t g_begin, int64_t g_end) {
  WithPacked(job.w.type, [&](auto format) {
    ForEachTile(job, g_begin, g_end, [&](auto rows, int64_t g, int64_t row, float* out) {
      if constexpr (format() == Packed::kQ6_K)
        GroupTileQ6K<rows()>(job, g, row, out);
      else
        GroupTile<rows(), format()>(job, g, row, out);
    });
  });
}

// Per block: amax by masking off the sign, d = amax / 127, q = x · (127 /
// amax) rounded to nearest even (vcvtps2dq, as the scalar loop's
// nearbyint), packed to int8 with saturation (|q| <= 127 already).
SWAN_AVX2_TARGET void QuantizeRowsAvx2(int8_t* q, float* d, int32_t* sum, const float* x, int64_t m, int64_t k) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const int64_t blocks = m * k / kQuantBlockValues;
  for (int64_t b = 0; b < blocks; ++b, x += kQuantBlockValues, q += kQuantBlockValues) {
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm256_loadu_ps(x + 8 * i);
      amax = _mm256_max_ps(amax, _mm256_and_ps(v[i], abs_mask));
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float max_abs = _mm_cvtss_f32(m4);
    d[b] = max_abs / 127.0f;
    const __m256 id = _mm256_set1_ps(max_abs != 0 ? 127.0f / max_abs : 0.0f);
    __m256i ints[4];
    for (int i = 0; i < 4; ++i) ints[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], id));
    // block sum: int32 lanes added, then across the vector
    __m256i s = _mm256_add_epi32(_mm256_add_epi32(ints[0], ints[1]), _mm256_add_epi32(ints[2], ints[3]));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
    sum[b] = _mm_cvtsi128_si32(s4);
    // int32 -> int16 -> int8; packs interleave 128-bit lanes, undone by a permute
    const __m256i w16a = _mm256_packs_epi32(ints[0], ints[1]), w16b = _mm256_packs_epi32(ints[2], ints[3]);
    const __m256i w8 = _mm256_packs_epi16(w16a, w16b);
    const __m256i ordered = _mm256_permutevar8x32_epi32(w8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), ordered);
  }
}

}  // namespace swan::block_kernels

#endif  // __x86_64__
