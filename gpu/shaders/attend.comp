#version 450
// attention/attention.h's Attend, first half, blocked: each workgroup takes
// one KV head, a tile of up to QT query rows and one split of SPLIT key rows
// (split over keys, so that a long cache keeps the GPU busy). The tile's
// rows and the query heads that share the KV head (GQA) are scored as
// (row, head) pairs, up to PAIRS of them per pass over the split, so a
// prefill reads each key and value row once for many queries. It writes
// each pair's partial: the values weighted by exp(logit - m), then m (the
// split's largest logit) and the sum of its exponentials; attend_merge.comp
// combines the splits as an online softmax does.
// Keys are chosen by position with swan's one window rule
// (attention/span.h): a query at q sees a key at k iff 0 <= k <= q and
// (window == 0 or k >= the window's start or k < sinks), the start being
// q - window + 1 for a sliding window and the start of q's block for a
// block window; a row of position < 0 is an empty slot.
// A query sees every key despite the window when its row's route logit is
// above 0 (a routed layer: Switch Attention's router says full iff
// w·xn + b > 0). The rows may hold some KV heads only (a per-head layer's
// store of its full heads or of its window heads, stored_heads.glsl):
// workgroup x takes the store's x-th head.
// StreamingLLM positions (pos:cache, model/cache_positions.h): a sink that
// has left the sliding window is scored with the query rotated to
// min(q, sinks + window - 1) instead, read sink_queries values further on
// in q; one softmax over both parts is the CPU's merge of the two.
//   KV_F32: k, v float32; KV_BF16: bfloat16 pairs in 32-bit words

#define QT 4              // query rows per workgroup
#define PAIRS 8           // (query row, head) pairs scored per pass over a split's keys
#define SPLIT 128         // key rows per workgroup
#define MAX_DIM 256       // largest head_dim (RecordAttend refuses more)
#define QUERY_FLOATS 2048 // shared floats for a pass's queries: PAIRS of head_dim 256, fewer with sink rotations
// Shared memory: 12.3 KiB, under the 16 KiB every Vulkan device has.

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Queries { float q[]; };  // [q_rows, n_heads, head_dim] (x2 with sink_queries)
layout(std430, binding = 1) readonly buffer Keys { uint k_words[]; };     // [n_rows, row_stride] of KV type: [n_stored, head_dim] a row
layout(std430, binding = 2) readonly buffer Values { uint v_words[]; };   // [n_rows, row_stride] of KV type
layout(std430, binding = 3) readonly buffer KeyPositions { int kv_pos[]; };  // [n_rows]
layout(std430, binding = 4) readonly buffer QueryPositions { int q_pos[]; };  // [q_rows]
layout(std430, binding = 5) writeonly buffer Partials { float partials[]; };  // [n_q, n_heads, n_splits, head_dim + 2]
layout(std430, binding = 6) readonly buffer RouteLogits { float route_logits[]; };  // [q_rows], read when has_routes

layout(push_constant) uniform Shape {
  uint n_rows;      // key rows (cache slots)
  uint row_stride;  // values between rows
  uint n_heads, n_kv_heads, head_dim;
  int window, sinks;
  int block_offset;  // -1: a sliding window; else where blocks of `window` start
  float scale;       // logit scale
  uint stored_heads;  // the KV heads the rows hold, bit h for head h; 0: every head
  uint has_routes;
  uint sink_queries;  // 0, or values from each query to its rotation for sinks out of the window
  uint n_splits;      // ceil(n_rows / SPLIT)
  uint first_q;       // the first of the n_q query rows in q, q_pos and route_logits
  uint n_q;           // query rows of the call
} shape;

shared float queries[QUERY_FLOATS];  // [pairs, 1 or 2, head_dim]: a pass's queries, and their rotation for sinks
shared float weights[PAIRS * SPLIT];  // [PAIRS, SPLIT]: logits, then exp(logit - m)
shared float partial[64];

#include "stored_heads.glsl"

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

// Reduces partial[] to its max or sum; every invocation gets it.
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

// Pair p of a tile is its row p / group and the KV head's query head
// p % group: their index in [n_q, n_heads], rows numbered from the call's
// first query (as the partials are).
uint PairHead(uint p, uint first_row, uint kv_head, uint group) {
  return (first_row + p / group) * shape.n_heads + kv_head * group + p % group;
}

