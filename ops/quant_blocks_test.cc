#include "ops/quant_blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "util/f16.h"

namespace swan {
namespace {

// The format read from its definition, byte by byte (not through the
// structs): a little-endian f16 scale (and Q4_1's f16 min), then the
// quantized values.
float SpecValue(WeightType type, const uint8_t* block, int i) {
  const float d = F16ToF32(uint16_t(block[0] | block[1] << 8));
  if (type == WeightType::kQ8_0) return d * float(int8_t(block[2 + i]));
  const int values_at = type == WeightType::kQ4_1 ? 4 : 2;
  const uint8_t byte = block[values_at + i % 16];
  const int nibble = i < 16 ? byte & 0xf : byte >> 4;
  if (type == WeightType::kQ4_1) return float(nibble) * d + F16ToF32(uint16_t(block[2] | block[3] << 8));
  return d * float(nibble - 8);
}

TEST(QuantBlocks, DequantizationIsBitExactOnRandomBlocks) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> byte(0, 255);
  for (WeightType type : {WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ4_1}) {
    const int64_t rows = 37, in = 96;
    const size_t row_bytes = WeightRowBytes(type, in);
    std::vector<uint8_t> bytes(rows * row_bytes);  // [rows, row_bytes]
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(byte(rng));
    // finite scales: random bits would give infinities and NaN, whose
    // products do not compare bitwise
    for (size_t at = 0; at < bytes.size(); at += QuantBlockBytes(type)) {
      bytes[at + 1] &= 0x7b;
      if (type == WeightType::kQ4_1) bytes[at + 3] &= 0xfb;  // and finite mins
    }
    std::vector<float> got(size_t(rows * in));  // [rows, in]
    DequantizeRows(type, got.data(), bytes.data(), rows, in);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < in; ++c) {
        const uint8_t* block = bytes.data() + r * row_bytes + (c / 32) * QuantBlockBytes(type);
        const float want = SpecValue(type, block, int(c % 32));
        ASSERT_EQ(std::memcmp(&want, &got[size_t(r * in + c)], sizeof(float)), 0)
            << WeightTypeName(type) << " row " << r << " col " << c << ": " << want << " vs "
            << got[size_t(r * in + c)];
      }
  }
}

