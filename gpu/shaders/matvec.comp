#version 450
// y [m, n] = x [m, k] · wᵀ, w [n, k] in the type matvec_weights.glsl reads.
// One workgroup per output value: its 64 invocations take the row's units
// in turn and add their partial sums in shared memory, which holds on any
// subgroup size. Rows past 65535 go to the y dimension of the grid (the
// least maxComputeWorkGroupCount Vulkan guarantees); input rows to z.

layout(local_size_x = 64) in;

layout(std430, binding = 1) readonly buffer Input { float x[]; };    // [m, k]
layout(std430, binding = 2) writeonly buffer Output { float y[]; };  // [m, n]

layout(push_constant) uniform Shape {
  uint n;          // output features
  uint k;          // input features
  uint row_bytes;  // bytes of one weight row
} shape;

#include "matvec_weights.glsl"

shared float partial[64];

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  const uint input_row = gl_WorkGroupID.z;
  const uint t = gl_LocalInvocationID.x;
  if (row >= shape.n) return;  // the whole workgroup leaves together
  const uint units = shape.k / UNIT;
  const uint row_byte = row * shape.row_bytes;
  float sum = 0.0;
  for (uint b = t; b < units; b += 64u) sum += BlockDot(row_byte, b, input_row * shape.k + b * UNIT);
  partial[t] = sum;
  barrier();
  for (uint half_size = 32u; half_size > 0u; half_size >>= 1) {
    if (t < half_size) partial[t] += partial[t + half_size];
    barrier();
  }
  if (t == 0u) y[input_row * shape.n + row] = partial[0];
}
