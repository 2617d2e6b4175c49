// Attention over a KV view: the kernels' shared interface.
//
// Layouts (row-major, token-major as a QKV projection produces them):
//   q     [n_q, n_heads, head_dim]          float32
//   k, v  [n_rows, n_kv_heads, head_dim]    float32, bfloat16 or q8_0, rows
//                                           `row_stride` values apart
//   out   [n_q, n_heads, head_dim]          float32
//   lse   [n_q, n_heads]                    float32, natural log
// Query head h reads KV head h / (n_heads / n_kv_heads) (GQA).
//
// Every query and key row carries its absolute position, so the same call
// serves a contiguous prefill (key row j at position j), a chunk of new
// queries over a ring cache that also holds their own keys, and decode (one
// query, or a few for speculative decoding). A key row with a negative
// position is an empty slot and is never attended.
#pragma once

#include <cstdint>

#include "attention/span.h"

namespace swan {

// Element types of KV caches: f32, bf16 and q8_0 (llama.cpp's block of 32
// int8 values and an f16 scale in 34 bytes, 1.9x smaller than bf16; needs
// head_dim a multiple of 32). f16 is for weights: no KV cache stores it.
enum class KvType : uint8_t { kF32, kBF16, kF16, kQ8_0 };

// Bytes of `n` values of `type` that start at a value index that is a
// multiple of 32 (any index for the other types): value index i of a q8_0
// view lies KvBytes(kQ8_0, i) bytes in, in the block i / 32.
inline int64_t KvBytes(KvType type, int64_t n) {
  switch (type) {
    case KvType::kF32: return n * 4;
    case KvType::kBF16:
    case KvType::kF16: return n * 2;
    case KvType::kQ8_0: return n / 32 * 34;
  }
  return 0;
}

struct KvView {
  const void* k = nullptr;       // [n_rows, n_kv_heads, head_dim] of `type`
  const void* v = nullptr;       // [n_rows, n_kv_heads, head_dim] of `type`
  const int32_t* pos = nullptr;  // [n_rows] position of each row, < 0 = empty
  int64_t n_rows = 0;
  int64_t row_stride = 0;  // values between rows; 0 = n_kv_heads * head_dim
  KvType type = KvType::kF32;
};

struct AttentionShape {
  int32_t n_heads = 0;     // query heads
  int32_t n_kv_heads = 0;  // key/value heads; divides n_heads
  int32_t head_dim = 0;
};

struct AttentionArgs {
  AttentionShape shape;
  const float* q = nullptr;        // [n_q, n_heads, head_dim]
  const int32_t* q_pos = nullptr;  // [n_q] absolute positions
  int64_t n_q = 0;
  KvView kv;
  Span span;
  // Learned sink logits (gpt-oss), one per query head: each adds e^{s_h} to
  // the softmax denominator with no value vector. nullptr = none.
  const float* sink_logits = nullptr;  // [n_heads]
  float scale = 0.0f;                  // logit scale; 0 = 1/sqrt(head_dim)
};

// Throws std::invalid_argument with a message on inconsistent arguments:
// null pointers, non-positive sizes, n_heads not divisible by n_kv_heads, a
// row stride smaller than a row, an invalid span, a q8_0 view whose heads
// or rows do not start on a block of 32 values.
void ValidateAttention(const AttentionArgs& args);

// out = softmax(scale * q k^T restricted to args.span) v, per query head.
// `lse` (may be null) receives log(sum over visible keys of e^{logit}
// + e^{sink logit}); a query that sees nothing gets out = 0 and lse = -inf
// (or the sink logit when learned sinks are on). `max_logit` (may be null)
// receives the largest visible logit (the sink's not counted; -inf when none).
// Fast blocked online-softmax kernel (Highway, OpenMP): it visits only the
// key blocks that intersect the span.
void Attend(const AttentionArgs& args, float* out, float* lse = nullptr, float* max_logit = nullptr);

// Both results of a routed/trained layer from one pass over the keys:
// the window output under args.span and the full causal output (window 0,
// learned sinks in both). The window result is a partial state of the full
// online softmax, so the keys inside the span are read once.
struct DualOutput {
  float* out_window = nullptr;  // [n_q, n_heads, head_dim]
  float* lse_window = nullptr;  // [n_q, n_heads] or null
  float* out_full = nullptr;    // [n_q, n_heads, head_dim]
  float* lse_full = nullptr;    // [n_q, n_heads] or null
  float* max_window = nullptr;  // [n_q, n_heads] or null: the largest logit in the span
};
void AttendDual(const AttentionArgs& args, const DualOutput& out);

// The plain reference: float64 accumulation over an explicit visibility
// mask built with Sees(), two passes (max, then sum). Slow on purpose;
// tests compare every fast path with it.
void AttendReference(const AttentionArgs& args, float* out, float* lse = nullptr, float* max_logit = nullptr);

}  // namespace swan
