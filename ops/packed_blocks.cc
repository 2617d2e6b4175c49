#include "ops/packed_blocks.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/dequant_blocks.h"
#include "ops/quant_blocks.h"
#include "util/f16.h"
#include "util/parallel_ranges.h"

namespace swan {

namespace {

void RequirePackable(WeightType type, int64_t n, int64_t k) {
  if (!IsBlockQuantized(type) || n < 1 || k < 1 || !RowFits(type, k))
    throw std::invalid_argument(std::string("packed blocks: ") + WeightTypeName(type) + " [" + std::to_string(n) +
                                ", " + std::to_string(k) + "] (a block format, rows of a multiple of " +
                                std::to_string(RowMultiple(type)) + " values)");
}

}  // namespace

PackedBlocks PackedBlocksAt(const void* data, WeightType type, int64_t n, int64_t k) {
  RequirePackable(type, n, k);
  PackedBlocks w;
  w.type = type;
  w.n = n;
  w.k = k;
  w.payload = static_cast<const uint8_t*>(data);
  const int64_t group_blocks = PackedGroups(n) * w.blocks();
  if (IsSuperBlocked(type)) {
    w.sub_scales = reinterpret_cast<const int8_t*>(w.payload + size_t(group_blocks) * PackedPayloadBytes(type));
    w.scales = reinterpret_cast<const uint16_t*>(w.sub_scales + group_blocks * 2 * kPackedRows);
    if (type != WeightType::kQ6_K) w.mins = w.scales + group_blocks / 8 * kPackedRows;
    return w;
  }
  w.scales = reinterpret_cast<const uint16_t*>(w.payload + size_t(group_blocks) * PackedPayloadBytes(type));
  if (type == WeightType::kQ4_1 || type == WeightType::kQ5_1) w.mins = w.scales + group_blocks * kPackedRows;
  return w;
}

namespace {

// One K-quant super-block's parts, as the packed layout holds them.
struct SuperParts {
  uint8_t q[kSuperValues];   // [256] its values
  int8_t sub[8][2];          // [8 blocks][2] Q6_K: the scales of values 0-15, 16-31; Q4_K, Q5_K: sc, m
  uint16_t d = 0, dmin = 0;  // f16 (dmin: Q4_K, Q5_K)
};

SuperParts PartsOf(WeightType type, const uint8_t* block) {
  SuperParts p;
  if (type == WeightType::kQ6_K) {
    int8_t scales[16];  // [16]
    Q6KParts(block, p.q, scales, &p.d);
    for (int bb = 0; bb < 8; ++bb) p.sub[bb][0] = scales[2 * bb], p.sub[bb][1] = scales[2 * bb + 1];
  } else {
    uint8_t sc[8], m[8];  // [8]
    if (type == WeightType::kQ5_K)
      Q5KParts(block, p.q, sc, m, &p.d, &p.dmin);
    else
      Q4KParts(block, p.q, sc, m, &p.d, &p.dmin);
    for (int bb = 0; bb < 8; ++bb) p.sub[bb][0] = int8_t(sc[bb]), p.sub[bb][1] = int8_t(m[bb]);
  }
  return p;
}

// PackGroups for the K-quants: each super-block taken apart and its values,
// scales (and mins) laid out as the header describes.
template <class RowBytes>
void PackGroupsSuper(WeightType type, uint8_t* dst, int64_t n, int64_t k, int64_t g_begin, int64_t g_end,
                     const RowBytes& row_bytes_of) {
  const int64_t blocks = k / kQuantBlockValues, groups = PackedGroups(n), supers = k / kSuperValues;
  const size_t payload_bytes = PackedPayloadBytes(type), super_bytes = WeightRowBytes(type, kSuperValues);
  const bool six = type == WeightType::kQ6_K;
  uint8_t* payload = dst;  // [G, B, payload_bytes]
  int8_t* sub_scales = reinterpret_cast<int8_t*>(dst + size_t(groups * blocks) * payload_bytes);  // [G, B, 2, 16]
  uint16_t* d = reinterpret_cast<uint16_t*>(sub_scales + groups * blocks * 2 * kPackedRows);      // [G, B / 8, 16]
  uint16_t* dmin = d + groups * supers * kPackedRows;  // [G, B / 8, 16] (Q4_K, Q5_K)
  SuperParts empty;                                    // rows past n: value 0
  std::memset(empty.q, six ? 32 : 0, sizeof(empty.q));
  std::memset(empty.sub, 0, sizeof(empty.sub));
  for (int64_t g = g_begin; g < g_end; ++g)
    for (int64_t j = 0; j < kPackedRows; ++j) {
      const int64_t row = g * kPackedRows + j;
      for (int64_t sb = 0; sb < supers; ++sb) {
        const SuperParts p = row < n ? PartsOf(type, row_bytes_of(row) + size_t(sb) * super_bytes) : empty;
        d[(g * supers + sb) * kPackedRows + j] = p.d;
        if (!six) dmin[(g * supers + sb) * kPackedRows + j] = p.dmin;
        for (int64_t bb = 0; bb < 8; ++bb) {
          const int64_t b = sb * 8 + bb;
          const uint8_t* v = p.q + 32 * bb;  // [32] the block's values
          uint8_t* out = payload + size_t(g * blocks + b) * payload_bytes + size_t(j) * 4;
          for (int i = 0; i < 4; ++i) {
            for (int c = 0; c < 4; ++c) out[c * 64 + i] = uint8_t((v[4 * c + i] & 15) | (v[16 + 4 * c + i] & 15) << 4);
            for (int h = 0; six && h < 2; ++h) {
              uint8_t high = 0;
              for (int c = 0; c < 4; ++c) high |= uint8_t((v[16 * h + 4 * c + i] >> 4) << (2 * c));
              out[256 + h * 64 + i] = high;
            }
            if (type == WeightType::kQ5_K) {
              uint8_t top = 0;
              for (int c = 0; c < 4; ++c)
                top |= uint8_t((v[4 * c + i] >> 4) << c | (v[16 + 4 * c + i] >> 4) << (4 + c));
              out[256 + i] = top;
            }
          }
          for (int h = 0; h < 2; ++h) sub_scales[((g * blocks + b) * 2 + h) * kPackedRows + j] = p.sub[bb][h];
        }
      }
    }
}

// Groups [g_begin, g_end) of the packed matrix; row(r) gives the bytes of
// row r in the file's layout, for r < n.
template <class RowBytes>
void PackGroups(WeightType type, uint8_t* dst, int64_t n, int64_t k, int64_t g_begin, int64_t g_end,
                const RowBytes& row_bytes_of) {
  if (IsSuperBlocked(type)) return PackGroupsSuper(type, dst, n, k, g_begin, g_end, row_bytes_of);
  const int64_t blocks = k / kQuantBlockValues, groups = PackedGroups(n);
  const size_t block_bytes = QuantBlockBytes(type);
  const size_t payload_bytes = PackedPayloadBytes(type), value_bytes = ValueBytes(type);
  const size_t value_offset = ValueOffset(type);
  uint8_t* payload = dst;                                                                         // [G, B, P]
  uint16_t* scales = reinterpret_cast<uint16_t*>(dst + size_t(groups * blocks) * payload_bytes);  // [G, B, 16]
  uint16_t* mins = scales + groups * blocks * kPackedRows;  // [G, B, 16] (Q4_1, Q5_1)
  const bool has_min = type == WeightType::kQ4_1 || type == WeightType::kQ5_1;
  const bool five = type == WeightType::kQ5_0 || type == WeightType::kQ5_1;
  for (int64_t g = g_begin; g < g_end; ++g)
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* out = payload + size_t(g * blocks + b) * payload_bytes;
      uint16_t* out_scales = scales + (g * blocks + b) * kPackedRows;
      for (int64_t j = 0; j < kPackedRows; ++j) {
        const int64_t row = g * kPackedRows + j;
        const uint8_t* block = row < n ? row_bytes_of(row) + size_t(b) * block_bytes : nullptr;
        uint16_t scale = 0, min = 0;
        if (block) std::memcpy(&scale, block, sizeof(scale));
        if (block && has_min) std::memcpy(&min, block + sizeof(uint16_t), sizeof(min));
        out_scales[j] = scale;
        if (has_min) mins[(g * blocks + b) * kPackedRows + j] = min;
        if (five) {  // qh (bit v: value v's top bit), then Q4_x's nibbles
          uint32_t qh = 0;
          if (block) std::memcpy(&qh, block + value_offset, sizeof(qh));
          for (int c = 0; c < 4; ++c) {
            uint8_t* four = out + c * 64 + size_t(j) * 4;
            if (block)
              std::memcpy(four, block + value_offset + 4 + c * 4, 4);
            else
              std::memset(four, 0, 4);
          }
          for (int i = 0; i < 4; ++i) {
            uint8_t top = 0;  // Q5_K's layout: bit c value 4c + i, bit 4 + c value 16 + 4c + i
            for (int c = 0; c < 4; ++c)
              top |= uint8_t((qh >> (4 * c + i) & 1) << c | (qh >> (16 + 4 * c + i) & 1) << (4 + c));
            out[256 + size_t(j) * 4 + i] = top;
          }
          continue;
        }
        // chunk c: the block's value bytes 4c .. 4c + 3
        for (size_t c = 0; c < value_bytes / 4; ++c) {
          uint8_t* four = out + c * 64 + size_t(j) * 4;
          if (block)
            std::memcpy(four, block + value_offset + c * 4, 4);
          else
            std::memset(four, 0, 4);
        }
      }
    }
}

}  // namespace

