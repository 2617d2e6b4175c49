// BlockProduct's AVX2 kernel, and the input quantization with AVX2. A
// vector holds 4 values of 8 rows (half a group); vpmaddubsw multiplies
// unsigned weight bytes by signed input bytes and adds pairs into int16,
// vpmaddwd by ones adds those pairs into each row's int32 lane.
//   Q4_0: nibbles n in [0, 15] against q in [-127, 127]: a pair is at most
//         3810 in magnitude, so a block's 8 chunks add up in int16 (30480)
//         before one vpmaddwd; the offset (n = value + 8) comes out through
//         the block's input sum.
//   Q4_1: Q4_0's sums without the offset; the block's min times its input
//         sum is added in float. Q4_K: Q4_1 with scale d sc, min -(dmin m):
//         vpmaddwd multiplies the pairs by sc, and d and dmin scale the
//         super-block's float sums once.
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

// *p in every lane, broadcast by a load (vbroadcastss): a scalar multiplied
// first and then moved to a vector (vmovd, vpbroadcastd) took a quarter of
// Q4_0's time.
SWAN_AVX2_TARGET inline __m256i BroadcastInt(const int32_t* p) {
  return _mm256_castps_si256(_mm256_broadcast_ss(reinterpret_cast<const float*>(p)));
}

// Q5_x's top bit of a value from bit `bit` of each byte of `top`, in place
// (bit 4); bits a 16-bit shift carries across a byte are masked off. `bit`
// is known once the chunk loop is unrolled, and the shifts take immediates.
SWAN_AVX2_TARGET inline __m256i FifthBit(__m256i top, int bit) {
  const __m256i mask = _mm256_set1_epi8(0x10);
  if (bit < 4) return _mm256_and_si256(_mm256_slli_epi16(top, 4 - bit), mask);
  if (bit == 4) return _mm256_and_si256(top, mask);
  return _mm256_and_si256(_mm256_srli_epi16(top, bit - 4), mask);
}

// Keeps v in a register as it is: stops the compiler from reassociating a
// chunk's additions into later chunks' (g++ 12 did, and spilled the
// products it had computed ahead of them to the stack).
SWAN_AVX2_TARGET inline void Materialize(__m256i& v) { __asm__("" : "+x"(v)); }

// Each of 8 rows' int8 scales sc [8] (Q6_K's; Q4_K's and Q5_K's, 0-63) in
// both int16 lanes of the row's pair: a byte shuffle puts each scale in the
// high byte of both int16s, and an arithmetic shift brings it down with its
// sign (two operations where a widening, a mask, a shift and an or took
// four).
SWAN_AVX2_TARGET inline __m256i ScalePerPair(const int8_t* sc) {
  int64_t eight;
  std::memcpy(&eight, sc, sizeof(eight));
  const __m256i to_high = _mm256_setr_epi8(-1, 0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3,  //
                                           -1, 4, -1, 4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7);
  return _mm256_srai_epi16(_mm256_shuffle_epi8(_mm256_set1_epi64x(eight), to_high), 8);
}

// A K-quant super-block's end (blocks b0 .. b0 + 7): tile [kRows, 16] +=
// d scaled - dmin Σ m xd Σ x, and scaled [kRows, 2] back to 0. The float
// products by d, dmin and each block's m come once per 8 blocks here
// instead of at every block (docs/performance.md, K-quant decode products).
template <int kRows>
SWAN_AVX2_TARGET inline void FoldSuperBlock(const GroupTileData& t, int64_t b0, __m256 (&scaled)[kRows][2],
                                            float* tile) {
  float xd_sum[kRows][8];  // [rows, block] xd Σ x of each block's input
  for (int r = 0; r < kRows; ++r)
    _mm256_storeu_ps(xd_sum[r], _mm256_mul_ps(_mm256_loadu_ps(t.xd + r * t.blocks + b0),
                                              _mm256_cvtepi32_ps(_mm256_loadu_si256(
                                                  reinterpret_cast<const __m256i*>(t.xs + r * t.blocks + b0)))));
  for (int half = 0; half < 2; ++half) {  // rows 8 half .. 8 half + 7
    __m256 mins[kRows];                   // Σ m xd Σ x
    for (int r = 0; r < kRows; ++r) mins[r] = _mm256_setzero_ps();
    for (int j = 0; j < 8; ++j) {
      const int8_t* m = t.sub_scales + (b0 + j) * 2 * kPackedRows + kPackedRows + 8 * half;
      const __m256 mv = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(m))));
      for (int r = 0; r < kRows; ++r) mins[r] = _mm256_fmadd_ps(mv, _mm256_broadcast_ss(&xd_sum[r][j]), mins[r]);
    }
    const __m256 d =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.scales + b0 / 8 * kPackedRows + 8 * half)));
    const __m256 dmin =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.mins + b0 / 8 * kPackedRows + 8 * half)));
    for (int r = 0; r < kRows; ++r) {
      float* out = tile + r * kPackedRows + 8 * half;
      _mm256_storeu_ps(out, _mm256_fmadd_ps(d, scaled[r][half], _mm256_fnmadd_ps(dmin, mins[r], _mm256_loadu_ps(out))));
      scaled[r][half] = _mm256_setzero_ps();
    }
  }
}

