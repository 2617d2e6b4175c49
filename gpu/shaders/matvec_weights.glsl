// How matvec.comp reads one weight row: the row's values as the file holds
// them (GGUF's layout), from a buffer of 32-bit words. WEIGHT_* picks the
// type; BlockDots(row_byte, b, xb, inputs, sums) adds to sums[i] the dot
// product of the row's values [UNIT b, UNIT (b + 1)) with input row i's
// (i < inputs), xb the index of input row 0's first one in x: each weight
// is unpacked once for all the tile's rows.
//   f32, bf16, f16: UNIT 1, a row is k values
//   Q8_0: UNIT 32, blocks of 34 bytes: f16 d, 32 int8 q; value d q
//   Q4_0: UNIT 32, blocks of 18 bytes: f16 d, 16 bytes of nibbles; value j
//         (j < 16) is d (low nibble of byte j - 8), value j + 16 its high one
//   Q4_1: UNIT 32, blocks of 20 bytes: f16 d, f16 m, 16 bytes of nibbles
//         as Q4_0's; value d q + m
//   Q5_0: UNIT 32, blocks of 22 bytes: f16 d, 32 high bits (value j's at
//         bit j), 16 bytes of nibbles as Q4_0's; value d (q - 16)
//   Q5_1: UNIT 32, blocks of 24 bytes: f16 d, f16 m, the high bits and
//         nibbles as Q5_0's; value d q + m
//   Q4_K: UNIT 32, a sub-block of a 144-byte super-block of 256 values:
//         f16 d, f16 dmin, 12 bytes of 6-bit scales and mins, 128 of
//         nibbles; value d sc q - dmin m
//   Q5_K: UNIT 32, a sub-block of a 176-byte super-block: Q4_K's d, dmin
//         and scales, 32 bytes of high bits (sub-block j's at bit j of byte
//         l), 128 of nibbles; value d sc q - dmin m
//   Q6_K: UNIT 32, a sub-block of a 210-byte super-block: 128 bytes of low
//         nibbles, 64 of high 2 bits, 16 int8 scales (one per 16 values),
//         f16 d; value d sc (q - 32)
// Blocks start at any even byte: bytes are read out of their words, so no
// 8- or 16-bit storage feature is needed.

layout(std430, binding = 0) readonly buffer Weights { uint w[]; };

uint ByteAt(uint at) { return (w[at >> 2] >> ((at & 3u) * 8u)) & 0xffu; }
// The f16 at an even byte.
float HalfAt(uint at) { return unpackHalf2x16(w[at >> 2] >> ((at & 2u) * 8u)).x; }
int Int8At(uint at) { return int(ByteAt(at) << 24) >> 24; }
// Input row i's value j of the unit at xb (rows are shape.k apart).
#define X(i, j) x[xb + (i) * shape.k + (j)]

