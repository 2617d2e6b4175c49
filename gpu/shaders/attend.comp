#version 450
// out [n_q, n_heads, head_dim] = softmax(scale q kᵀ over the keys each query
// sees) v: attention/attention.h's Attend, one workgroup per query row and
// head. Keys are chosen by position with swan's one window rule
// (attention/span.h): a query at q sees a key at k iff 0 <= k <= q and
// (window == 0 or k >= the window's start or k < sinks), the start being
// q - window + 1 for a sliding window and the start of q's block for a
// block window; a row of position < 0 is an empty slot. Query head h reads KV head h / (n_heads / n_kv_heads).
// Two ways a query sees every key despite the window: its KV head is in
// full_heads_mask (a per-head layer), or its row's route logit is above 0
// (a routed layer: Switch Attention's router says full iff w·xn + b > 0).
// StreamingLLM positions (pos:cache, model/cache_positions.h): a sink that
// has left the sliding window is scored with the query rotated to
// min(q, sinks + window - 1) instead, read sink_queries values further on
// in q; one softmax over both parts is the CPU's merge of the two.
// Three passes over the keys: logits into `scores`, their exponentials and
// sum, then each invocation's dimensions of the weighted sum of values.
// A learned sink logit adds e^{sink} to the sum with no value.
//   KV_F32: k, v float32; KV_BF16: bfloat16 pairs in 32-bit words

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Queries { float q[]; };  // [n_q, n_heads, head_dim] (x2 with sink_queries)
layout(std430, binding = 1) readonly buffer Keys { uint k_words[]; };     // [n_rows, row_stride] of KV type
layout(std430, binding = 2) readonly buffer Values { uint v_words[]; };   // [n_rows, row_stride] of KV type
layout(std430, binding = 3) readonly buffer KeyPositions { int kv_pos[]; };  // [n_rows]
layout(std430, binding = 4) readonly buffer QueryPositions { int q_pos[]; };  // [n_q]
layout(std430, binding = 5) readonly buffer SinkLogits { float sink_logits[]; };  // [n_heads], read when has_sinks
layout(std430, binding = 6) coherent buffer Scores { float scores[]; };  // [n_q, n_heads, n_rows] scratch
layout(std430, binding = 7) writeonly buffer Output { float out_values[]; };  // [n_q, n_heads, head_dim]
layout(std430, binding = 8) readonly buffer RouteLogits { float route_logits[]; };  // [n_q], read when has_routes

layout(push_constant) uniform Shape {
  uint n_rows;      // key rows (cache slots)
  uint row_stride;  // values between rows
  uint n_heads, n_kv_heads, head_dim;
  int window, sinks;
  int block_offset;  // -1: a sliding window; else where blocks of `window` start
  uint has_sink_logits;
  float scale;           // logit scale
  uint full_heads_mask;  // bit h: KV head h sees every key
  uint has_routes;
  uint sink_queries;  // 0, or values from each query to its rotation for sinks out of the window
} shape;

shared float partial[64];

#if defined(KV_F32)
float KvAt(uint index, bool value) { return uintBitsToFloat(value ? v_words[index] : k_words[index]); }
#elif defined(KV_BF16)
float KvAt(uint index, bool value) {
  const uint word = value ? v_words[index >> 1] : k_words[index >> 1];
  return uintBitsToFloat((index & 1u) == 0u ? word << 16 : word & 0xffff0000u);
}
#else
#error "attend.comp: define KV_F32 or KV_BF16"
#endif

bool Sees(int qp, int kp, bool full) {
  if (kp < 0 || kp > qp) return false;
  if (full || shape.window == 0 || kp < shape.sinks) return true;
  if (shape.block_offset < 0) return qp - kp < shape.window;
  // GLSL leaves % of a negative number undefined; before the first offset
  // the block starts at 0.
  const int start = qp < shape.block_offset ? 0 : qp - (qp - shape.block_offset) % shape.window;
  return kp >= start;
}

// Reduces partial[] with op 0 (max) or 1 (sum); every invocation gets it.
float Reduce(float mine, bool take_max) {
  const uint t = gl_LocalInvocationID.x;
  barrier();
  partial[t] = mine;
  barrier();
  for (uint half_size = 32u; half_size > 0u; half_size >>= 1) {
    if (t < half_size) partial[t] = take_max ? max(partial[t], partial[t + half_size]) : partial[t] + partial[t + half_size];
    barrier();
  }
  return partial[0];
}

void main() {
  const uint head = gl_WorkGroupID.x, row = gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
  const uint kv_head = head / (shape.n_heads / shape.n_kv_heads);
  const uint q_base = (row * shape.n_heads + head) * shape.head_dim;
  const uint s_base = (row * shape.n_heads + head) * shape.n_rows;
  const int qp = q_pos[row];
  const bool full = (kv_head < 32u && ((shape.full_heads_mask >> kv_head) & 1u) != 0u) ||
                    (shape.has_routes != 0u && route_logits[row] > 0.0);
  const float unseen = -1.0 / 0.0;
  float best = unseen;
  for (uint r = t; r < shape.n_rows; r += 64u) {
    float s = unseen;
    if (Sees(qp, kv_pos[r], full)) {
      const uint k_base = r * shape.row_stride + kv_head * shape.head_dim;
      const int kp = kv_pos[r];
      const bool left_window = kp < shape.sinks && qp - kp >= shape.window;
      const uint qi = shape.sink_queries != 0u && left_window ? q_base + shape.sink_queries : q_base;
      float dot = 0.0;
      for (uint d = 0; d < shape.head_dim; ++d) dot += q[qi + d] * KvAt(k_base + d, false);
      s = shape.scale * dot;
      best = max(best, s);
    }
    scores[s_base + r] = s;
  }
  float top = Reduce(best, true);
  const bool sink = shape.has_sink_logits != 0u;
  if (sink) top = max(top, sink_logits[head]);
  float sum = 0.0;
  for (uint r = t; r < shape.n_rows; r += 64u) {
    const float s = scores[s_base + r];
    const float p = s == unseen ? 0.0 : exp(s - top);
    scores[s_base + r] = p;
    sum += p;
  }
  float total = Reduce(sum, false);
  if (sink) total += exp(sink_logits[head] - top);
  memoryBarrierBuffer();
  barrier();
  // A query that sees no key (nor has a sink) gets zeros, as on the CPU.
  const float inv = total > 0.0 ? 1.0 / total : 0.0;
  for (uint d = t; d < shape.head_dim; d += 64u) {
    float acc = 0.0;
    for (uint r = 0; r < shape.n_rows; ++r) {
      const float p = scores[s_base + r];
      if (p != 0.0) acc += p * KvAt(r * shape.row_stride + kv_head * shape.head_dim + d, true);
    }
    out_values[q_base + d] = acc * inv;
  }
}
