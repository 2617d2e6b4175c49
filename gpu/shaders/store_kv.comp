#version 450
// A cache store's rows from a step's keys or values: rows [to_slot,
// to_slot + count) of out [slots, n_stored, head_dim] = rows [from_row,
// from_row + count) of x [n, n_kv_heads, head_dim] at the store's heads
// (stored_heads.glsl). KV_F32: as they are; KV_BF16: rounded as
// util/bf16.h's F32ToBF16 rounds (to nearest, ties to even, NaN kept a
// quiet NaN), two values a word, the lower half first.

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Input { float x[]; };  // [n, n_kv_heads, head_dim]
layout(std430, binding = 1) buffer Output { uint words[]; };      // [slots, n_stored, head_dim] of the KV type

layout(push_constant) uniform Shape {
  uint count, n_kv_heads, head_dim;  // head_dim even
  uint from_row, to_slot;
  uint stored_heads, n_stored;  // the store's heads as a mask (0: all), and how many
} shape;

#include "stored_heads.glsl"

#if defined(KV_BF16)
const uint PER_WORD = 2u;
uint ToBF16(float f) {
  uint bits = floatBitsToUint(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (bits >> 16) | 0x40u;
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return bits >> 16;
}
#elif defined(KV_F32)
const uint PER_WORD = 1u;
#else
#error "store_kv.comp: define KV_F32 or KV_BF16"
#endif

void main() {
  const uint w = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
  const uint row_values = shape.n_stored * shape.head_dim;
  if (w * PER_WORD >= shape.count * row_values) return;
  // A word's values share a row and a head: head_dim is even.
  const uint e = w * PER_WORD, r = e / row_values, within = e % row_values;
  const uint head = StoredHead(shape.stored_heads, within / shape.head_dim);
  const uint from = ((shape.from_row + r) * shape.n_kv_heads + head) * shape.head_dim + within % shape.head_dim;
  const uint at = shape.to_slot * row_values / PER_WORD + w;
#if defined(KV_BF16)
  words[at] = ToBF16(x[from]) | (ToBF16(x[from + 1u]) << 16);
#else
  words[at] = floatBitsToUint(x[from]);
#endif
}
