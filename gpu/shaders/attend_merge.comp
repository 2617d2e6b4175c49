#version 450
// attention/attention.h's Attend, second half: out rows [first_q, first_q +
// n_q) of [rows, n_heads, head_dim] from attend.comp's partials, one
// workgroup per query row and query head of the store's KV heads
// (stored_heads.glsl; a per-head layer's other heads are another call's). With
// M the largest of the splits' m (and of the learned sink logit), out =
// Σ_s e^{m_s - M} o_s / (Σ_s e^{m_s - M} l_s + e^{sink - M}); a split
// that saw no key has m = -inf and adds nothing, and a query that saw no
// key (nor has a sink) gets zeros, as on the CPU.

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Partials { float partials[]; };  // [n_q, n_heads, n_splits, head_dim + 2]
layout(std430, binding = 1) readonly buffer SinkLogits { float sink_logits[]; };  // [n_heads], read when has_sink_logits
layout(std430, binding = 2) writeonly buffer Output { float out_values[]; };  // [first_q + n_q, n_heads, head_dim]

layout(push_constant) uniform Shape {
  uint n_heads, head_dim, n_splits;
  uint has_sink_logits;
  uint first_q;
  uint group;         // query heads per KV head
  uint stored_heads;  // the KV heads of the call, bit h for head h; 0: every head
} shape;

#include "stored_heads.glsl"

void main() {
  const uint row = gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
  const uint head = StoredHead(shape.stored_heads, gl_WorkGroupID.x / shape.group) * shape.group +
                    gl_WorkGroupID.x % shape.group;
  const uint hd = shape.head_dim, stride = hd + 2u;
  const uint base = (row * shape.n_heads + head) * shape.n_splits * stride;
  const float unseen = -1.0 / 0.0;
  const bool sink = shape.has_sink_logits != 0u;
  float top = sink ? sink_logits[head] : unseen;
  for (uint s = 0u; s < shape.n_splits; ++s) top = max(top, partials[base + s * stride + hd]);
  float total = sink ? exp(sink_logits[head] - top) : 0.0;
  for (uint s = 0u; s < shape.n_splits; ++s) {
    const float m = partials[base + s * stride + hd];
    if (m != unseen) total += exp(m - top) * partials[base + s * stride + hd + 1u];
  }
  const float inv = total > 0.0 ? 1.0 / total : 0.0;
  for (uint d = t; d < hd; d += 64u) {
    float acc = 0.0;
    for (uint s = 0u; s < shape.n_splits; ++s) {
      const float m = partials[base + s * stride + hd];
      if (m != unseen) acc += exp(m - top) * partials[base + s * stride + d];
    }
    out_values[((shape.first_q + row) * shape.n_heads + head) * hd + d] = acc * inv;
  }
}