void main() {
  const uint stored = gl_WorkGroupID.x, split = gl_WorkGroupID.y, first_row = gl_WorkGroupID.z * QT;
  const uint kv_head = StoredHead(shape.stored_heads, stored);
  const uint t = gl_LocalInvocationID.x, hd = shape.head_dim;
  const uint group = shape.n_heads / shape.n_kv_heads;
  const uint first = split * SPLIT, count = min(uint(SPLIT), shape.n_rows - first);
  const uint slots = shape.sink_queries != 0u ? 2u : 1u;  // queries kept per pair
  const uint pass_pairs = min(uint(PAIRS), QUERY_FLOATS / (slots * hd));
  const uint n_pairs = min(uint(QT), shape.n_q - first_row) * group;
  const float unseen = -1.0 / 0.0;
  for (uint p0 = 0u; p0 < n_pairs; p0 += pass_pairs) {
    const uint pn = min(pass_pairs, n_pairs - p0);
    barrier();  // the last pass is done with the shared arrays
    for (uint i = t; i < pn * hd; i += 64u) {
      const uint j = i / hd, d = i % hd, p = p0 + j;
      const uint at = (shape.first_q * shape.n_heads + PairHead(p, first_row, kv_head, group)) * hd + d;
      queries[(slots * j) * hd + d] = q[at];
      if (slots == 2u) queries[(2u * j + 1u) * hd + d] = q[shape.sink_queries + at];
    }
    // Each pair's query position, whether its row sees every key (routed), and its row's queries in shared memory.
    int qp[PAIRS];
    bool full[PAIRS];
    for (uint j = 0u; j < PAIRS; ++j) {
      const uint q_row = shape.first_q + first_row + min(p0 + j, n_pairs - 1u) / group;
      qp[j] = q_pos[q_row];
      full[j] = shape.has_routes != 0u && route_logits[q_row] > 0.0;
    }
    barrier();
    // Logits: an invocation per key row, each row read once for the pass's pairs.
    for (uint r = t; r < SPLIT; r += 64u) {
      float dots[PAIRS];
      uint query_at[PAIRS];  // where pair j's query for this key is in queries[]
      bool seen[PAIRS];
      bool any = false;
      const int kp = r < count ? kv_pos[first + r] : -1;
      for (uint j = 0u; j < PAIRS; ++j) {
        const bool left_window = slots == 2u && kp < shape.sinks && qp[j] - kp >= shape.window;
        seen[j] = j < pn && Sees(qp[j], kp, full[j]);
        dots[j] = 0.0;
        query_at[j] = (slots * j + (left_window ? 1u : 0u)) * hd;
        any = any || seen[j];
      }
      if (any) {  // a key some pair sees is a stored row, so every pair's dot with it is finite
        const uint k_base = (first + r) * shape.row_stride + stored * hd;
        for (uint d = 0u; d < hd; ++d) {
          const float key = KvAt(k_base + d, false);
          for (uint j = 0u; j < pn; ++j) dots[j] += queries[query_at[j] + d] * key;
        }
      }
      for (uint j = 0u; j < PAIRS; ++j) dots[j] = seen[j] ? dots[j] * shape.scale : unseen;
      for (uint j = 0u; j < pn; ++j) weights[j * SPLIT + r] = dots[j];
    }
    // Per pair: the split's largest logit, the exponentials and their sum.
    for (uint j = 0u; j < pn; ++j) {
      float best = unseen;
      for (uint r = t; r < SPLIT; r += 64u) best = max(best, weights[j * SPLIT + r]);
      const float m = Reduce(best, true);
      float sum = 0.0;
      for (uint r = t; r < SPLIT; r += 64u) {
        const float s = weights[j * SPLIT + r];
        const float e = s == unseen ? 0.0 : exp(s - m);
        weights[j * SPLIT + r] = e;
        sum += e;
      }
      const float total = Reduce(sum, false);
      const uint at = (PairHead(p0 + j, first_row, kv_head, group) * shape.n_splits + split) * (hd + 2u);
      if (t == 0u) {
        partials[at + hd] = m;
        partials[at + hd + 1u] = total;
      }
    }
    barrier();
    // The weighted values: an invocation per dimension, each value read once for the pass's pairs.
    for (uint d = t; d < hd; d += 64u) {
      float acc[PAIRS];
      for (uint j = 0u; j < PAIRS; ++j) acc[j] = 0.0;
      for (uint r = 0u; r < count; ++r) {
        const float value = KvAt((first + r) * shape.row_stride + stored * hd + d, true);
        for (uint j = 0u; j < pn; ++j) {
          const float w = weights[j * SPLIT + r];
          if (w != 0.0) acc[j] += w * value;  // an empty slot's value may be anything, NaN too
        }
      }
      for (uint j = 0u; j < pn; ++j)
        partials[(PairHead(p0 + j, first_row, kv_head, group) * shape.n_splits + split) * (hd + 2u) + d] = acc[j];
    }
  }
}