TEST(QuantBlocks, HandWrittenBlocks) {
  // Q4_0, scale 1 (f16 0x3c00): byte j = (j) | (15 - j) << 4, so value j is
  // j - 8 and value j + 16 is 7 - j.
  uint8_t q4[18] = {0x00, 0x3c};
  for (int j = 0; j < 16; ++j) q4[2 + j] = uint8_t(j | (15 - j) << 4);
  float v[32];
  DequantizeRows(WeightType::kQ4_0, v, q4, 1, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(v[j], float(j - 8));
    EXPECT_EQ(v[j + 16], float(7 - j));
  }
  // Q8_0, scale 0.5 (0x3800): value i = q[i] / 2
  uint8_t q8[34] = {0x00, 0x38};
  for (int i = 0; i < 32; ++i) q8[2 + i] = uint8_t(int8_t(i * 8 - 128));
  DequantizeRows(WeightType::kQ8_0, v, q8, 1, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(v[i], float(i * 8 - 128) / 2);
}

TEST(QuantBlocks, QuantizeRoundsAsTheReferenceQuantizer) {
  float x[32];  // -16 .. 15
  for (int i = 0; i < 32; ++i) x[i] = float(i - 16);
  BlockQ8_0 q8;
  QuantizeRowQ8_0(&q8, x, 32);
  EXPECT_EQ(q8.d, F32ToF16(16.0f / 127));
  EXPECT_EQ(q8.q[0], -127);  // the largest magnitude
  EXPECT_EQ(q8.q[16], 0);
  EXPECT_EQ(q8.q[17], 8);    // round(127 / 16) = round(7.94)
  EXPECT_EQ(q8.q[31], 119);  // round(15 * 7.9375) = round(119.06)
  BlockQ4_0 q4;
  QuantizeRowQ4_0(&q4, x, 32);
  EXPECT_EQ(F16ToF32(q4.d), 2.0f);  // -16 (the largest magnitude) / -8
  EXPECT_EQ(q4.q[0] & 0xf, 0);      // -16 / 2 + 8
  EXPECT_EQ(q4.q[1] & 0xf, 1);      // -15 / 2 + 8.5 = 1.0
  EXPECT_EQ(q4.q[15] >> 4, 15);     // 15 / 2 + 8.5 = 16, clamped
  EXPECT_EQ(q4.q[0] >> 4, 8);       // 0 / 2 + 8.5
  // Q4_1: d = (15 - -16) / 15, m = -16; value i at (i - min) / d rounded
  BlockQ4_1 q41;
  QuantizeRowQ4_1(&q41, x, 32);
  EXPECT_EQ(q41.d, F32ToF16(31.0f / 15));
  EXPECT_EQ(q41.m, F32ToF16(-16.0f));
  EXPECT_EQ(q41.q[0] & 0xf, 0);   // the min
  EXPECT_EQ(q41.q[1] & 0xf, 0);   // 1 / 2.067 + 0.5 = 0.98
  EXPECT_EQ(q41.q[2] & 0xf, 1);   // 2 / 2.067 + 0.5 = 1.47
  EXPECT_EQ(q41.q[15] >> 4, 15);  // the max
  // all zeros: scale 0, every value 0
  const float zeros[32] = {};
  QuantizeRowQ4_0(&q4, zeros, 32);
  DequantizeRows(WeightType::kQ4_0, x, &q4, 1, 32);
  for (float e : x) EXPECT_EQ(e, 0.0f);
}

TEST(QuantBlocks, RoundTripErrorWithinHalfAStep) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal;
  const int64_t rows = 20, in = 256;
  std::vector<float> w(size_t(rows * in)), back(w.size());  // [rows, in]
  for (auto& e : w) e = normal(rng);
  for (WeightType type :
       {WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ4_1, WeightType::kQ5_0, WeightType::kQ5_1}) {
    const std::vector<uint8_t> q = QuantizeRows(type, w.data(), rows, in);
    ASSERT_EQ(q.size(), size_t(rows) * WeightRowBytes(type, in));
    DequantizeRows(type, back.data(), q.data(), rows, in);
    for (int64_t b = 0; b < rows * in / 32; ++b) {
      float amax = 0, lo = w[size_t(b * 32)], hi = lo;
      for (int i = 0; i < 32; ++i) {
        amax = std::max(amax, std::fabs(w[size_t(b * 32 + i)]));
        lo = std::min(lo, w[size_t(b * 32 + i)]);
        hi = std::max(hi, w[size_t(b * 32 + i)]);
      }
      // Q8_0 steps amax / 127; Q4_0 steps amax / 8, and the side opposite
      // the largest value ends a step short (+7, not +8), so up to one
      // step; Q4_1 steps (max - min) / 15 from the min; Q5_0 and Q5_1 as
      // Q4_0 and Q4_1 with twice the levels. Plus f16 rounding.
      const bool signed_scale = type == WeightType::kQ4_0 || type == WeightType::kQ5_0;
      const float step = type == WeightType::kQ8_0   ? amax / 127
                         : type == WeightType::kQ4_0 ? amax / 8
                         : type == WeightType::kQ5_0 ? amax / 16
                         : type == WeightType::kQ4_1 ? (hi - lo) / 15
                                                     : (hi - lo) / 31;
      const float bound = (signed_scale ? 1.0f : 0.5f) * step + amax * 2e-3f;
      for (int i = 0; i < 32; ++i)
        ASSERT_LE(std::fabs(back[size_t(b * 32 + i)] - w[size_t(b * 32 + i)]), bound) << WeightTypeName(type);
    }
  }
  EXPECT_THROW(QuantizeRows(WeightType::kQ8_0, w.data(), 1, 33), std::invalid_argument);
}