void PackBlockRows(WeightType type, uint8_t* dst, const uint8_t* src, int64_t n, int64_t k, const int64_t* order,
                   const SourceDone& done_with) {
  RequirePackable(type, n, k);
  const size_t row_bytes = WeightRowBytes(type, k);
  ParallelRanges(PackedGroups(n), 8, [&](int64_t g_begin, int64_t g_end) {
    PackGroups(type, dst, n, k, g_begin, g_end,
               [&](int64_t r) { return src + size_t(order ? order[r] : r) * row_bytes; });
    if (done_with && !order) {
      const int64_t first = g_begin * kPackedRows, end = std::min(g_end * kPackedRows, n);
      done_with(src + size_t(first) * row_bytes, size_t(end - first) * row_bytes);
    }
  });
}

void PackBlockRowsFrom(WeightType type, uint8_t* dst, int64_t n, int64_t k, const BlockRowsOf& rows_of) {
  RequirePackable(type, n, k);
  const size_t row_bytes = WeightRowBytes(type, k);
  ParallelRanges(PackedGroups(n), 8, [&](int64_t g_begin, int64_t g_end) {
    std::vector<uint8_t> rows(size_t(kPackedRows) * row_bytes);  // [16, row_bytes] one group in the file's layout
    for (int64_t g = g_begin; g < g_end; ++g) {
      const int64_t first = g * kPackedRows;
      rows_of(first, std::min(kPackedRows, n - first), rows.data());
      PackGroups(type, dst, n, k, g, g + 1, [&](int64_t r) { return rows.data() + size_t(r - first) * row_bytes; });
    }
  });
}