// Rows [row, row + kRows) of the input against groups g + i step, i <
// kGroups, block by block (in decode 2 groups side by side, whose weights
// are asked for line by line in turn: 1.12-1.14x faster products than one
// group at a time, docs/performance.md): tiles [kGroups, kRows, 16].
// Chunk by chunk of a block, the 16 weight rows' 4 values (two vectors, one
// per half) are loaded and unpacked once, and every input row's 4 values
// broadcast once for both halves: the tile's kRows x 2 integer sums and the
// chunk's weights fill AVX2's 16 registers at kRows = 4. Each block's sums
// are then scaled into the float sums kept in `tile`. Against the loop this
// replaced (half by half, each input value broadcast twice, a block's float
// sums in registers, spilled), build/bench/block_product_bench on one
// thread, Zen 5 capped to AVX2: Q8_0 1.5x, Q4_0 1.46x, Q4_K 1.47x.
template <int kRows, Packed kFormat, int kGroups = 1>
SWAN_AVX2_TARGET void GroupTile(const BlockJob& job, int64_t g, int64_t step, int64_t row, float* tiles) {
  GroupTileData ts[kGroups];  // groups g + i step
  for (int i = 0; i < kGroups; ++i) ts[i] = TileData(job, g + i * step, row);
  const int64_t blocks = ts[0].blocks, k = ts[0].k;
  constexpr bool kQ4 = kFormat != Packed::kQ8_0;
  constexpr bool kSuper = kFormat == Packed::kQ4_K || kFormat == Packed::kQ5_K;  // d sc, dmin m
  constexpr bool kFive = HasFifthBit(kFormat);
  constexpr int32_t kOffset = NibbleOffset(kFormat);  // Q4_0's nibbles are value + 8, Q5_0's value + 16
  constexpr int kOffsetShift = kOffset == 8 ? 3 : 4;  // kOffset Σ x as a shift
  static_assert(kOffset == 0 || kOffset == 1 << kOffsetShift);
  constexpr int64_t kPayload = PayloadBytes(kFormat);
  const __m256i low = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  for (int i = 0; i < kGroups * kRows * kPackedRows; ++i) tiles[i] = 0.0f;
  __m256 scaled[kGroups][kRows][2];  // [groups, rows, half] K-quants: the super-block's Σ xd sc q x
  for (auto& group : scaled)
    for (auto& halves : group) halves[0] = halves[1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    if (row == 0) PrefetchGroups<kGroups>(ts, b, kPayload);  // later tiles read the groups from cache
    for (int i = 0; i < kGroups; ++i) {
      const GroupTileData& t = ts[i];
      float* tile = tiles + i * kRows * kPackedRows;  // [kRows, 16]
      const uint8_t* p = t.payload + b * kPayload;
      const int8_t* x[kRows];  // each row's 32 values of the block
      for (int r = 0; r < kRows; ++r) x[r] = t.xq + r * k + b * kQuantBlockValues;
      __m256i dot[kRows][2];  // [rows, half] int32: rows 8 half .. 8 half + 7 of the group
      for (int r = 0; r < kRows; ++r) dot[r][0] = dot[r][1] = _mm256_setzero_si256();
      // [half] what vpmaddwd multiplies each row's int16 pairs by: K-quants
      // their sub-scale sc (0-63: a pair's 30480 times 63, twice, fits
      // int32), which spares a float product per block; 1 for the others
      __m256i by[2] = {ones, ones};
      if constexpr (kSuper)
        for (int half = 0; half < 2; ++half) by[half] = ScalePerPair(t.sub_scales + b * 2 * kPackedRows + 8 * half);
      if constexpr (!kQ4) {
        // signed times signed by the sign trick: |w| times q with w's sign (a
        // pair at most 2 * 128 * 127 = 32512), each chunk widened apart
        for (int c = 0; c < 8; ++c) {
          const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * c));
          const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * c + 32));
          const __m256i a0 = _mm256_abs_epi8(w0), a1 = _mm256_abs_epi8(w1);
          for (int r = 0; r < kRows; ++r) {
            const __m256i xb = Broadcast4(x[r] + 4 * c);
            const __m256i pairs0 = _mm256_maddubs_epi16(a0, _mm256_sign_epi8(xb, w0));
            const __m256i pairs1 = _mm256_maddubs_epi16(a1, _mm256_sign_epi8(xb, w1));
            dot[r][0] = _mm256_add_epi32(dot[r][0], _mm256_madd_epi16(pairs0, ones));
            dot[r][1] = _mm256_add_epi32(dot[r][1], _mm256_madd_epi16(pairs1, ones));
            Materialize(dot[r][0]);
            Materialize(dot[r][1]);
          }
        }
      } else {
        // chunk c's bytes: low nibbles values 4c .. 4c + 3, high ones 16 + 4c ..
        __m256i pairs[kRows][2];  // int16 pairs of products, added up
        for (int r = 0; r < kRows; ++r) pairs[r][0] = pairs[r][1] = _mm256_setzero_si256();
        __m256i top[2] = {};  // [half] Q5_x's fifth bits of the block's values
        if constexpr (kFive)
          for (int half = 0; half < 2; ++half)
            top[half] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 256 + 32 * half));
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
          const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * c));
          const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * c + 32));
          __m256i lo0 = _mm256_and_si256(b0, low), hi0 = _mm256_and_si256(_mm256_srli_epi16(b0, 4), low);
          __m256i lo1 = _mm256_and_si256(b1, low), hi1 = _mm256_and_si256(_mm256_srli_epi16(b1, 4), low);
          if constexpr (kFive) {
            lo0 = _mm256_or_si256(lo0, FifthBit(top[0], c));
            hi0 = _mm256_or_si256(hi0, FifthBit(top[0], c + 4));
            lo1 = _mm256_or_si256(lo1, FifthBit(top[1], c));
            hi1 = _mm256_or_si256(hi1, FifthBit(top[1], c + 4));
          }
          for (int r = 0; r < kRows; ++r) {
            const __m256i xl = Broadcast4(x[r] + 4 * c), xh = Broadcast4(x[r] + 16 + 4 * c);
            pairs[r][0] = _mm256_add_epi16(
                pairs[r][0], _mm256_add_epi16(_mm256_maddubs_epi16(lo0, xl), _mm256_maddubs_epi16(hi0, xh)));
            pairs[r][1] = _mm256_add_epi16(
                pairs[r][1], _mm256_add_epi16(_mm256_maddubs_epi16(lo1, xl), _mm256_maddubs_epi16(hi1, xh)));
            Materialize(pairs[r][0]);
            Materialize(pairs[r][1]);
          }
          // Nibbles: a pair at most 2 * 15 * 127 = 3810, so all 8 chunks add
          // up in int16 (30480). With a fifth bit a pair reaches 7874: 4 chunks.
          if (kFive && c == 1) {
            for (int r = 0; r < kRows; ++r)
              for (int h = 0; h < 2; ++h) {
                dot[r][h] = _mm256_madd_epi16(pairs[r][h], by[h]);
                pairs[r][h] = _mm256_setzero_si256();
              }
          }
        }
        for (int r = 0; r < kRows; ++r) {
          for (int h = 0; h < 2; ++h) dot[r][h] = _mm256_add_epi32(dot[r][h], _mm256_madd_epi16(pairs[r][h], by[h]));
          if constexpr (kOffset != 0) {
            const __m256i offset = _mm256_slli_epi32(BroadcastInt(t.xs + r * blocks + b), kOffsetShift);
            dot[r][0] = _mm256_sub_epi32(dot[r][0], offset);
            dot[r][1] = _mm256_sub_epi32(dot[r][1], offset);
          }
        }
      }
      if constexpr (kSuper) {
        // Σ xd sc q x over the super-block; d, and the mins' term, at its
        // last block
        for (int r = 0; r < kRows; ++r) {
          const __m256 xd = _mm256_broadcast_ss(t.xd + r * blocks + b);
          for (int half = 0; half < 2; ++half)
            scaled[i][r][half] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[r][half]), xd, scaled[i][r][half]);
        }
        if (b % 8 == 7) FoldSuperBlock<kRows>(t, b - 7, scaled[i], tile);
        continue;
      }
      __m256 dw[2], mw[2];  // [half] the scales (and mins) of rows 8 half .. 8 half + 7
      for (int half = 0; half < 2; ++half) {
        mw[half] = _mm256_setzero_ps();
        dw[half] =
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.scales + b * kPackedRows + 8 * half)));
        if constexpr (HasBlockMin(kFormat))
          mw[half] =
              _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.mins + b * kPackedRows + 8 * half)));
      }
      for (int r = 0; r < kRows; ++r) {
        const __m256 xd = _mm256_broadcast_ss(t.xd + r * blocks + b);
        for (int half = 0; half < 2; ++half) {
          float* out = tile + r * kPackedRows + 8 * half;
          __m256 acc =
              _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[r][half]), _mm256_mul_ps(dw[half], xd), _mm256_loadu_ps(out));
          if constexpr (HasBlockMin(kFormat)) {  // + m Σ x: the min times the block's input sum
            const __m256 xsum = _mm256_cvtepi32_ps(BroadcastInt(t.xs + r * blocks + b));
            acc = _mm256_fmadd_ps(mw[half], _mm256_mul_ps(xd, xsum), acc);
          }
          _mm256_storeu_ps(out, acc);
        }
      }
    }
  }
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
// chunks add up in int16 before vpmaddwd multiplies each row's pairs by the
// row's int8 scale of its half block (values 0-15 or 16-31). The offset (q
// = value + 32) comes out as 32 (sc_0 Σ x_0-15 + sc_1 Σ x_16-31), the two
// input sums side by side in one more vpmaddwd. Groups and tiles as
// GroupTile's.
template <int kRows, int kGroups = 1>
SWAN_AVX2_TARGET void GroupTileQ6K(const BlockJob& job, int64_t g, int64_t step, int64_t row, float* tiles) {
  GroupTileData ts[kGroups];  // groups g + i step
  for (int i = 0; i < kGroups; ++i) ts[i] = TileData(job, g + i * step, row);
  const int64_t blocks = ts[0].blocks, k = ts[0].k;
  const __m256i low = _mm256_set1_epi8(0x0f), low16 = _mm256_set1_epi32(0xffff);
  for (int i = 0; i < kGroups * kRows * kPackedRows; ++i) tiles[i] = 0.0f;
  for (int64_t b = 0; b < blocks; ++b) {
    if (row == 0)
      PrefetchGroups<kGroups>(ts, b, PayloadBytes(Packed::kQ6_K));  // later tiles read the groups from cache
    for (int i = 0; i < kGroups; ++i) {
      const GroupTileData& t = ts[i];
      float* tile = tiles + i * kRows * kPackedRows;  // [kRows, 16]
      const uint8_t* p = t.payload + b * PayloadBytes(Packed::kQ6_K);
      __m256i sums[kRows];  // each row's Σ x of values 0-15 and 16-31, int16 side by side
      for (int r = 0; r < kRows; ++r) {
        const __m256i first = BroadcastInt(t.xl + r * blocks + b);
        const __m256i second = _mm256_sub_epi32(BroadcastInt(t.xs + r * blocks + b), first);
        sums[r] = _mm256_or_si256(_mm256_and_si256(first, low16), _mm256_slli_epi32(second, 16));
      }
      for (int half = 0; half < 2; ++half) {  // rows 8 half .. 8 half + 7
        const __m256 dw = _mm256_cvtph_ps(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(t.scales + b / 8 * kPackedRows + 8 * half)));
        const int8_t* sc = t.sub_scales + b * 2 * kPackedRows + 8 * half;  // rows' scales: sc[0..8), sc[16..24)
        const __m256i sc0 = ScalePerPair(sc), sc1 = ScalePerPair(sc + kPackedRows);
        const __m256i both = _mm256_blend_epi16(sc0, sc1, 0xAA);              // sc0 low, sc1 high
        const __m256i* at = reinterpret_cast<const __m256i*>(p + 32 * half);  // 64-byte chunks: at[2 c]
        __m256i dot[kRows];  // each row's int32 sum, started at -32 Σ sc x
        for (int r = 0; r < kRows; ++r)
          dot[r] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(both, sums[r]), 5));
        // Values 16 h .. 16 h + 15: the low nibbles (h 0), then the high ones,
        // each half's four chunks unpacked just before use, so that the
        // weights, the sums and the scales fit the 16 registers (all 8 chunks
        // at once spilled to the stack).
        for (int h = 0; h < 2; ++h) {
          const __m256i high = _mm256_loadu_si256(at + 8 + 2 * h);
          const auto nibbles = [&](int c) SWAN_AVX2_TARGET {
            const __m256i bytes = _mm256_loadu_si256(at + 2 * c);
            return _mm256_and_si256(h ? _mm256_srli_epi16(bytes, 4) : bytes, low);
          };
          const __m256i w0 = _mm256_or_si256(nibbles(0), TopBits<0>(high));  // chunk c: values 4c .. 4c + 3, q
          const __m256i w1 = _mm256_or_si256(nibbles(1), TopBits<1>(high));
          const __m256i w2 = _mm256_or_si256(nibbles(2), TopBits<2>(high));
          const __m256i w3 = _mm256_or_si256(nibbles(3), TopBits<3>(high));
          const __m256i scale = h ? sc1 : sc0;
          for (int r = 0; r < kRows; ++r) {
            const int8_t* xh = t.xq + r * k + b * kQuantBlockValues + 16 * h;
            const __m256i pair01 = _mm256_add_epi16(_mm256_maddubs_epi16(w0, Broadcast4(xh)),
                                                    _mm256_maddubs_epi16(w1, Broadcast4(xh + 4)));
            const __m256i pair23 = _mm256_add_epi16(_mm256_maddubs_epi16(w2, Broadcast4(xh + 8)),
                                                    _mm256_maddubs_epi16(w3, Broadcast4(xh + 12)));
            dot[r] = _mm256_add_epi32(dot[r], _mm256_madd_epi16(pair01, scale));
            dot[r] = _mm256_add_epi32(dot[r], _mm256_madd_epi16(pair23, scale));
          }
        }
        for (int r = 0; r < kRows; ++r) {
          float* out = tile + r * kPackedRows + 8 * half;
          _mm256_storeu_ps(out, _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[r]),
                                                _mm256_mul_ps(dw, _mm256_broadcast_ss(t.xd + r * blocks + b)),
                                                _mm256_loadu_ps(out)));
        }
      }
    }
  }
}

}  // namespace

