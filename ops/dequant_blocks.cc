#include "ops/dequant_blocks.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "util/f16.h"

namespace swan {
namespace {

uint16_t ReadU16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }

// Sub-block j's 6-bit scale and min from Q4_K/Q5_K's 12 packed bytes.
void ScaleMin(const uint8_t* scales, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = (scales[j + 4] & 15) | (scales[j - 4] >> 6) << 4;
    *m = (scales[j + 4] >> 4) | (scales[j] >> 6) << 4;
  }
}

// One Q4_K (qh null) or Q5_K super-block into y [256].
void DequantizeQ45(const uint8_t* block, bool five_bits, float* y) {
  uint8_t q[256], sc[8], m[8];  // [256], [8], [8]
  uint16_t d_bits, dmin_bits;
  (five_bits ? Q5KParts : Q4KParts)(block, q, sc, m, &d_bits, &dmin_bits);
  const float d = F16ToF32(d_bits), dmin = F16ToF32(dmin_bits);
  for (int j = 0; j < 8; ++j) {
    // float products first, as ggml evaluates them: (d sc) q - dmin m
    const float scale = d * float(sc[j]), min = dmin * float(m[j]);
    for (int l = 0; l < 32; ++l) *y++ = scale * float(q[32 * j + l]) - min;
  }
}

// One Q6_K (q offset 32) or Q3_K (offset 4) super-block into y [256]: (d * scale) * (q - offset).
void DequantizeScaledBy16(const uint8_t* block, bool six, float* y) {
  uint8_t q[256];     // [256]
  int8_t scales[16];  // [16] one per 16 values
  uint16_t bits;
  (six ? Q6KParts : Q3KParts)(block, q, scales, &bits);
  const float d = F16ToF32(bits);
  const int offset = six ? 32 : 4;
  for (int i = 0; i < 256; ++i) y[i] = d * float(scales[i / 16]) * float(q[i] - offset);
}

// One Q5_0 or Q5_1 block into y [32].
void DequantizeBlock32(DequantFormat f, const uint8_t* block, float* y) {
  const float d = F16ToF32(ReadU16(block));
  const bool has_min = f == DequantFormat::kQ5_1;
  const float m = has_min ? F16ToF32(ReadU16(block + 2)) : 0.0f;
  const uint8_t* qh = block + (has_min ? 4 : 2);  // [4] a little-endian u32
  const uint32_t high = uint32_t(qh[0] | qh[1] << 8 | qh[2] << 16 | uint32_t(qh[3]) << 24);
  const uint8_t* qs = qh + 4;  // [16]
  for (int j = 0; j < 32; ++j) {
    const int q = (j < 16 ? qs[j] & 15 : qs[j - 16] >> 4) | int(high >> j & 1) << 4;
    if (has_min)
      y[j] = float(q) * d + m;
    else
      y[j] = float(q - 16) * d;
  }
}

}  // namespace

const char* DequantFormatName(DequantFormat f) {
  switch (f) {
    case DequantFormat::kQ5_0: return "Q5_0";
    case DequantFormat::kQ5_1: return "Q5_1";
    case DequantFormat::kQ4_K: return "Q4_K";
    case DequantFormat::kQ5_K: return "Q5_K";
    case DequantFormat::kQ6_K: return "Q6_K";
    case DequantFormat::kQ3_K: return "Q3_K";
  }
  return "?";
}

void DequantizeFormatRow(DequantFormat f, float* dst, const uint8_t* src, int64_t n) {
  const int64_t values = DequantBlockValues(f);
  if (n % values != 0)
    throw std::invalid_argument(std::string(DequantFormatName(f)) + " needs rows of a multiple of " +
                                std::to_string(values) + " values, not " + std::to_string(n));
  for (int64_t b = 0; b < n / values; ++b, dst += values, src += DequantBlockBytes(f)) {
    switch (f) {
      case DequantFormat::kQ6_K:
      case DequantFormat::kQ3_K: DequantizeScaledBy16(src, f == DequantFormat::kQ6_K, dst); break;
      case DequantFormat::kQ4_K:
      case DequantFormat::kQ5_K: DequantizeQ45(src, f == DequantFormat::kQ5_K, dst); break;
      default: DequantizeBlock32(f, src, dst); break;
    }
  }
}

// Each half h of 128 values: ql[64h ..], qh[32h ..], scales[8h ..]; value
// 128h + 32i + l (l < 32) has the low (i < 2) or high nibble of ql[64h + l
// + 32 (i odd)] and bits 2i, 2i + 1 of qh[32h + l] above it.
void Q6KParts(const uint8_t* block, uint8_t* q, int8_t* scales, uint16_t* d) {
  *d = ReadU16(block + 208);
  std::memcpy(scales, block + 192, 16);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i)
      for (int l = 0; l < 32; ++l) {
        const uint8_t low = block[64 * h + l + (i % 2) * 32], high = block[128 + 32 * h + l];
        q[128 * h + 32 * i + l] = uint8_t((i < 2 ? low & 15 : low >> 4) | (high >> (2 * i) & 3) << 4);
      }
}