void QuantizePacked(WeightType type, uint8_t* dst, const float* w, int64_t n, int64_t k) {
  PackBlockRowsFrom(type, dst, n, k, [&](int64_t first, int64_t count, uint8_t* rows) {
    QuantizeRowsInto(type, rows, w + first * k, count, k);
  });
}

void QuantizePackedFrom(WeightType type, uint8_t* dst, int64_t n, int64_t k, const FloatRows& rows_of) {
  PackBlockRowsFrom(type, dst, n, k, [&](int64_t first, int64_t count, uint8_t* rows) {
    thread_local std::vector<float> values;  // [count, k] the rows as float32
    values.resize(size_t(count * k));
    rows_of(first, count, values.data());
    QuantizeRowsInto(type, rows, values.data(), count, k);
  });
}

namespace {

// Row r's super-blocks in the file's layout from a packed K-quant matrix.
void UnpackSuperRow(const PackedBlocks& w, int64_t r, uint8_t* dst) {
  const int64_t blocks = w.blocks(), supers = w.k / kSuperValues, g = r / kPackedRows, j = r % kPackedRows;
  const size_t payload_bytes = PackedPayloadBytes(w.type), super_bytes = WeightRowBytes(w.type, kSuperValues);
  for (int64_t sb = 0; sb < supers; ++sb) {
    uint8_t q[256], sc[8], m[8];  // [256] values; [8] scales and mins (Q4_K, Q5_K)
    int8_t scales[16];            // [16] Q6_K's
    for (int64_t bb = 0; bb < 8; ++bb) {
      const int64_t b = sb * 8 + bb;
      const uint8_t* in = w.payload + size_t(g * blocks + b) * payload_bytes + size_t(j) * 4;
      uint8_t* v = q + 32 * bb;  // [32] the block's values
      for (int i = 0; i < 4; ++i)
        for (int c = 0; c < 4; ++c) {
          v[4 * c + i] = in[c * 64 + i] & 15;
          v[16 + 4 * c + i] = in[c * 64 + i] >> 4;
          if (w.type == WeightType::kQ6_K)
            for (int h = 0; h < 2; ++h) v[16 * h + 4 * c + i] |= uint8_t((in[256 + h * 64 + i] >> (2 * c) & 3) << 4);
          if (w.type == WeightType::kQ5_K) {
            v[4 * c + i] |= uint8_t((in[256 + i] >> c & 1) << 4);
            v[16 + 4 * c + i] |= uint8_t((in[256 + i] >> (4 + c) & 1) << 4);
          }
        }
      const int8_t* sub = w.sub_scales + (g * blocks + b) * 2 * kPackedRows + j;  // [2] at a stride of 16
      scales[2 * bb] = sub[0], scales[2 * bb + 1] = sub[kPackedRows];
      sc[bb] = uint8_t(sub[0]), m[bb] = uint8_t(sub[kPackedRows]);
    }
    const uint16_t d = w.scales[(g * supers + sb) * kPackedRows + j];
    uint8_t* out = dst + size_t(sb) * super_bytes;
    if (w.type == WeightType::kQ6_K) {
      Q6KBlock(q, scales, d, out);
      continue;
    }
    const uint16_t dmin = w.mins[(g * supers + sb) * kPackedRows + j];
    if (w.type == WeightType::kQ5_K)
      Q5KBlock(q, sc, m, d, dmin, out);
    else
      Q4KBlock(q, sc, m, d, dmin, out);
  }
}

// Row r's blocks of 32 values in the file's layout.
void UnpackBlockRow(const PackedBlocks& w, int64_t r, uint8_t* dst) {
  const int64_t blocks = w.blocks(), g = r / kPackedRows, j = r % kPackedRows;
  const size_t block_bytes = QuantBlockBytes(w.type), payload_bytes = PackedPayloadBytes(w.type);
  const size_t value_bytes = ValueBytes(w.type), value_offset = ValueOffset(w.type);
  const bool has_min = w.type == WeightType::kQ4_1 || w.type == WeightType::kQ5_1;
  const bool five = w.type == WeightType::kQ5_0 || w.type == WeightType::kQ5_1;
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* block = dst + size_t(b) * block_bytes;
    const uint8_t* in = w.payload + size_t(g * blocks + b) * payload_bytes + size_t(j) * 4;
    std::memcpy(block, w.scales + (g * blocks + b) * kPackedRows + j, sizeof(uint16_t));
    if (has_min) std::memcpy(block + sizeof(uint16_t), w.mins + (g * blocks + b) * kPackedRows + j, sizeof(uint16_t));
    if (five) {
      uint32_t qh = 0;  // bit v: value v's top bit
      for (int i = 0; i < 4; ++i)
        for (int c = 0; c < 4; ++c)
          qh |= uint32_t(in[256 + i] >> c & 1) << (4 * c + i) | uint32_t(in[256 + i] >> (4 + c) & 1)
                                                                    << (16 + 4 * c + i);
      std::memcpy(block + value_offset, &qh, sizeof(qh));
      for (int c = 0; c < 4; ++c) std::memcpy(block + value_offset + 4 + c * 4, in + c * 64, 4);
      continue;
    }
    for (size_t c = 0; c < value_bytes / 4; ++c) std::memcpy(block + value_offset + c * 4, in + c * 64, 4);
  }
}

}  // namespace

