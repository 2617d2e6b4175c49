#include "ops/quant_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "ops/dequant_blocks.h"
#include "ops/f16_widen.h"
#include "util/bf16.h"
#include "util/f16.h"
#include "util/parallel_ranges.h"

namespace swan {

void QuantizeRowQ8_0(BlockQ8_0* dst, const float* src, int64_t n) {
  for (int64_t b = 0; b < n / kQuantBlockValues; ++b, src += kQuantBlockValues) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(src[i]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    dst[b].d = F32ToF16(d);
    for (int i = 0; i < 32; ++i) dst[b].q[i] = int8_t(std::roundf(src[i] * id));
  }
}

namespace {

// The value of largest magnitude of a block's 32 (the first of equals), sign kept.
float LargestMagnitude(const float* src /*[32]*/) {
  float amax = 0, max = 0;
  for (int i = 0; i < 32; ++i)
    if (std::fabs(src[i]) > amax) {
      amax = std::fabs(src[i]);
      max = src[i];
    }
  return max;
}

}  // namespace

void QuantizeRowQ4_0(BlockQ4_0* dst, const float* src, int64_t n) {
  for (int64_t b = 0; b < n / kQuantBlockValues; ++b, src += kQuantBlockValues) {
    // The value of largest magnitude maps to -8, the end of the range with
    // one more step, so the scale's sign follows it.
    const float d = LargestMagnitude(src) / -8.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    dst[b].d = F32ToF16(d);
    for (int j = 0; j < 16; ++j) {
      // + 8.5 then truncation: round to nearest into [0, 16], 16 clamped
      const uint8_t lo = uint8_t(std::min(15, int(int8_t(src[j] * id + 8.5f))));
      const uint8_t hi = uint8_t(std::min(15, int(int8_t(src[j + 16] * id + 8.5f))));
      dst[b].q[j] = uint8_t(lo | (hi << 4));
    }
  }
}

void QuantizeRowQ4_1(BlockQ4_1* dst, const float* src, int64_t n) {
  for (int64_t b = 0; b < n / kQuantBlockValues; ++b, src += kQuantBlockValues) {
    const auto [min, max] = std::minmax_element(src, src + 32);
    const float d = (*max - *min) / 15.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    dst[b].d = F32ToF16(d);
    dst[b].m = F32ToF16(*min);
    for (int j = 0; j < 16; ++j) {
      // + 0.5 then truncation: round to nearest into [0, 15]
      const uint8_t lo = uint8_t(std::min(15, int(int8_t((src[j] - *min) * id + 0.5f))));
      const uint8_t hi = uint8_t(std::min(15, int(int8_t((src[j + 16] - *min) * id + 0.5f))));
      dst[b].q[j] = uint8_t(lo | (hi << 4));
    }
  }
}

namespace {

// Q5_0's or Q5_1's block from its parts: q [32] in [0, 31].
void Q5Block(uint8_t* dst, uint16_t d, const uint16_t* m, const uint8_t* q) {
  std::memcpy(dst, &d, sizeof(d));
  if (m) std::memcpy(dst + 2, m, sizeof(*m));
  uint8_t* rest = dst + (m ? 4 : 2);  // qh [4], qs [16]
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) qh |= uint32_t(q[j] >> 4) << j;
  std::memcpy(rest, &qh, sizeof(qh));
  for (int j = 0; j < 16; ++j) rest[4 + j] = uint8_t((q[j] & 15) | (q[j + 16] & 15) << 4);
}

}  // namespace

void QuantizeRowQ5_0(uint8_t* dst, const float* src, int64_t n) {
  for (int64_t b = 0; b < n / kQuantBlockValues; ++b, src += kQuantBlockValues, dst += 22) {
    // as Q4_0: the value of largest magnitude maps to -16
    const float d = LargestMagnitude(src) / -16.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    uint8_t q[32];  // [32] value / d + 16, rounded as ggml does
    for (int i = 0; i < 32; ++i) q[i] = uint8_t(std::min(31, int(int8_t(src[i] * id + 16.5f))));
    Q5Block(dst, F32ToF16(d), nullptr, q);
  }
}

void QuantizeRowQ5_1(uint8_t* dst, const float* src, int64_t n) {
  for (int64_t b = 0; b < n / kQuantBlockValues; ++b, src += kQuantBlockValues, dst += 24) {
    const auto [min, max] = std::minmax_element(src, src + 32);
    const float d = (*max - *min) / 31.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    uint8_t q[32];  // [32] (value - min) / d, rounded to nearest
    for (int i = 0; i < 32; ++i) q[i] = uint8_t(std::min(31, int((src[i] - *min) * id + 0.5f)));
    const uint16_t m = F32ToF16(*min);
    Q5Block(dst, F32ToF16(d), &m, q);
  }
}