void Q6KBlock(const uint8_t* q, const int8_t* scales, uint16_t d, uint8_t* block) {
  std::memset(block, 0, 192);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i)
      for (int l = 0; l < 32; ++l) {
        const uint8_t v = q[128 * h + 32 * i + l];
        block[64 * h + l + (i % 2) * 32] |= uint8_t((v & 15) << (i < 2 ? 0 : 4));
        block[128 + 32 * h + l] |= uint8_t((v >> 4 & 3) << (2 * i));
      }
  std::memcpy(block + 192, scales, 16);
  block[208] = uint8_t(d), block[209] = uint8_t(d >> 8);
}

void Q3KParts(const uint8_t* block, uint8_t* q, int8_t* scales, uint16_t* d) {
  const uint8_t* hmask = block;        // [32]
  const uint8_t* qs = block + 32;      // [64]
  const uint8_t* packed = block + 96;  // [12]
  *d = ReadU16(block + 108);
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? packed[j] & 15 : packed[j - 8] >> 4, top = packed[8 + j % 4] >> (2 * (j / 4)) & 3;
    scales[j] = int8_t((low | top << 4) - 32);
  }
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i)
      for (int l = 0; l < 32; ++l)
        q[128 * h + 32 * i + l] = uint8_t((qs[32 * h + l] >> (2 * i) & 3) | (hmask[l] >> (4 * h + i) & 1) << 2);
}

void Q3KAsQ6K(const uint8_t* q3, int64_t blocks, uint8_t* q6) {
  for (int64_t b = 0; b < blocks; ++b, q3 += 110, q6 += 210) {
    uint8_t q[256];     // [256] 0..7, then 28..35: q - 4 = (q + 28) - 32
    int8_t scales[16];  // [16]
    uint16_t d;
    Q3KParts(q3, q, scales, &d);
    for (uint8_t& v : q) v = uint8_t(v + 28);
    Q6KBlock(q, scales, d, q6);
  }
}

namespace {

// Q4_K's (qh null) or Q5_K's parts.
void KParts(const uint8_t* block, bool five_bits, uint8_t* q, uint8_t* sc, uint8_t* m, uint16_t* d, uint16_t* dmin) {
  *d = ReadU16(block), *dmin = ReadU16(block + 2);
  for (int j = 0; j < 8; ++j) {
    int s, mn;
    ScaleMin(block + 4, j, &s, &mn);
    sc[j] = uint8_t(s), m[j] = uint8_t(mn);
  }
  const uint8_t* qh = five_bits ? block + 16 : nullptr;  // [32]
  const uint8_t* qs = block + (five_bits ? 48 : 16);     // [128]
  for (int j = 0; j < 8; ++j)
    for (int l = 0; l < 32; ++l)
      q[32 * j + l] = uint8_t((qs[32 * (j / 2) + l] >> (4 * (j % 2)) & 15) | (qh ? (qh[l] >> j & 1) << 4 : 0));
}

void KBlock(const uint8_t* q, const uint8_t* sc, const uint8_t* m, uint16_t d, uint16_t dmin, bool five_bits,
            uint8_t* block) {
  block[0] = uint8_t(d), block[1] = uint8_t(d >> 8), block[2] = uint8_t(dmin), block[3] = uint8_t(dmin >> 8);
  uint8_t* scales = block + 4;  // [12] ScaleMin's packing
  for (int i = 0; i < 4; ++i) {
    scales[i] = uint8_t((sc[i] & 63) | (sc[i + 4] >> 4) << 6);
    scales[i + 4] = uint8_t((m[i] & 63) | (m[i + 4] >> 4) << 6);
    scales[i + 8] = uint8_t((sc[i + 4] & 15) | (m[i + 4] & 15) << 4);
  }
  uint8_t* qh = five_bits ? block + 16 : nullptr;  // [32]
  uint8_t* qs = block + (five_bits ? 48 : 16);     // [128]
  if (qh) std::memset(qh, 0, 32);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      const uint8_t lo = q[64 * c + l], hi = q[64 * c + 32 + l];
      qs[32 * c + l] = uint8_t((lo & 15) | (hi & 15) << 4);
      if (qh) qh[l] |= uint8_t((lo >> 4 & 1) << (2 * c) | (hi >> 4 & 1) << (2 * c + 1));
    }
}

}  // namespace

void Q4KParts(const uint8_t* block, uint8_t* q, uint8_t* sc, uint8_t* m, uint16_t* d, uint16_t* dmin) {
  KParts(block, false, q, sc, m, d, dmin);
}
void Q5KParts(const uint8_t* block, uint8_t* q, uint8_t* sc, uint8_t* m, uint16_t* d, uint16_t* dmin) {
  KParts(block, true, q, sc, m, d, dmin);
}
void Q4KBlock(const uint8_t* q, const uint8_t* sc, const uint8_t* m, uint16_t d, uint16_t dmin, uint8_t* block) {
  KBlock(q, sc, m, d, dmin, false, block);
}
void Q5KBlock(const uint8_t* q, const uint8_t* sc, const uint8_t* m, uint16_t d, uint16_t dmin, uint8_t* block) {
  KBlock(q, sc, m, d, dmin, true, block);
}

}  // namespace swan