// Q6_K: each 16 values step d * scale, amax / 31 rounded up to a multiple
// of d = (largest step) / 127, so no value is clamped.
TEST(QuantBlocks, Q6KRoundTripErrorWithinHalfAStep) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal;
  const int64_t rows = 6, in = 512;
  std::vector<float> w(size_t(rows * in)), back(w.size());  // [rows, in]
  for (auto& e : w) e = normal(rng);
  std::fill(w.begin() + 16, w.begin() + 32, 0.0f);  // 16 zeros: their scale 0
  const std::vector<uint8_t> q = QuantizeRows(WeightType::kQ6_K, w.data(), rows, in);
  ASSERT_EQ(q.size(), size_t(rows * in / 256 * 210));
  DequantizeRows(WeightType::kQ6_K, back.data(), q.data(), rows, in);
  for (int64_t sb = 0; sb < rows * in / 256; ++sb) {
    float largest = 0;  // the super-block's largest step, amax / 31
    for (int64_t i = 0; i < 256; ++i) largest = std::max(largest, std::fabs(w[size_t(sb * 256 + i)]) / 31);
    const float d = largest / 127;
    for (int64_t j = 0; j < 16; ++j) {
      float amax = 0;
      for (int i = 0; i < 16; ++i) amax = std::max(amax, std::fabs(w[size_t(sb * 256 + j * 16 + i)]));
      const float step = amax / 31 + d * 1.01f;
      for (int i = 0; i < 16; ++i) {
        const size_t at = size_t(sb * 256 + j * 16 + i);
        ASSERT_LE(std::fabs(back[at] - w[at]), 0.5f * step * 1.01f + amax * 1e-3f) << at;
      }
    }
  }
  for (int i = 16; i < 32; ++i) EXPECT_EQ(back[size_t(i)], 0.0f);
  EXPECT_THROW(QuantizeRows(WeightType::kQ6_K, w.data(), 1, 128), std::invalid_argument);
}

// Q4_K and Q5_K: each 32 values step d * sc from -(dmin * m), the min and
// then the step rounded up to multiples of dmin = (largest -min) / 63 and d
// = (largest step) / 63, so no value is clamped.
TEST(QuantBlocks, Q4KAndQ5KRoundTripErrorWithinHalfAStep) {
  for (WeightType type : {WeightType::kQ4_K, WeightType::kQ5_K}) {
    SCOPED_TRACE(WeightTypeName(type));
    const float levels = type == WeightType::kQ4_K ? 15 : 31;
    std::mt19937 rng(std::random_device{}());
    std::normal_distribution<float> normal;
    const int64_t rows = 6, in = 512;
    std::vector<float> w(size_t(rows * in)), back(w.size());  // [rows, in]
    for (auto& e : w) e = normal(rng) + 0.5f;
    std::fill(w.begin() + 32, w.begin() + 64, 0.0f);  // 32 zeros: their scale and min 0
    const std::vector<uint8_t> q = QuantizeRows(type, w.data(), rows, in);
    ASSERT_EQ(q.size(), size_t(rows * in / 256) * (type == WeightType::kQ4_K ? 144 : 176));
    DequantizeRows(type, back.data(), q.data(), rows, in);
    for (int64_t sb = 0; sb < rows * in / 256; ++sb) {
      float low[8], high[8], low_most = 0;  // [8] -min(0, least), max(0, largest)
      for (int j = 0; j < 8; ++j) {
        low[j] = high[j] = 0;
        for (int i = 0; i < 32; ++i) {
          low[j] = std::max(low[j], -w[size_t(sb * 256 + j * 32 + i)]);
          high[j] = std::max(high[j], w[size_t(sb * 256 + j * 32 + i)]);
        }
        low_most = std::max(low_most, low[j]);
      }
      const float dmin = low_most / 63;
      float step_most = 0;
      for (int j = 0; j < 8; ++j) step_most = std::max(step_most, (high[j] + low[j] + dmin) / levels);
      for (int j = 0; j < 8; ++j) {
        const float step = (high[j] + low[j] + dmin) / levels + step_most / 63;
        for (int i = 0; i < 32; ++i) {
          const size_t at = size_t(sb * 256 + j * 32 + i);
          ASSERT_LE(std::fabs(back[at] - w[at]), 0.5f * step * 1.01f + (high[j] + low[j]) * 2e-3f) << at;
        }
      }
    }
    for (int i = 32; i < 64; ++i) EXPECT_EQ(back[size_t(i)], 0.0f);
    EXPECT_THROW(QuantizeRows(type, w.data(), 1, 128), std::invalid_argument);
  }
}

}  // namespace
}  // namespace swan