namespace {

// Q4_K (levels 15) or Q5_K (31).
void QuantizeRowK(uint8_t* dst, const float* src, int64_t n, int levels) {
  const size_t block_bytes = levels == 15 ? kQ4KBytes : kQ5KBytes;
  for (int64_t b = 0; b < n / kSuperValues; ++b, src += kSuperValues, dst += block_bytes) {
    // sub-block j: values min_j + step_j q, min_j = -(dmin m_j) <= 0
    float lows[8], highs[8], low_most = 0;  // [8] -min(0, least), max(0, largest)
    for (int j = 0; j < 8; ++j) {
      lows[j] = highs[j] = 0;
      for (int i = 0; i < 32; ++i) {
        lows[j] = std::max(lows[j], -src[32 * j + i]);
        highs[j] = std::max(highs[j], src[32 * j + i]);
      }
      low_most = std::max(low_most, lows[j]);
    }
    const uint16_t dmin_bits = F32ToF16(low_most / 63.0f);
    const float dmin = F16ToF32(dmin_bits);
    uint8_t sc[8], m[8];            // [8]
    float steps[8], step_most = 0;  // [8] (largest + min) / levels
    for (int j = 0; j < 8; ++j) {
      m[j] = uint8_t(dmin > 0 ? std::min(63.0f, std::ceil(lows[j] / dmin)) : 0.0f);
      steps[j] = (highs[j] + dmin * float(m[j])) / float(levels);
      step_most = std::max(step_most, steps[j]);
    }
    const uint16_t d_bits = F32ToF16(step_most / 63.0f);
    const float d = F16ToF32(d_bits);
    uint8_t q[256];  // [256] (value + dmin m) / (d sc)
    for (int j = 0; j < 8; ++j) {
      sc[j] = uint8_t(d > 0 ? std::min(63.0f, std::ceil(steps[j] / d)) : 0.0f);
      const float step = d * float(sc[j]), min = dmin * float(m[j]);
      for (int i = 0; i < 32; ++i) {
        const float v = step > 0 ? std::nearbyint((src[32 * j + i] + min) / step) : 0.0f;
        q[32 * j + i] = uint8_t(std::clamp(v, 0.0f, float(levels)));
      }
    }
    if (levels == 15)
      Q4KBlock(q, sc, m, d_bits, dmin_bits, dst);
    else
      Q5KBlock(q, sc, m, d_bits, dmin_bits, dst);
  }
}

}  // namespace

void QuantizeRowQ4_K(uint8_t* dst, const float* src, int64_t n) { QuantizeRowK(dst, src, n, 15); }
void QuantizeRowQ5_K(uint8_t* dst, const float* src, int64_t n) { QuantizeRowK(dst, src, n, 31); }

void QuantizeRowQ6_K(uint8_t* dst, const float* src, int64_t n) {
  for (int64_t b = 0; b < n / kSuperValues; ++b, src += kSuperValues, dst += kQ6KBytes) {
    // each 16 values' step s = amax / 31, held as d * scale (scale <= 127)
    float steps[16], largest = 0;  // [16]
    for (int i = 0; i < 16; ++i) {
      float amax = 0;
      for (int j = 0; j < 16; ++j) amax = std::max(amax, std::fabs(src[16 * i + j]));
      steps[i] = amax / 31.0f;
      largest = std::max(largest, steps[i]);
    }
    const uint16_t d_bits = F32ToF16(largest / 127.0f);
    const float d = F16ToF32(d_bits);
    int8_t scales[16];  // [16]
    uint8_t q[256];     // [256] value / (d scale) + 32
    for (int i = 0; i < 16; ++i) {
      // rounded up, so that the largest magnitude needs no clamping
      scales[i] = int8_t(d > 0 ? std::min(127.0f, std::ceil(steps[i] / d)) : 0.0f);
      const float step = d * float(scales[i]);
      for (int j = 0; j < 16; ++j) {
        const float v = step > 0 ? std::nearbyint(src[16 * i + j] / step) : 0.0f;
        q[16 * i + j] = uint8_t(std::clamp(v, -32.0f, 31.0f) + 32.0f);
      }
    }
    Q6KBlock(q, scales, d_bits, dst);
  }
}

namespace {

void RequireRows(WeightType type, int64_t in) {
  if (!RowFits(type, in))
    throw std::invalid_argument(std::string(WeightTypeName(type)) + " needs rows of a multiple of " +
                                std::to_string(RowMultiple(type)) + " values, not " + std::to_string(in));
}

void DequantizeRowQ8_0(float* dst, const BlockQ8_0* src, int64_t n) {
  for (int64_t b = 0; b < n / kQuantBlockValues; ++b, dst += kQuantBlockValues) {
    const float d = F16ToF32(src[b].d);
    for (int i = 0; i < 32; ++i) dst[i] = d * float(src[b].q[i]);
  }
}

void DequantizeRowQ4_1(float* dst, const BlockQ4_1* src, int64_t n) {
  for (int64_t b = 0; b < n / kQuantBlockValues; ++b, dst += kQuantBlockValues) {
    const float d = F16ToF32(src[b].d), m = F16ToF32(src[b].m);
    for (int j = 0; j < 16; ++j) {
      dst[j] = float(src[b].q[j] & 0xf) * d + m;
      dst[j + 16] = float(src[b].q[j] >> 4) * d + m;
    }
  }
}

void DequantizeRowQ4_0(float* dst, const BlockQ4_0* src, int64_t n) {
  for (int64_t b = 0; b < n / kQuantBlockValues; ++b, dst += kQuantBlockValues) {
    const float d = F16ToF32(src[b].d);
    for (int j = 0; j < 16; ++j) {
      dst[j] = d * float(int(src[b].q[j] & 0xf) - 8);
      dst[j + 16] = d * float(int(src[b].q[j] >> 4) - 8);
    }
  }
}

}  // namespace

