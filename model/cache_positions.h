// StreamingLLM's position mode ("cache", docs/design.md §2) for a window layer
// with sinks: positions are counted in the cache rather than in the text,
// so the sinks sit directly before the window however long the stream is,
// and a model can run far past its trained length.
//
// In StreamingLLM the cache holds the S sinks at positions 0..S-1 and the
// window's keys after them, and RoPE uses those slot positions. Inside the
// window that changes nothing (RoPE sees only the distance q - k, the same
// in both counts), so window keys stay rotated at their absolute positions.
// A sink j is at distance min(q, S + W - 1) - j from the query instead of
// q - j. So a query attends
//   * to the window (q - k < W) with its usual rotation, and
//   * to the sinks that the window no longer covers (q - j >= W) with its
//     rotation at min(q, S + W - 1),
// and the two parts are merged through their log-sum-exps.
#pragma once

#include "attention/attention.h"
#include "ops/rope.h"

namespace swan {

// args: the layer's attention as in absolute mode (q rotated at q_pos, the
// layer's KV view whose first `span.sinks` rows hold positions 0..S-1, as
// both the ring and the paged layout keep them; span with W > 0 and S > 0).
// q_unrotated: the same queries before RoPE   [n_q, n_heads, head_dim]
// out                                          [n_q, n_heads, head_dim]
void AttendCachePositions(float* out, const AttentionArgs& args, const float* q_unrotated, const Rope& rope);

}  // namespace swan