#if defined(WEIGHT_F32) || defined(WEIGHT_BF16) || defined(WEIGHT_F16)
const uint UNIT = 1;
void BlockDots(uint row_byte, uint b, uint xb, uint inputs, inout float sums[TILE]) {
#if defined(WEIGHT_F32)
  const float value = uintBitsToFloat(w[(row_byte >> 2) + b]);
#elif defined(WEIGHT_BF16)
  const uint at = row_byte + 2u * b;
  const uint word = w[at >> 2];
  const float value = uintBitsToFloat((at & 2u) == 0u ? word << 16 : word & 0xffff0000u);
#else
  const float value = HalfAt(row_byte + 2u * b);
#endif
  for (uint i = 0u; i < inputs; ++i) sums[i] += value * X(i, 0u);
}
#elif defined(WEIGHT_Q8_0)
const uint UNIT = 32;
const uint BLOCK_BYTES = 34;
void BlockDots(uint row_byte, uint b, uint xb, uint inputs, inout float sums[TILE]) {
  const uint at = row_byte + BLOCK_BYTES * b;
  float dots[TILE];
  for (uint i = 0u; i < TILE; ++i) dots[i] = 0.0;
  for (uint j = 0u; j < 32u; ++j) {
    const float value = float(Int8At(at + 2u + j));
    for (uint i = 0u; i < inputs; ++i) dots[i] += value * X(i, j);
  }
  const float d = HalfAt(at);
  for (uint i = 0u; i < inputs; ++i) sums[i] += d * dots[i];
}
#elif defined(WEIGHT_Q4_0)
const uint UNIT = 32;
const uint BLOCK_BYTES = 18;
void BlockDots(uint row_byte, uint b, uint xb, uint inputs, inout float sums[TILE]) {
  const uint at = row_byte + BLOCK_BYTES * b;
  float dots[TILE];
  for (uint i = 0u; i < TILE; ++i) dots[i] = 0.0;
  for (uint j = 0u; j < 16u; ++j) {
    const uint byte = ByteAt(at + 2u + j);
    const float lo = float(int(byte & 0xfu) - 8), hi = float(int(byte >> 4) - 8);
    for (uint i = 0u; i < inputs; ++i) dots[i] += lo * X(i, j) + hi * X(i, 16u + j);
  }
  const float d = HalfAt(at);
  for (uint i = 0u; i < inputs; ++i) sums[i] += d * dots[i];
}
#elif defined(WEIGHT_Q4_1) || defined(WEIGHT_Q5_0) || defined(WEIGHT_Q5_1)
const uint UNIT = 32;
#if defined(WEIGHT_Q4_1)
const uint BLOCK_BYTES = 20, QS = 4;  // the nibbles' offset in a block
#elif defined(WEIGHT_Q5_0)
const uint BLOCK_BYTES = 22, QS = 6, QH = 2;  // QH: the high bits' offset
#else
const uint BLOCK_BYTES = 24, QS = 8, QH = 4;
#endif
void BlockDots(uint row_byte, uint b, uint xb, uint inputs, inout float sums[TILE]) {
  const uint at = row_byte + BLOCK_BYTES * b;
#if defined(WEIGHT_Q4_1)
  const uint high = 0u;
#else
  const uint high = ByteAt(at + QH) | (ByteAt(at + QH + 1u) << 8) | (ByteAt(at + QH + 2u) << 16) |
                    (ByteAt(at + QH + 3u) << 24);
#endif
  float dots[TILE], x_sums[TILE];  // Σ q x and Σ x per input row
  for (uint i = 0u; i < TILE; ++i) dots[i] = 0.0, x_sums[i] = 0.0;
  for (uint j = 0; j < 16u; ++j) {
    const uint byte = ByteAt(at + QS + j);
    const float lo = float((byte & 0xfu) | (((high >> j) & 1u) << 4));
    const float hi = float((byte >> 4) | (((high >> (j + 16u)) & 1u) << 4));
    for (uint i = 0u; i < inputs; ++i) {
      dots[i] += lo * X(i, j) + hi * X(i, 16u + j);
      x_sums[i] += X(i, j) + X(i, 16u + j);
    }
  }
  const float d = HalfAt(at);
#if defined(WEIGHT_Q5_0)
  for (uint i = 0u; i < inputs; ++i) sums[i] += d * (dots[i] - 16.0 * x_sums[i]);
#else
  const float m = HalfAt(at + 2u);
  for (uint i = 0u; i < inputs; ++i) sums[i] += d * dots[i] + m * x_sums[i];
#endif
}
#elif defined(WEIGHT_Q4_K) || defined(WEIGHT_Q5_K)
const uint UNIT = 32;
// Sub-block j's 6-bit scale and min from the 12 bytes at `at` (ggml's
// get_scale_min_k4).
uvec2 ScaleMin(uint at, uint j) {
  if (j < 4u) return uvec2(ByteAt(at + j) & 63u, ByteAt(at + j + 4u) & 63u);
  const uint low = ByteAt(at + j + 4u);
  return uvec2((low & 0xfu) | ((ByteAt(at + j - 4u) >> 6) << 4), (low >> 4) | ((ByteAt(at + j) >> 6) << 4));
}
void BlockDots(uint row_byte, uint u, uint xb, uint inputs, inout float sums[TILE]) {
  const uint j = u % 8u;
#if defined(WEIGHT_Q5_K)
  const uint at = row_byte + 176u * (u / 8u);
  // sub-block j's fifth bit is bit j of the high-bit byte l
  const uint qh = at + 16u, qs = at + 48u + 32u * (j / 2u);
#else
  const uint at = row_byte + 144u * (u / 8u);
  const uint qs = at + 16u + 32u * (j / 2u);
#endif
  // sub-blocks 2c and 2c + 1 are the low and high nibbles of bytes 32c ..
  const uint shift = 4u * (j % 2u);
  const uvec2 sm = ScaleMin(at + 4u, j);
  float dots[TILE], x_sums[TILE];  // Σ q x and Σ x per input row
  for (uint i = 0u; i < TILE; ++i) dots[i] = 0.0, x_sums[i] = 0.0;
  for (uint l = 0; l < 32u; ++l) {
#if defined(WEIGHT_Q5_K)
    const float value = float(((ByteAt(qs + l) >> shift) & 0xfu) | (((ByteAt(qh + l) >> j) & 1u) << 4));
#else
    const float value = float((ByteAt(qs + l) >> shift) & 0xfu);
#endif
    for (uint i = 0u; i < inputs; ++i) {
      dots[i] += value * X(i, l);
      x_sums[i] += X(i, l);
    }
  }
  const float scale = HalfAt(at) * float(sm.x), min_scale = HalfAt(at + 2u) * float(sm.y);
  for (uint i = 0u; i < inputs; ++i) sums[i] += scale * dots[i] - min_scale * x_sums[i];
}
#elif defined(WEIGHT_Q6_K)
const uint UNIT = 32;
void BlockDots(uint row_byte, uint u, uint xb, uint inputs, inout float sums[TILE]) {
  const uint at = row_byte + 210u * (u / 8u), j = u % 8u;
  const uint h = j / 4u, g = j % 4u;  // the 128-value half, and 32-value group in it
  // group g: low nibbles of ql[l] (0), of ql[l + 32] (1), high nibbles of
  // the same (2, 3); its top 2 bits at bit 2g of qh[l]
  const uint ql = at + 64u * h + 32u * (g % 2u), qh = at + 128u + 32u * h, shift = 4u * (g / 2u);
  const uint scales = at + 192u + 8u * h + 2u * g;
  float totals[TILE];
  for (uint i = 0u; i < TILE; ++i) totals[i] = 0.0;
  for (uint half16 = 0; half16 < 2u; ++half16) {
    float dots[TILE];
    for (uint i = 0u; i < TILE; ++i) dots[i] = 0.0;
    for (uint l = 16u * half16; l < 16u * half16 + 16u; ++l) {
      const uint q = ((ByteAt(ql + l) >> shift) & 0xfu) | (((ByteAt(qh + l) >> (2u * g)) & 3u) << 4);
      const float value = float(int(q) - 32);
      for (uint i = 0u; i < inputs; ++i) dots[i] += value * X(i, l);
    }
    const float sc = float(Int8At(scales + half16));
    for (uint i = 0u; i < inputs; ++i) totals[i] += sc * dots[i];
  }
  const float d = HalfAt(at + 208u);
  for (uint i = 0u; i < inputs; ++i) sums[i] += d * totals[i];
}
#else
#error "matvec.comp: define one WEIGHT_ type"
#endif
