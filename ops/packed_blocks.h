// Q8_0, Q4_0, Q4_1 and K-quant weights laid out for the integer kernels (ops/block_product):
// rows in groups of 16, and within a group each block's 16 scales side by
// side and its quantized values interleaved 4 at a time, so that one 64-byte
// load holds 4 consecutive values of all 16 rows. An 8-bit dot-product
// instruction (VNNI's vpdpbusd, AVX2's vpmaddubsw) against 4 input values
// broadcast to every lane then gives each of the 16 rows its partial sum in
// a lane of its own: no horizontal sums, and one vector of scales per block.
// (llama.cpp repacks Q4_0 for its AVX2 kernels for the same reason.)
//
// A matrix of n rows and k values per row (k a multiple of 32) has
// G = ceil(n / 16) groups and B = k / 32 blocks per row. Its bytes:
//   payload [G, B, P]   P = 512 (Q8_0) or 256 (Q4_0, Q4_1) bytes per group-block:
//     Q8_0: chunk c in [0, 8), row j in [0, 16): 4 bytes at c * 64 + j * 4,
//           the int8 values 4c .. 4c + 3 of row j's block.
//     Q4_x: chunk c in [0, 4), row j: 4 bytes at c * 64 + j * 4, bytes
//           4c .. 4c + 3 of row j's block as the file stores them (low
//           nibbles: values 4c .. 4c + 3; high nibbles: values 16 + 4c ..).
//           So chunk c of the low nibbles and chunk c of the high ones
//           hold values 4c .. 4c + 3 and 4(c + 4) .. 4(c + 4) + 3.
//   scales  [G, B, 16]  the f16 scales of the group's rows for each block.
//   mins    [G, B, 16]  Q4_1 (and Q5_1) only: the f16 mins likewise.
// Q6_K (k a multiple of 256; its values q in [0, 63], value = d * scale * (q - 32)):
//   payload [G, B, 384]: bytes [0, 256) Q4_x's layout of the low 4 bits of
//           q; then 2 chunks h of 64 bytes, row j's 4 bytes at 256 + h * 64
//           + j * 4, whose byte i holds in bits 2c, 2c + 1 the top 2 bits of
//           value 16h + 4c + i (c in [0, 4)): of the values whose low bits
//           are in low (h = 0) or high (h = 1) nibble chunk c.
//   sub_scales [G, B, 2, 16] int8: the scales of values 0-15, then 16-31.
//   scales  [G, B / 8, 16]: each super-block's f16 d.
// So 420 bytes per group-block: the file's 210 per 256 values.
// Q4_K (k a multiple of 256; q in [0, 15], value = (d * sc) * q - dmin * m):
//   payload [G, B, 256]: Q4_x's layout of q.
//   sub_scales [G, B, 2, 16] (bytes, 0-63): each block's sc, then its m.
//   scales, mins [G, B / 8, 16]: each super-block's f16 d and dmin.
// So 296 bytes per group-block where the file has 288: its 6-bit scales
// and mins a byte each.
// Q5_K: Q4_K with q in [0, 31], its top bit beside the nibbles:
//   payload [G, B, 320]: Q4_x's layout of the low 4 bits, then row j's 4
//           bytes at 256 + j * 4, whose byte i holds in bit c the top bit
//           of value 4c + i and in bit 4 + c that of value 16 + 4c + i.
// So 360 bytes per group-block where the file has 352.
// Q5_0 and Q5_1 (q in [0, 31]; d (q - 16), and d q + m): Q4_0's and Q4_1's
// scales (and mins) with Q5_K's payload, so the file's bytes (352 and 384
// per group-block).
// Rows past n in the last group are zero with a scale (and min) of 0. The
// layout takes G * 16 rows of the format's bytes, so the same bytes as the
// file for n a multiple of 16 (but Q4_K's and Q5_K's). The payload comes first, so it
// stays 64-byte aligned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "ops/weight_type.h"

