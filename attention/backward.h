// Gradients of attention (FlashAttention-2 style backward, span-aware).
//
// Given the forward's inputs, its output `out` and log-sum-exp `lse`
// (both from Attend or AttendDual), and d_out = dLoss/d_out:
//   P_ij  = exp(scale q_i.k_j - lse_i)       (recomputed, never stored)
//   D_i   = sum_c d_out_ic out_ic
//   dV_j += sum_i P_ij d_out_i
//   dS_ij = P_ij (d_out_i.v_j - D_i)
//   dQ_i  = scale sum_j dS_ij k_j,   dK_j = scale sum_i dS_ij q_i
//   d_sink_h = -sum_i exp(sink_h - lse_ih) D_ih   (a learned sink has no value)
// Like the forward, it visits only the key blocks inside the span, so a
// window layer's backward costs O(N (W + S)).
//
// Gradient rule (as in llm.c): activation gradients (dq, dk, dv) are
// written, unless `accumulate` is set (a routed layer adds the gradients of
// its two branches); parameter gradients (d_sink_logits) always accumulate.
// K and V must be float32 (training keeps them so).
#pragma once

#include "attention/attention.h"

namespace swan {

struct AttentionGrads {
  float* dq = nullptr;             // [n_q, n_heads, head_dim]
  float* dk = nullptr;             // [n_rows, n_kv_heads, head_dim]
  float* dv = nullptr;             // [n_rows, n_kv_heads, head_dim]
  float* d_sink_logits = nullptr;  // [n_heads], += ; may be null
  bool accumulate = false;         // add into dq, dk, dv instead of writing
};

struct AttentionSaved {
  const float* out = nullptr;    // [n_q, n_heads, head_dim] forward output
  const float* lse = nullptr;    // [n_q, n_heads] forward log-sum-exp
  const float* d_out = nullptr;  // [n_q, n_heads, head_dim] gradient of the output
};

// Fast kernel (Highway, OpenMP): one pass over key blocks for dK, dV and one
// over query tiles for dQ, each recomputing P for the visible blocks only.
void AttendBackward(const AttentionArgs& args, const AttentionSaved& saved, const AttentionGrads& grads);

// Plain float64 loops over an explicit mask; tests compare with it.
void AttendBackwardReference(const AttentionArgs& args, const AttentionSaved& saved, const AttentionGrads& grads);

}  // namespace swan
