#version 450
// Rotates x [n_tokens, n_heads, head_dim] in place by the angles whose
// cosines and sines the host computed in float64 (ops/rope.h's
// Rope::CosSin): pairs (x[i], x[i + head_dim / 2]), Hugging Face's
// rotate_half. One invocation per pair; token t reads row table_row + t
// of the table (a decode step keeps every layer's row in one table).

layout(local_size_x = 64) in;

layout(std430, binding = 0) buffer Values { float x[]; };            // [n_tokens, n_heads, head_dim]
layout(std430, binding = 1) readonly buffer CosSin { float cs[]; };  // [table_row + n_tokens, 2, head_dim / 2]

layout(push_constant) uniform Shape {
  uint n_tokens, n_heads, head_dim, table_row;
} shape;

void main() {
  const uint half_dim = shape.head_dim / 2u;
  const uint pair = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
  if (pair >= shape.n_tokens * shape.n_heads * half_dim) return;
  const uint i = pair % half_dim, head_row = pair / half_dim;  // head_row = token * n_heads + head
  const uint token = head_row / shape.n_heads + shape.table_row;
  const uint at = head_row * shape.head_dim + i;
  const float c = cs[token * shape.head_dim + i], s = cs[token * shape.head_dim + half_dim + i];
  const float a = x[at], b = x[at + half_dim];
  x[at] = a * c - b * s;
  x[at + half_dim] = b * c + a * s;
}