namespace swan {

constexpr int64_t kPackedRows = 16;

constexpr int64_t PackedGroups(int64_t n) { return (n + kPackedRows - 1) / kPackedRows; }
// Payload bytes of one group-block.
constexpr size_t PackedPayloadBytes(WeightType type) {
  return type == WeightType::kQ8_0                                                             ? 512
         : type == WeightType::kQ6_K                                                           ? 384
         : type == WeightType::kQ5_K || type == WeightType::kQ5_0 || type == WeightType::kQ5_1 ? 320
                                                                                               : 256;
}
// Bytes of a block's quantized values in the file's layout, and where they
// start (after the scale, and Q4_1's min); 32-value formats.
constexpr size_t ValueBytes(WeightType type) { return PackedPayloadBytes(type) / kPackedRows; }
constexpr size_t ValueOffset(WeightType type) { return QuantBlockBytes(type) - ValueBytes(type); }
// Bytes of a packed [n, k] matrix.
constexpr size_t PackedBytes(WeightType type, int64_t n, int64_t k) {
  // Q4_K, Q5_K: payload, a byte of scale and of min per row, d and dmin per 8 blocks
  if (type == WeightType::kQ4_K || type == WeightType::kQ5_K)
    return size_t(PackedGroups(n) * (k / kQuantBlockValues)) * (PackedPayloadBytes(type) + 32 + 8);
  return size_t(PackedGroups(n) * kPackedRows) * WeightRowBytes(type, k);
}

// Where a packed matrix's parts lie.
struct PackedBlocks {
  const uint8_t* payload = nullptr;  // [G, B, PackedPayloadBytes(type)]
  const uint16_t* scales = nullptr;  // [G, B, 16] f16 (K-quants: [G, B / 8, 16], d)
  const uint16_t* mins = nullptr;  // [G, B, 16] f16 (Q4_1, Q5_1; Q4_K, Q5_K: [G, B / 8, 16], dmin; null for the others)
  const int8_t* sub_scales = nullptr;  // [G, B, 2, 16] (K-quants; null for the others)
  WeightType type = WeightType::kQ8_0;
  int64_t n = 0, k = 0;

  int64_t blocks() const { return k / kQuantBlockValues; }
};
PackedBlocks PackedBlocksAt(const void* data, WeightType type, int64_t n, int64_t k);

// dst [PackedBytes(type, n, k)] from rows in the file's layout, src
// [n, WeightRowBytes(type, k)]: row r is src's row order[r] (src's rows in
// turn when order is null). A block type, k a multiple of RowMultiple(type).
// With src's rows in turn, done_with(span, bytes) is then called with each
// span of src whose rows are packed (from several threads, as they finish),
// which PackBlockRows will not read again: a mapped file's pages can go as
// the packing goes, so a matrix is not held twice at the end of it.
using SourceDone = std::function<void(const uint8_t* span, size_t bytes)>;
void PackBlockRows(WeightType type, uint8_t* dst, const uint8_t* src, int64_t n, int64_t k,
                   const int64_t* order = nullptr, const SourceDone& done_with = {});

// The same from rows in the file's layout made on demand: rows_of(first,
// count, out) writes rows [first, first + count) into out [count,
// WeightRowBytes(type, k)] (at most 16 rows a call, from several threads at
// once): a matrix of another format converted block by block.
using BlockRowsOf = std::function<void(int64_t first, int64_t count, uint8_t* out)>;
void PackBlockRowsFrom(WeightType type, uint8_t* dst, int64_t n, int64_t k, const BlockRowsOf& rows_of);

// dst [PackedBytes(type, n, k)]: w [n, k] float32 quantized as
// QuantizeRows does (ops/quant_blocks.h), straight into the packed layout.
void QuantizePacked(WeightType type, uint8_t* dst, const float* w, int64_t n, int64_t k);

// The same from rows made on demand: rows_of(first, count, out) writes rows
// [first, first + count) of w as float32 into out [count, k] (at most 16
// rows a call, from several threads at once), so a matrix of another
// format is converted without a float32 copy of the whole of it.
using FloatRows = std::function<void(int64_t first, int64_t count, float* out)>;
void QuantizePackedFrom(WeightType type, uint8_t* dst, int64_t n, int64_t k, const FloatRows& rows_of);

// The inverse of PackBlockRows: dst [n, WeightRowBytes(type, k)], the
// rows in the file's layout, byte for byte (what a device's kernels read).
void UnpackBlockRows(const PackedBlocks& w, uint8_t* dst);

// dst [count, k] float32: rows [row, row + count) of a packed matrix.
void DequantizePackedRows(const PackedBlocks& w, float* dst, int64_t row, int64_t count);

}  // namespace swan