void UnpackBlockRows(const PackedBlocks& w, uint8_t* dst) {
  RequirePackable(w.type, w.n, w.k);
  const size_t row_bytes = WeightRowBytes(w.type, w.k);
  ParallelRanges(w.n, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      if (IsSuperBlocked(w.type))
        UnpackSuperRow(w, r, dst + size_t(r) * row_bytes);
      else
        UnpackBlockRow(w, r, dst + size_t(r) * row_bytes);
    }
  });
}

void DequantizePackedRows(const PackedBlocks& w, float* dst, int64_t row, int64_t count) {
  if (row < 0 || count < 0 || row + count > w.n)
    throw std::out_of_range("packed blocks: rows [" + std::to_string(row) + ", " + std::to_string(row + count) +
                            ") of " + std::to_string(w.n));
  const int64_t blocks = w.blocks();
  const size_t payload_bytes = PackedPayloadBytes(w.type);
  for (int64_t r = row; r < row + count; ++r, dst += w.k) {
    const int64_t g = r / kPackedRows, j = r % kPackedRows;
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* in = w.payload + size_t(g * blocks + b) * payload_bytes + size_t(j) * 4;
      if (w.type == WeightType::kQ6_K) {
        // as ggml: (d * scale) * (q - 32)
        const float d = F16ToF32(w.scales[(g * (blocks / 8) + b / 8) * kPackedRows + j]);
        float* out = dst + b * kQuantBlockValues;  // [32]
        for (int c = 0; c < 4; ++c)
          for (int i = 0; i < 4; ++i)
            for (int h = 0; h < 2; ++h) {
              const int q = (in[c * 64 + i] >> (4 * h) & 15) | (in[256 + h * 64 + i] >> (2 * c) & 3) << 4;
              const int8_t scale = w.sub_scales[((g * blocks + b) * 2 + h) * kPackedRows + j];
              out[16 * h + 4 * c + i] = d * float(scale) * float(q - 32);
            }
        continue;
      }
      if (w.type == WeightType::kQ4_K || w.type == WeightType::kQ5_K) {
        // as ggml: (d * sc) * q - dmin * m
        const int64_t at = (g * (blocks / 8) + b / 8) * kPackedRows + j;
        const uint8_t* sub = reinterpret_cast<const uint8_t*>(w.sub_scales) + (g * blocks + b) * 2 * kPackedRows + j;
        const float scale = F16ToF32(w.scales[at]) * float(sub[0]),
                    min = F16ToF32(w.mins[at]) * float(sub[kPackedRows]);
        float* out = dst + b * kQuantBlockValues;  // [32]
        for (int c = 0; c < 4; ++c)
          for (int i = 0; i < 4; ++i) {
            const int top = w.type == WeightType::kQ5_K ? in[256 + i] : 0;  // Q5_K's fifth bits
            out[4 * c + i] = scale * float((in[c * 64 + i] & 15) | (top >> c & 1) << 4) - min;
            out[16 + 4 * c + i] = scale * float((in[c * 64 + i] >> 4) | (top >> (4 + c) & 1) << 4) - min;
          }
        continue;
      }
      const float d = F16ToF32(w.scales[(g * blocks + b) * kPackedRows + j]);
      const float m = w.mins ? F16ToF32(w.mins[(g * blocks + b) * kPackedRows + j]) : 0.0f;
      float* out = dst + b * kQuantBlockValues;  // [32]
      const bool five = w.type == WeightType::kQ5_0 || w.type == WeightType::kQ5_1;
      const int offset = w.type == WeightType::kQ4_0 ? 8 : w.type == WeightType::kQ5_0 ? 16 : 0;
      for (int c = 0; c < (w.type == WeightType::kQ8_0 ? 8 : 4); ++c)
        for (int i = 0; i < 4; ++i) {
          const uint8_t byte = in[c * 64 + i];
          if (w.type == WeightType::kQ8_0) {
            out[4 * c + i] = d * float(int8_t(byte));
            continue;
          }
          const int top = five ? in[256 + i] : 0;  // Q5_0's and Q5_1's fifth bits
          const int q0 = (byte & 0xf) | (top >> c & 1) << 4, q1 = (byte >> 4) | (top >> (4 + c) & 1) << 4;
          if (w.mins) {  // as ggml: q d + m
            out[4 * c + i] = float(q0) * d + m;
            out[16 + 4 * c + i] = float(q1) * d + m;
          } else {  // d (q - offset)
            out[4 * c + i] = d * float(q0 - offset);
            out[16 + 4 * c + i] = d * float(q1 - offset);
          }
        }
    }
  }
}

}  // namespace swan