void GroupsAvx2(const BlockJob& job, int64_t g_begin, int64_t g_end) {
  WithPacked(job.w.type, [&](auto format) {
    if (job.m == 1) {
      // Decode: the groups in 2 parts, read side by side (as the AVX-512
      // kernel reads them).
      constexpr int kStreams = 2;
      const int64_t part = (g_end - g_begin) / kStreams;
      float out[kStreams * kPackedRows];  // [kStreams, 16]
      for (int64_t g = g_begin; g < g_begin + part; ++g) {
        if constexpr (format() == Packed::kQ6_K)
          GroupTileQ6K<1, kStreams>(job, g, part, 0, out);
        else
          GroupTile<1, format(), kStreams>(job, g, part, 0, out);
        for (int i = 0; i < kStreams; ++i) StoreGroup(job, g + i * part, 0, 1, out + i * kPackedRows);
      }
      g_begin += kStreams * part;  // the rest, one by one
      if (g_begin == g_end) return;
    }
    constexpr int kTile = 4;
    ForEachTile<kTile>(job, g_begin, g_end, [&](auto rows, int64_t g, int64_t row, float* out) {
      if constexpr (format() == Packed::kQ6_K)
        GroupTileQ6K<rows()>(job, g, 0, row, out);
      else
        GroupTile<rows(), format()>(job, g, 0, row, out);
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
