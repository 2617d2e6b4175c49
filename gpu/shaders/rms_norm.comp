#version 450
// out [rows, dim] = x / sqrt(mean(x²) + eps) · (w + one), one workgroup per
// row; one is 1 for Gemma's norms (its weights are stored as w - 1), else 0.

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Input { float x[]; };     // [rows, dim]
layout(std430, binding = 1) readonly buffer Weight { float w[]; };    // [dim]
layout(std430, binding = 2) writeonly buffer Output { float y[]; };   // [rows, dim]

layout(push_constant) uniform Shape {
  uint dim;
  float eps;
  float one;
} shape;

shared float partial[64];

void main() {
  const uint row = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  const uint base = row * shape.dim;
  float sum = 0.0;
  for (uint i = t; i < shape.dim; i += 64u) sum += x[base + i] * x[base + i];
  partial[t] = sum;
  barrier();
  for (uint half_size = 32u; half_size > 0u; half_size >>= 1) {
    if (t < half_size) partial[t] += partial[t + half_size];
    barrier();
  }
  const float inv = inversesqrt(partial[0] / float(shape.dim) + shape.eps);
  for (uint i = t; i < shape.dim; i += 64u) y[base + i] = x[base + i] * inv * (w[i] + shape.one);
}
