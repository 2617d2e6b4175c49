// Switch Attention training (docs/design.md §4): the router, the routed
// attention layer and the router's adaptive regularizer, each forward above
// its backward, with the gradient rule of train/layers.h.
//
// Per routed layer and token t, from the layer's normed attention input
// xn_t (what Q, K and V see):
//   logit_t = w · xn_t + b
//   g_t     = 1[logit_t > 0]                       (hard gate, all heads)
//   o_t     = g_t o_full_t + (1 − g_t) o_window_t  (one dual-output pass)
//   L_t     = γ_t softplus(logit_t),  γ_t = γ_base / (ε + NLL_t + α ‖o_full_t − o_window_t‖²)
// The gate's backward is the straight-through estimator
// (g = 1[σ>0.5] + σ − stopgrad(σ)): dL/dlogit_t = dL/dg_t · σ'(logit_t);
// γ_t is a constant (no gradient).
#pragma once

#include <cstdint>

#include "ops/router.h"
#include "train/layers.h"

namespace swan {

// --- routed attention over packed sequences -------------------------------------
// Both branches of every token, saved for the backward and the regularizer.
// N = B*T tokens, H*D = heads * head_dim.
struct RoutedBranches {
  float* out_full = nullptr;    // [N, H*D] full causal attention
  float* lse_full = nullptr;    // [N, H]
  float* out_window = nullptr;  // [N, H*D] attention under the layer's window span
  float* lse_window = nullptr;  // [N, H]
};
// Both branches of every sequence into `saved`, one AttendDual pass each
// (the full branch and `a.span`).
void AttendBranches(const RoutedBranches& saved, const float* q, const float* k, const float* v,
                    const SequenceAttention& a);
// out [N, H*D] = out_full where RoutesFull(logit), else out_window. `a.span`
// is the window branch; one AttendDual pass per sequence gives both.
//   logit [N]; q, k, v as in AttentionForward.
void RoutedAttentionForward(float* out, const RoutedBranches& saved, const float* logit, const float* q, const float* k,
                            const float* v, const SequenceAttention& a);
// dq, dk, dv (=): the full-span backward of the tokens routed full plus the
// window-span backward of the others, each run over its own tokens only
// (gathered), so the cost follows the full ratio. d_logit [N] (=): the
// straight-through gate gradient (d_out_t · (out_full_t − out_window_t)) σ'(logit_t).
void RoutedAttentionBackward(float* dq, float* dk, float* dv, float* d_logit, const float* d_out,
                             const RoutedBranches& saved, const float* logit, const float* q, const float* k,
                             const float* v, const SequenceAttention& a);

// --- the router's adaptive regularizer ------------------------------------------
struct RouterRegularizer {
  double gamma_base = 1e-3;
  double eps = 0.1;
  double alpha = 100.0;
  bool gamma_constant = false;  // ablation: γ_t = γ_base
};
// gamma[t] = γ_base / (ε + nll[t] + α ‖out_full[t] − out_window[t]‖²), or
// γ_base when constant; 0 for tokens without a target (targets[t] < 0: no
// NLL, so no term). Returns Σ_t gamma[t] softplus(logit[t]).
//   gamma [n] (saved), logit [n], nll [n] (per-token cross-entropy),
//   targets [n], out_full, out_window [n, width]
double RouterRegularizerForward(float* gamma, const float* logit, const float* nll, const int32_t* targets,
                                const float* out_full, const float* out_window, const RouterRegularizer& r, int64_t n,
                                int64_t width);
// d_logit[t] += scale · gamma[t] · σ(logit[t])   (softplus' = σ; γ constant)
void RouterRegularizerBackward(float* d_logit, const float* gamma, const float* logit, float scale, int64_t n);

// The initial router of continual pretraining and of a model from scratch:
// weight 0, bias +2, so every token starts on full attention (σ(2) = 0.88).
//   w [dim], b [1]
void InitRouter(float* w, float* b, int64_t dim);

}  // namespace swan
