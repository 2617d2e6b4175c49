// Per-head spans (docs/design.md §2, the `per-head` kind): each KV head of a
// layer has its own span. Retrieval heads keep every key (span full);
// streaming heads keep a window and its sinks (DuoAttention, arXiv
// 2410.10819). GQA query heads follow their KV head.
//
// The heads of a layer fall into groups that share one span, and each group
// is one call of the ordinary kernels over its heads only: a window group
// costs O(W + S) per query however long the context, and a per-head layer's
// cache keeps each group in storage of its own (kv/kv_cache.h), so neither
// compute nor memory pays for keys a head does not see.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/attention.h"
#include "attention/backward.h"
#include "attention/span.h"

namespace swan {

struct HeadGroup {
  std::vector<int32_t> kv_heads;  // [n] the layer's KV heads in this group, ascending
  Span span;
  KvView kv;  // [n_rows, n, head_dim]: these heads' keys and values only
};

// The two groups of a per-head layer with n_kv_heads KV heads: the heads in
// `full_heads` (span full), then the others (`window`); an empty group is
// left out. The views are left empty. Throws std::invalid_argument for a
// head index out of range or repeated, or a window span that is full.
std::vector<HeadGroup> SplitHeads(const std::vector<int32_t>& full_heads, int32_t n_kv_heads, const Span& window);

// The query heads that read `kv_heads` (query head h reads KV head h / group).
std::vector<int32_t> QueryHeadsOf(const std::vector<int32_t>& kv_heads, int32_t group);

// dst [n, heads.size(), width] = rows of src [n, n_heads, width] at `heads`.
void GatherHeads(float* dst, const float* src, int64_t n, int32_t n_heads, int64_t width,
                 const std::vector<int32_t>& heads);
// The inverse: dst [n, n_heads, width] at `heads` = src [n, heads.size(), width].
void ScatterHeads(float* dst, const float* src, int64_t n, int32_t n_heads, int64_t width,
                  const std::vector<int32_t>& heads);

// Each group's query heads against its own view under its own span (Attend).
// args: shape (every head), q, q_pos, n_q, scale, sink_logits; args.kv and
// args.span are not read. The groups' KV heads must cover every KV head once.
//   out [n_q, n_heads, head_dim], lse [n_q, n_heads] or null
void AttendHeadGroups(const AttentionArgs& args, const std::vector<HeadGroup>& groups, float* out,
                      float* lse = nullptr);

// The same over one float32 view that holds every KV head (a training
// sequence), with a span per KV head: head_spans [n_kv_heads].
void AttendPerHead(const AttentionArgs& args, const std::vector<Span>& head_spans, float* out, float* lse = nullptr);

// Its gradients (attention/backward.h) from the saved output and lse; the
// groups' dq, dk, dv are written (grads.accumulate is not supported).
void AttendBackwardPerHead(const AttentionArgs& args, const std::vector<Span>& head_spans, const AttentionSaved& saved,
                           const AttentionGrads& grads);

// The float64 reference (AttendReference per KV head, any storage type).
void AttendPerHeadReference(const AttentionArgs& args, const std::vector<Span>& head_spans, float* out,
                            float* lse = nullptr);

}  // namespace swan
