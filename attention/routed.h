// Token-level routed attention (Switch Attention, docs/design.md §4), inference
// side: each query is routed either to full causal attention or to the
// window span, over one shared KV view. The queries are split into two index
// lists and each list runs through the kernel with its own span, so the cost
// is that of the full list under full attention plus the window list under
// the window: r·full + (1 − r)·window for a full ratio r.
#pragma once

#include <cstdint>

#include "attention/attention.h"

namespace swan {

// route_full [n_q]: nonzero = query i attends to every earlier key,
// zero = query i attends under args.span. Learned sink logits apply to
// both. out [n_q, n_heads, head_dim], lse [n_q, n_heads] (may be null).
void AttendRouted(const AttentionArgs& args, const uint8_t* route_full, float* out, float* lse = nullptr);

}  // namespace swan
