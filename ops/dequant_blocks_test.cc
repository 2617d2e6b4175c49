// K-quant dequantization, bit for bit, against values computed from what a
// block is made of: random quantized values, scales and mins are written
// into blocks by encoders following the format's description
// (ops/dequant_blocks.h), and each value must come back as ggml computes it,
// (d * scale) * q - dmin * min in float32.
#include "ops/dequant_blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "ops/quant_blocks.h"
#include "util/f16.h"

namespace swan {
namespace {

// What a block holds, before it is packed into bytes.
struct SuperBlock {
  uint16_t d = 0, dmin = 0;  // f16 (dmin: Q5_1's m)
  int q[256] = {};           // [DequantBlockValues] Q3_K 0..7; Q4_K 0..15; Q5_x 0..31; Q6_K 0..63
  int scale[16] = {};        // Q4_K/Q5_K: 8 of 0..63; Q6_K: 16 of -128..127; Q3_K: 16 of -32..31
  int min[8] = {};           // Q4_K/Q5_K: 0..63
};

// A random f16 of a normal magnitude in [2^-14, 2^-2).
uint16_t RandomHalf(std::mt19937& rng, bool negative_too) {
  const uint16_t exponent = uint16_t(1 + rng() % 12), mantissa = uint16_t(rng() % 1024);
  const uint16_t sign = negative_too && rng() % 2 ? 0x8000 : 0;
  return uint16_t(sign | exponent << 10 | mantissa);
}

SuperBlock RandomSuperBlock(DequantFormat type, std::mt19937& rng) {
  SuperBlock s;
  s.d = RandomHalf(rng, true);
  s.dmin = RandomHalf(rng, true);
  const bool six = type == DequantFormat::kQ6_K, three = type == DequantFormat::kQ3_K;
  const int levels = type == DequantFormat::kQ4_K ? 16 : six ? 64 : three ? 8 : 32;
  for (int& q : s.q) q = int(rng() % uint32_t(levels));
  for (int j = 0; j < 16; ++j) s.scale[j] = six ? int(rng() % 256) - 128 : int(rng() % 64) - (three ? 32 : 0);
  for (int& m : s.min) m = int(rng() % 64);
  // the ends of each range, so the packing of every bit is exercised
  s.q[0] = s.q[31] = s.q[255] = levels - 1;
  s.scale[7] = six ? -128 : three ? -32 : 63;
  if (three) s.scale[15] = 31;
  s.min[7] = 63;
  return s;
}

// The 12 bytes of eight 6-bit scales and mins: bytes 0..3 hold scales 0..3
// in their low 6 bits and the top 2 bits of scales 4..7 above them; bytes
// 4..7 the same for the mins; bytes 8..11 the low 4 bits of scale 4 + i
// (low nibble) and of min 4 + i (high nibble).
void PackScalesMins(const SuperBlock& s, uint8_t* out) {
  for (int i = 0; i < 4; ++i) {
    out[i] = uint8_t(s.scale[i] | (s.scale[i + 4] >> 4) << 6);
    out[i + 4] = uint8_t(s.min[i] | (s.min[i + 4] >> 4) << 6);
    out[i + 8] = uint8_t((s.scale[i + 4] & 15) | (s.min[i + 4] & 15) << 4);
  }
}

std::vector<uint8_t> Encode(DequantFormat type, const SuperBlock& s) {
  std::vector<uint8_t> b(DequantBlockBytes(type), 0);
  if (type == DequantFormat::kQ3_K) {
    // hmask[32], qs[64], scales[12], d. Value i = 128h + 32k + l: low 2
    // bits at bit 2k of qs[32h + l], the third at bit 4h + k of hmask[l].
    // Scale j, stored as j + 32: low 4 bits in the low (j < 8) or high
    // nibble of scales[j % 8], top 2 at bit 2 (j / 4) of scales[8 + j % 4].
    for (int i = 0; i < 256; ++i) {
      const int h = i / 128, k = i % 128 / 32, l = i % 32;
      b[size_t(32 + 32 * h + l)] |= uint8_t((s.q[i] & 3) << (2 * k));
      b[size_t(l)] |= uint8_t((s.q[i] >> 2) << (4 * h + k));
    }
    for (int j = 0; j < 16; ++j) {
      const int stored = s.scale[j] + 32;
      b[size_t(96 + j % 8)] |= uint8_t((stored & 15) << (j < 8 ? 0 : 4));
      b[size_t(104 + j % 4)] |= uint8_t((stored >> 4) << (2 * (j / 4)));
    }
    std::memcpy(b.data() + 108, &s.d, 2);
    return b;
  }
  if (type == DequantFormat::kQ6_K) {
    // value i = 128h + 32k + l: low 4 bits in ql[64h + l + 32 (k odd)]
    // (low nibble for k < 2), top 2 bits at bit 2k of qh[32h + l].
    for (int i = 0; i < 256; ++i) {
      const int h = i / 128, k = i % 128 / 32, l = i % 32;
      b[size_t(64 * h + l + 32 * (k % 2))] |= uint8_t((s.q[i] & 15) << (k < 2 ? 0 : 4));
      b[size_t(128 + 32 * h + l)] |= uint8_t((s.q[i] >> 4) << (2 * k));
    }
    for (int j = 0; j < 16; ++j) b[size_t(192 + j)] = uint8_t(int8_t(s.scale[j]));
    std::memcpy(b.data() + 208, &s.d, 2);
    return b;
  }
  std::memcpy(b.data(), &s.d, 2);
  if (DequantBlockValues(type) == 32) {
    // d, m (Q5_1), qh (bit j the fifth bit of value j), qs: value j < 16
    // the low nibble of qs[j], value j + 16 its high nibble
    const bool has_min = type == DequantFormat::kQ5_1;
    if (has_min) std::memcpy(b.data() + 2, &s.dmin, 2);
    uint8_t* qh = b.data() + (has_min ? 4 : 2);
    uint8_t* qs = qh + 4;
    for (int j = 0; j < 32; ++j) {
      qs[j % 16] |= uint8_t((s.q[j] & 15) << (j < 16 ? 0 : 4));
      qh[j / 8] |= uint8_t((s.q[j] >> 4) << (j % 8));
    }
    return b;
  }
  std::memcpy(b.data() + 2, &s.dmin, 2);
  PackScalesMins(s, b.data() + 4);
  const bool five = type == DequantFormat::kQ5_K;
  uint8_t* qs = b.data() + (five ? 48 : 16);
  // value i = 64c + 32 half + l: nibble `half` of qs[32c + l]; Q5_K's
  // fifth bit at bit i / 32 of qh[l].
  for (int i = 0; i < 256; ++i) {
    const int c = i / 64, half = i % 64 / 32, l = i % 32;
    qs[32 * c + l] |= uint8_t((s.q[i] & 15) << (4 * half));
    if (five) b[size_t(16 + l)] |= uint8_t((s.q[i] >> 4) << (i / 32));
  }
  return b;
}

float Expected(DequantFormat type, const SuperBlock& s, int i) {
  const float d = F16ToF32(s.d);
  if (type == DequantFormat::kQ5_0) return float(s.q[i] - 16) * d;
  if (DequantBlockValues(type) == 32) return float(s.q[i]) * d + F16ToF32(s.dmin);
  if (type == DequantFormat::kQ6_K) return d * float(s.scale[i / 16]) * float(s.q[i] - 32);
  if (type == DequantFormat::kQ3_K) return d * float(s.scale[i / 16]) * float(s.q[i] - 4);
  return d * float(s.scale[i / 32]) * float(s.q[i]) - F16ToF32(s.dmin) * float(s.min[i / 32]);
}

TEST(DequantBlocks, EveryFormatDequantizesBitForBit) {
  std::mt19937 rng(7);
  for (DequantFormat type : {DequantFormat::kQ5_0, DequantFormat::kQ5_1, DequantFormat::kQ4_K, DequantFormat::kQ5_K,
                             DequantFormat::kQ6_K, DequantFormat::kQ3_K}) {
    SCOPED_TRACE(DequantFormatName(type));
    constexpr int kBlocks = 40;  // one row of 40 blocks
    const int values = int(DequantBlockValues(type));
    std::vector<SuperBlock> supers;
    std::vector<uint8_t> row;  // [kBlocks * DequantBlockBytes(type)]
    for (int b = 0; b < kBlocks; ++b) {
      supers.push_back(RandomSuperBlock(type, rng));
      const std::vector<uint8_t> bytes = Encode(type, supers.back());
      row.insert(row.end(), bytes.begin(), bytes.end());
    }
    std::vector<float> out(size_t(kBlocks * values));  // [kBlocks * values]
    DequantizeFormatRow(type, out.data(), row.data(), int64_t(out.size()));
    int mismatches = 0;
    for (int b = 0; b < kBlocks; ++b)
      for (int i = 0; i < values; ++i) {
        const float want = Expected(type, supers[size_t(b)], i), got = out[size_t(b * values + i)];
        if (std::memcmp(&want, &got, sizeof(float)) != 0 && ++mismatches <= 5)
          ADD_FAILURE() << "block " << b << " value " << i << ": " << got << ", expected " << want;
      }
    EXPECT_EQ(mismatches, 0);
  }
}

// Q4KParts and Q5KParts take a block apart into what it was made of, and
// Q4KBlock and Q5KBlock put the same bytes back together.
TEST(DequantBlocks, Q4KAndQ5KPartsAreWhatTheBlockWasMadeOf) {
  std::mt19937 rng(3);
  for (DequantFormat type : {DequantFormat::kQ4_K, DequantFormat::kQ5_K}) {
    SCOPED_TRACE(DequantFormatName(type));
    const bool five = type == DequantFormat::kQ5_K;
    for (int b = 0; b < 20; ++b) {
      const SuperBlock s = RandomSuperBlock(type, rng);
      const std::vector<uint8_t> bytes = Encode(type, s);
      uint8_t q[256], sc[8], m[8];
      uint16_t d = 0, dmin = 0;
      (five ? Q5KParts : Q4KParts)(bytes.data(), q, sc, m, &d, &dmin);
      EXPECT_EQ(d, s.d);
      EXPECT_EQ(dmin, s.dmin);
      for (int i = 0; i < 256; ++i) ASSERT_EQ(q[i], s.q[i]) << i;
      for (int j = 0; j < 8; ++j) ASSERT_EQ(sc[j], s.scale[j]) << j;
      for (int j = 0; j < 8; ++j) ASSERT_EQ(m[j], s.min[j]) << j;
      std::vector<uint8_t> again(bytes.size());
      (five ? Q5KBlock : Q4KBlock)(q, sc, m, d, dmin, again.data());
      EXPECT_EQ(again, bytes);
    }
  }
}

// Q6KParts takes a block apart into what it was made of, and Q6KBlock puts
// the same bytes back together.
TEST(DequantBlocks, Q6KPartsAreWhatTheBlockWasMadeOf) {
  std::mt19937 rng(5);
  for (int b = 0; b < 20; ++b) {
    const SuperBlock s = RandomSuperBlock(DequantFormat::kQ6_K, rng);
    const std::vector<uint8_t> bytes = Encode(DequantFormat::kQ6_K, s);
    uint8_t q[256];
    int8_t scales[16];
    uint16_t d = 0;
    Q6KParts(bytes.data(), q, scales, &d);
    EXPECT_EQ(d, s.d);
    for (int i = 0; i < 256; ++i) ASSERT_EQ(q[i], s.q[i]) << i;
    for (int j = 0; j < 16; ++j) ASSERT_EQ(scales[j], s.scale[j]) << j;
    std::vector<uint8_t> again(bytes.size());
    Q6KBlock(q, scales, d, again.data());
    EXPECT_EQ(again, bytes);
  }
}

// Q3KParts takes a block apart into what it was made of, and Q3KAsQ6K
// writes Q6_K blocks of the same values, bit for bit.
TEST(DequantBlocks, Q3KIsHeldAsQ6KOfTheSameValues) {
  std::mt19937 rng(9);
  constexpr int kBlocks = 20;
  std::vector<uint8_t> row;  // [kBlocks * 110]
  std::vector<SuperBlock> supers;
  for (int b = 0; b < kBlocks; ++b) {
    supers.push_back(RandomSuperBlock(DequantFormat::kQ3_K, rng));
    const SuperBlock& s = supers.back();
    const std::vector<uint8_t> bytes = Encode(DequantFormat::kQ3_K, s);
    uint8_t q[256];
    int8_t scales[16];
    uint16_t d = 0;
    Q3KParts(bytes.data(), q, scales, &d);
    EXPECT_EQ(d, s.d);
    for (int i = 0; i < 256; ++i) ASSERT_EQ(q[i], s.q[i]) << i;
    for (int j = 0; j < 16; ++j) ASSERT_EQ(scales[j], s.scale[j]) << j;
    row.insert(row.end(), bytes.begin(), bytes.end());
  }
  std::vector<uint8_t> six(size_t(kBlocks) * 210);  // [kBlocks * 210]
  Q3KAsQ6K(row.data(), kBlocks, six.data());
  std::vector<float> from3(size_t(kBlocks) * 256), from6(from3.size());  // [kBlocks * 256]
  DequantizeFormatRow(DequantFormat::kQ3_K, from3.data(), row.data(), int64_t(from3.size()));
  DequantizeFormatRow(DequantFormat::kQ6_K, from6.data(), six.data(), int64_t(from6.size()));
  EXPECT_EQ(std::memcmp(from3.data(), from6.data(), from3.size() * sizeof(float)), 0);
  // and both are the values the blocks were made of
  EXPECT_EQ(from3[0], Expected(DequantFormat::kQ3_K, supers[0], 0));
}

TEST(DequantBlocks, RefusesRowsOfOtherLengths) {
  std::vector<uint8_t> block(DequantBlockBytes(DequantFormat::kQ4_K));  // [144]
  std::vector<float> out(512);                                          // [512]
  EXPECT_THROW(DequantizeFormatRow(DequantFormat::kQ4_K, out.data(), block.data(), 200), std::invalid_argument);
  EXPECT_THROW(DequantizeFormatRow(DequantFormat::kQ5_0, out.data(), block.data(), 40), std::invalid_argument);
}

}  // namespace
}  // namespace swan
