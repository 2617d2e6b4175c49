// ggml's block formats beyond Q8_0/Q4_0/Q4_1: the K-quants that the Q4_K_M
// and Q5_K_M files most llama.cpp users run are made of, Q3_K, and the older
// 32-value formats llama.cpp falls back to for rows that are not a multiple
// of 256. A model holds Q4_K, Q5_K, Q6_K, Q5_0 and Q5_1 as they are, and
// Q3_K as Q6_K of the same values (model/gguf_weights.h); the reference
// and the tests dequantize them as ggml does: each value
// below is computed in float32 in the order written.
//   Q5_0, 22 bytes per 32: f16 d, qh[4] (u32), qs[16]: value j (j < 16) is
//         the low nibble of qs[j], value j + 16 its high nibble, with bit j
//         of qh (value j, j < 32) above it as a fifth; (q - 16) * d.
//   Q5_1, 24 bytes per 32: f16 d, f16 m, qh[4], qs[16]: Q5_0's q; q * d + m.
// Super-blocks of 256 values, in 8 sub-blocks of 32 (Q4_K, Q5_K) or 16 of
// 16 (Q6_K):
//   Q4_K, 144 bytes: f16 d, f16 dmin, scales[12], qs[128].
//         scales packs 8 6-bit scales sc[j] and 8 6-bit mins m[j]:
//           j < 4:  sc = scales[j] & 63, m = scales[j + 4] & 63;
//           j >= 4: sc = (scales[j + 4] & 15) | (scales[j - 4] >> 6) << 4,
//                   m  = (scales[j + 4] >> 4) | (scales[j] >> 6) << 4.
//         Values 64c .. 64c + 31 are the low nibbles of qs[32c .. 32c + 31]
//         (sub-block 2c), values 64c + 32 .. 64c + 63 their high nibbles
//         (sub-block 2c + 1); value = (d * sc) * q - (dmin * m).
//   Q5_K, 176 bytes: f16 d, f16 dmin, scales[12], qh[32], qs[128]: Q4_K's
//         layout with a fifth bit: value 64c + l (l < 32) adds 16 to its
//         nibble when bit 2c of qh[l] is set, value 64c + 32 + l when bit
//         2c + 1 is.
//   Q6_K, 210 bytes: ql[128], qh[64], int8 scales[16], f16 d. Each half h
//         of 128 values reads ql[64h ..], qh[32h ..], scales[8h ..]: for
//         l < 32, value 128h + 32i + l (i in 0..3) is q - 32 where q is
//         the low (i = 0, 1) or high (i = 2, 3) nibble of ql[64h + l + 32 (i
//         odd)] with bits 2i, 2i + 1 of qh[32h + l] above it; value =
//         (d * scales[8h + 2i + l / 16]) * (q - 32).
//   Q3_K, 110 bytes: hmask[32], qs[64], scales[12], f16 d. Scale j (16 of
//         6 bits, for values 16j .. 16j + 15) is s - 32, s's low 4 bits the
//         low (j < 8) or high nibble of scales[j % 8], its top 2 bits bits
//         2 (j / 4), 2 (j / 4) + 1 of scales[8 + j % 4]. Each half h of 128
//         values reads qs[32h ..]: for l < 32, value 128h + 32i + l (i in
//         0..3) has bits 2i, 2i + 1 of qs[32h + l] as q's low 2 bits and bit
//         4h + i of hmask[l] as its third; value = (d * scale) * (q - 4).
//         Swan holds Q3_K as Q6_K, whose values include these exactly (the
//         same d and scales, q + 28 in Q6_K's 6 bits): 210 bytes for 110.
#pragma once

#include <cstddef>
#include <cstdint>

namespace swan {

enum class DequantFormat : uint8_t { kQ5_0, kQ5_1, kQ4_K, kQ5_K, kQ6_K, kQ3_K };

// Values per block: a row's length must be a multiple of it.
constexpr int64_t DequantBlockValues(DequantFormat f) {
  return f == DequantFormat::kQ5_0 || f == DequantFormat::kQ5_1 ? 32 : 256;
}

constexpr size_t DequantBlockBytes(DequantFormat f) {
  switch (f) {
    case DequantFormat::kQ5_0: return 22;
    case DequantFormat::kQ5_1: return 24;
    case DequantFormat::kQ4_K: return 144;
    case DequantFormat::kQ5_K: return 176;
    case DequantFormat::kQ6_K: return 210;
    case DequantFormat::kQ3_K: return 110;
  }
  return 0;
}

// "Q5_0", ..., "Q3_K"
const char* DequantFormatName(DequantFormat f);

// dst [n] float32 from src [n / DequantBlockValues(f) blocks]; n a multiple
// of DequantBlockValues(f).
void DequantizeFormatRow(DequantFormat f, float* dst, const uint8_t* src, int64_t n);

// One Q6_K super-block's parts: q [256] in [0, 63] (value i = d * scales[i /
// 16] * (q[i] - 32)), scales [16], and d's f16 bits. Q6KBlock is the
// inverse: block [210] from them. Swan computes in the K-quants' own values
// (ops/packed_blocks.h), so these move them between layouts unchanged.
void Q6KParts(const uint8_t* block, uint8_t* q, int8_t* scales, uint16_t* d);
void Q6KBlock(const uint8_t* q, const int8_t* scales, uint16_t d, uint8_t* block);

// One Q3_K super-block's parts: q [256] in [0, 7] (value i = d * scales[i /
// 16] * (q[i] - 4)), scales [16] in [-32, 31], and d's f16 bits.
void Q3KParts(const uint8_t* block, uint8_t* q, int8_t* scales, uint16_t* d);
// q6 [blocks * 210] = q3 [blocks * 110] as Q6_K blocks of the same values.
void Q3KAsQ6K(const uint8_t* q3, int64_t blocks, uint8_t* q6);

// One Q4_K super-block's parts: q [256] in [0, 15] (value i = (d * sc[i /
// 32]) * q[i] - dmin * m[i / 32]), sc [8] and m [8] in [0, 63], and the f16
// bits of d and dmin. Q4KBlock is the inverse: block [144] from them.
void Q4KParts(const uint8_t* block, uint8_t* q, uint8_t* sc, uint8_t* m, uint16_t* d, uint16_t* dmin);
void Q4KBlock(const uint8_t* q, const uint8_t* sc, const uint8_t* m, uint16_t d, uint16_t dmin, uint8_t* block);
// The same for Q5_K: q in [0, 31], block [176].
void Q5KParts(const uint8_t* block, uint8_t* q, uint8_t* sc, uint8_t* m, uint16_t* d, uint16_t* dmin);
void Q5KBlock(const uint8_t* q, const uint8_t* sc, const uint8_t* m, uint16_t d, uint16_t dmin, uint8_t* block);

}  // namespace swan
