#version 450
// out [n / 2 words at word `offset`] = x [from, from + n) rounded to
// bfloat16, two a word (the lower half first), as util/bf16.h's F32ToBF16
// rounds: to nearest, ties to even, NaN kept a quiet NaN. Writes rows of a
// bf16 KV cache.

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Input { float x[]; };  // [from + n]
layout(std430, binding = 1) buffer Output { uint words[]; };      // [offset + n / 2]

layout(push_constant) uniform Shape {
  uint n;       // values; even
  uint offset;  // first word written
  uint from;    // first value read
} shape;

uint ToBF16(float f) {
  uint bits = floatBitsToUint(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (bits >> 16) | 0x40u;
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return bits >> 16;
}

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
  if (2u * i >= shape.n) return;
  const uint at = shape.from + 2u * i;
  words[shape.offset + i] = ToBF16(x[at]) | (ToBF16(x[at + 1u]) << 16);
}