void QuantizeRowsInto(WeightType type, uint8_t* dst, const float* w, int64_t rows, int64_t in) {
  if (!IsBlockQuantized(type)) throw std::invalid_argument("QuantizeRows: not a block format");
  RequireRows(type, in);
  const size_t row_bytes = WeightRowBytes(type, in);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* row = dst + size_t(r) * row_bytes;
    if (type == WeightType::kQ6_K)
      QuantizeRowQ6_K(row, w + r * in, in);
    else if (type == WeightType::kQ4_K)
      QuantizeRowQ4_K(row, w + r * in, in);
    else if (type == WeightType::kQ5_K)
      QuantizeRowQ5_K(row, w + r * in, in);
    else if (type == WeightType::kQ8_0)
      QuantizeRowQ8_0(reinterpret_cast<BlockQ8_0*>(row), w + r * in, in);
    else if (type == WeightType::kQ4_1)
      QuantizeRowQ4_1(reinterpret_cast<BlockQ4_1*>(row), w + r * in, in);
    else if (type == WeightType::kQ5_0)
      QuantizeRowQ5_0(row, w + r * in, in);
    else if (type == WeightType::kQ5_1)
      QuantizeRowQ5_1(row, w + r * in, in);
    else
      QuantizeRowQ4_0(reinterpret_cast<BlockQ4_0*>(row), w + r * in, in);
  }
}

std::vector<uint8_t> QuantizeRows(WeightType type, const float* w, int64_t rows, int64_t in) {
  if (!IsBlockQuantized(type)) throw std::invalid_argument("QuantizeRows: not a block format");
  RequireRows(type, in);
  const size_t row_bytes = WeightRowBytes(type, in);
  std::vector<uint8_t> out(size_t(rows) * row_bytes);  // [rows, row_bytes]
  ParallelRanges(rows, 16, [&](int64_t begin, int64_t end) {
    QuantizeRowsInto(type, out.data() + size_t(begin) * row_bytes, w + begin * in, end - begin, in);
  });
  return out;
}

void DequantizeRows(WeightType type, float* dst, const void* src, int64_t rows, int64_t in) {
  RequireRows(type, in);
  const int64_t n = rows * in;
  switch (type) {
    case WeightType::kF32: std::memcpy(dst, src, size_t(n) * sizeof(float)); return;
    case WeightType::kF16: WidenF16(dst, static_cast<const uint16_t*>(src), n); return;
    case WeightType::kBF16: {
      const uint16_t* bits = static_cast<const uint16_t*>(src);  // [rows, in]
      ParallelRanges(n, int64_t(1) << 16, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) dst[i] = BF16ToF32(bits[i]);
      });
      return;
    }
    case WeightType::kQ8_0:
    case WeightType::kQ4_0:
    case WeightType::kQ4_1:
    case WeightType::kQ5_0:
    case WeightType::kQ5_1:
    case WeightType::kQ4_K:
    case WeightType::kQ5_K:
    case WeightType::kQ6_K: break;
  }
  const size_t row_bytes = WeightRowBytes(type, in);
  const uint8_t* bytes = static_cast<const uint8_t*>(src);  // [rows, row_bytes]
  ParallelRanges(rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const uint8_t* row = bytes + size_t(r) * row_bytes;
      if (IsSuperBlocked(type))
        DequantizeFormatRow(type == WeightType::kQ6_K   ? DequantFormat::kQ6_K
                            : type == WeightType::kQ5_K ? DequantFormat::kQ5_K
                                                        : DequantFormat::kQ4_K,
                            dst + r * in, row, in);
      else if (type == WeightType::kQ8_0)
        DequantizeRowQ8_0(dst + r * in, reinterpret_cast<const BlockQ8_0*>(row), in);
      else if (type == WeightType::kQ4_1)
        DequantizeRowQ4_1(dst + r * in, reinterpret_cast<const BlockQ4_1*>(row), in);
      else if (type == WeightType::kQ5_0 || type == WeightType::kQ5_1)
        DequantizeFormatRow(type == WeightType::kQ5_0 ? DequantFormat::kQ5_0 : DequantFormat::kQ5_1, dst + r * in, row,
                            in);
      else
        DequantizeRowQ4_0(dst + r * in, reinterpret_cast<const BlockQ4_0*>(row), in);
    }
  });
}

}  // namespace swan
