// llama.cpp's Q8_0, Q4_0 and Q4_1 block formats (as GGUF files store them),
// from the format's definition in ggml:
//   Q8_0, 34 bytes per 32 values: an f16 scale d, then int8 q[32];
//         value i = d * q[i].
//   Q4_0, 18 bytes per 32 values: an f16 scale d, then 16 bytes; byte j
//         holds value j in its low nibble and value j + 16 in its high
//         nibble; value = d * (nibble - 8).
//   Q4_1, 20 bytes per 32 values: an f16 scale d, an f16 min m, then Q4_0's
//         16 bytes of nibbles; value = nibble * d + m.
//   Q5_0, Q5_1 (22 and 24 bytes): Q4_0 and Q4_1 with q in [0, 31], whose
//         top bits (bit j of a u32 for value j) come before the nibbles;
//         value = d * (q - 16), and q * d + m (ops/dequant_blocks.h).
// Quantization rounds as llama.cpp's reference quantizer does, so a file
// swan writes holds the bytes llama.cpp would write for the same weights.
// The K-quants (ops/dequant_blocks.h) are quantized more simply than
// llama.cpp's search for each scale: each sub-block's step (Q6_K: its
// largest magnitude / 31; Q4_K, Q5_K: its range down from min(0, its least)
// / 15 or 31) and their min rounded up to multiples of d (and dmin) = the
// largest of them / 127 (63 for Q4_K and Q5_K), so that no value is
// clamped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/weight_type.h"

namespace swan {

struct BlockQ8_0 {
  uint16_t d;    // f16 scale
  int8_t q[32];  // [32] values / d
};
struct BlockQ4_0 {
  uint16_t d;     // f16 scale
  uint8_t q[16];  // [16] value j | value (j + 16) << 4, each offset by 8
};
struct BlockQ4_1 {
  uint16_t d;     // f16 scale
  uint16_t m;     // f16 min
  uint8_t q[16];  // [16] value j | value (j + 16) << 4
};
static_assert(sizeof(BlockQ8_0) == QuantBlockBytes(WeightType::kQ8_0));
static_assert(sizeof(BlockQ4_1) == QuantBlockBytes(WeightType::kQ4_1));
static_assert(sizeof(BlockQ4_0) == QuantBlockBytes(WeightType::kQ4_0));

// dst [n / 32] blocks from src [n]; n a multiple of 32.
void QuantizeRowQ8_0(BlockQ8_0* dst, const float* src, int64_t n);
void QuantizeRowQ4_0(BlockQ4_0* dst, const float* src, int64_t n);
void QuantizeRowQ4_1(BlockQ4_1* dst, const float* src, int64_t n);
// dst [n / 32 blocks of 22 or 24 bytes] from src [n].
void QuantizeRowQ5_0(uint8_t* dst, const float* src, int64_t n);
void QuantizeRowQ5_1(uint8_t* dst, const float* src, int64_t n);
// dst [n / 256 super-blocks of 144, 176 or 210 bytes] from src [n]; n a
// multiple of 256.
void QuantizeRowQ4_K(uint8_t* dst, const float* src, int64_t n);
void QuantizeRowQ5_K(uint8_t* dst, const float* src, int64_t n);
void QuantizeRowQ6_K(uint8_t* dst, const float* src, int64_t n);

// [rows, WeightRowBytes(type, in)] bytes of w [rows, in] as `type` (a block
// format; in a multiple of RowMultiple(type)). Rows in parallel.
std::vector<uint8_t> QuantizeRows(WeightType type, const float* w, int64_t rows, int64_t in);

// The same into dst [rows, WeightRowBytes(type, in)], on this thread.
void QuantizeRowsInto(WeightType type, uint8_t* dst, const float* w, int64_t rows, int64_t in);

// dst [rows, in] float32 from `rows` rows of `type` (any WeightType) at src
// [rows, WeightRowBytes(type, in)]. Rows in parallel.
void DequantizeRows(WeightType type, float* dst, const void* src, int64_t rows, int64_t in);

}  // namespace swan
