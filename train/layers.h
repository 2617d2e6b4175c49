// The operations of a transformer language model, each forward directly
// above its backward (llm.c style), in float32 (the linear layer's products
// optionally in bfloat16).
//
// Signatures: outputs, then what the backward needs saved, then inputs and
// weights, then sizes. The backward mirrors the forward.
//
// Gradient rule, for every function here:
//   * parameter gradients (d_weight, d_table) ACCUMULATE (+=), so gradient
//     accumulation over micro-batches and tied weights need no extra code;
//   * activation gradients (dx, d_gate, ...) are WRITTEN (=), except where a
//     function takes `accumulate_dx`: then they are added, which is how the
//     residual stream and an input read by several layers (the normed input
//     of Q, K and V) collect their gradient.
//
// The residual connections are no function of their own: the forward adds a
// branch into the stream with an accumulating GEMM (y += x · wᵀ), and the
// backward passes the stream's gradient to the branch unchanged and lets
// the branch's input norm add its gradient back into it (accumulate_dx).
#pragma once

#include <cstdint>
#include <vector>
#include <string>

#include "attention/attention.h"
#include "ops/elementwise.h"
#include "ops/rope.h"

namespace swan {

// --- embedding ---------------------------------------------------------------
// out[t] = table[ids[t]]
//   out [n, dim], table [vocab, dim]. Throws std::out_of_range for a bad id.
void EmbeddingForward(float* out, const int32_t* ids, const float* table, int64_t n, int64_t vocab, int64_t dim);
// d_table[ids[t]] += d_out[t]
void EmbeddingBackward(float* d_table, const float* d_out, const int32_t* ids, int64_t n, int64_t dim);

// RMSNorm and SwiGLU, forward and backward: ops/elementwise.h.

// --- linear layer (no bias), through oneDNN ----------------------------------
// y (+)= x · wᵀ     y [n, out], x [n, in], w [out, in]
void LinearForward(float* y, const float* x, const float* w, int64_t n, int64_t in, int64_t out,
                   bool accumulate_y = false);
// dx (=/+=) dy · w,   d_w += dyᵀ · x.  dx may be null (input needs no gradient),
// d_w too (a frozen weight).
void LinearBackward(float* dx, float* d_w, const float* dy, const float* x, const float* w, int64_t n, int64_t in,
                    int64_t out, bool accumulate_dx);

// The same three products in bfloat16 with float32 accumulation and output
// (swan train --matmul bf16). w16 [out, in] is the caller's bf16 copy of
// the float32 master weight; x and dy are rounded to bf16 on each call
// (ops/gemm.h ConvertToBF16). y, dx and d_w stay float32.
void LinearForwardBF16(float* y, const float* x, const uint16_t* w16, int64_t n, int64_t in, int64_t out,
                       bool accumulate_y = false);
void LinearBackwardBF16(float* dx, float* d_w, const float* dy, const float* x, const uint16_t* w16, int64_t n,
                        int64_t in, int64_t out, bool accumulate_dx);

// Precision of the linear layers' products in training (swan train --matmul).
enum class MatmulPrecision { kF32, kBF16 };
const char* MatmulPrecisionName(MatmulPrecision p);  // "f32", "bf16"
// Throws std::invalid_argument for anything but "f32" and "bf16".
MatmulPrecision ParseMatmulPrecision(const std::string& name);

// --- RoPE (or NoPE: a Rope built with enabled = false leaves x alone) ---------
// Rotates x [n, heads, head_dim] in place, token t at pos[t] (ops/rope.h,
// the one rotation inference uses).
void RopeForward(float* x, const Rope& rope, const int32_t* pos, int64_t n, int32_t heads);
// The rotation is orthogonal times a scale, so its transpose is the
// rotation by the negated angle: dx = rotate(d_out, -pos), in place.
void RopeBackward(float* dx, const Rope& rope, const int32_t* pos, int64_t n, int32_t heads);

// --- causal attention over packed sequences -------------------------------------
// q [B*T, heads, head_dim], k, v [B*T, kv_heads, head_dim]: B sequences of
// T tokens, token t of each at position t, each attending within itself
// under `span`.
struct SequenceAttention {
  AttentionShape shape;
  Span span;
  int64_t batch = 0;             // B
  int64_t seq = 0;               // T
  const int32_t* pos = nullptr;  // [T] = 0..T-1
  // A per-head layer's span of each KV head (attention/head_groups.h);
  // empty = `span` for every head.
  std::vector<Span> head_spans;  // [kv_heads] or empty
  float scale = 0.0f;            // logit scale; 0 = 1/sqrt(head_dim)
};
//   out [B*T, heads, head_dim], lse [B*T, heads] (saved)
void AttentionForward(float* out, float* lse, const float* q, const float* k, const float* v,
                      const SequenceAttention& a);
// dq, dk, dv (=), from the saved out and lse (attention/backward.h).
void AttentionBackward(float* dq, float* dk, float* dv, const float* d_out, const float* out, const float* lse,
                       const float* q, const float* k, const float* v, const SequenceAttention& a);

// The kernel arguments of sequence b of the batch (attention/attention.h).
AttentionArgs SequenceArgs(const float* q, const float* k, const float* v, const SequenceAttention& a, int64_t b);

// Seconds spent in attention kernels (AttentionForward, AttentionBackward,
// and the routed layer's in train/routed.h) since the last reset, for a
// run's time breakdown.
double AttentionSeconds();
void ResetAttentionSeconds();
// Adds its lifetime to AttentionSeconds().
class AttentionTimer {
 public:
  AttentionTimer();
  ~AttentionTimer();
  AttentionTimer(const AttentionTimer&) = delete;
  AttentionTimer& operator=(const AttentionTimer&) = delete;

 private:
  int64_t start_ns_;
};

// --- softmax cross-entropy over the vocabulary -----------------------------------
// losses[t] = logsumexp(logits[t]) - logits[t][targets[t]], unweighted; a
// target < 0 is ignored (loss 0). Returns the weighted mean over the
// counted tokens, sum(w_t * losses[t]) / sum(w_t), with w_t = weights[t] or
// 1 when weights is null (0 when no weight is counted).
//   losses [n], logits [n, vocab], targets [n], weights [n] or null
double CrossEntropyForward(float* losses, const float* logits, const int32_t* targets, const float* weights, int64_t n,
                           int64_t vocab);
// d_logits = d_loss * w_t * (softmax(logits) - onehot(target)), written;
// d_logits may alias logits (the usual case: logits are not needed afterwards).
void CrossEntropyBackward(float* d_logits, const float* logits, const int32_t* targets, const float* weights,
                          float d_loss, int64_t n, int64_t vocab);

}  // namespace swan
