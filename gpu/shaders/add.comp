#version 450
// y [n] += scale x [i mod period]: the residual stream (scale 1, period n),
// Gemma's scaled embedding added into a zeroed stream, or a bias [period]
// added to every row of y.

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Input { float x[]; };  // [period]
layout(std430, binding = 1) buffer Stream { float y[]; };          // [n]

layout(push_constant) uniform Shape {
  uint n;
  float scale;
  uint period;
} shape;

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
  if (i >= shape.n) return;
  y[i] += shape.scale * x[i % shape.period];
}
