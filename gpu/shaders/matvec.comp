#version 450
// y [m, n] = x [m, k] · wᵀ, w [n, k] in the type matvec_weights.glsl reads.
// One workgroup per output value and tile of up to TILE input rows: its 64
// invocations take the row's units in turn, each unit's weights read from
// memory and unpacked once for the tile's rows (a prefill's rows share
// them), and add their partial sums in shared memory, which holds on any
// subgroup size.
// Rows past 65535 go to the y dimension of the grid (the least
// maxComputeWorkGroupCount Vulkan guarantees); tiles of input rows to z.

#define TILE 4

layout(local_size_x = 64) in;

layout(std430, binding = 1) readonly buffer Input { float x[]; };    // [m, k]
layout(std430, binding = 2) writeonly buffer Output { float y[]; };  // [m, n]

layout(push_constant) uniform Shape {
  uint n;          // output features
  uint k;          // input features
  uint row_bytes;  // bytes of one weight row
  uint m;          // input rows
} shape;

#include "matvec_weights.glsl"

shared float partial[TILE * 64];  // [TILE, 64]

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  const uint first_input = gl_WorkGroupID.z * TILE;
  const uint inputs = min(uint(TILE), shape.m - first_input);
  const uint t = gl_LocalInvocationID.x;
  if (row >= shape.n) return;  // the whole workgroup leaves together
  const uint units = shape.k / UNIT;
  const uint row_byte = row * shape.row_bytes;
  float sums[TILE];
  for (uint i = 0u; i < TILE; ++i) sums[i] = 0.0;
  for (uint b = t; b < units; b += 64u) BlockDots(row_byte, b, first_input * shape.k + b * UNIT, inputs, sums);
  for (uint i = 0u; i < TILE; ++i) partial[i * 64u + t] = sums[i];
  barrier();
  for (uint half_size = 32u; half_size > 0u; half_size >>= 1) {
    if (t < half_size)
      for (uint i = 0u; i < TILE; ++i) partial[i * 64u + t] += partial[i * 64u + t + half_size];
    barrier();
  }
  if (t < inputs) y[(first_input + t) * shape.n + row] = partial[t * 64u];
}
