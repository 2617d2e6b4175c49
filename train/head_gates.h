// DuoAttention's head gates (arXiv 2410.10819): which KV heads of a frozen
// model need every key, learned instead of read off attention scores.
//
// Per layer and KV head g, a gate α_g in [0, 1]; query head h of the group:
//   o_h = α_g · o_full_h + (1 − α_g) · o_window_h      (one AttendDual pass)
// where o_window is attention under the layer's window span (W + sinks).
// The objective, with the weights frozen, on the answer queries t of
// synthetic retrieval items (weights w_t):
//   L = Σ_t w_t ‖h_t − h_full_t‖² / Σ_t w_t  +  λ Σ_g α_g
// h: the final normed hidden states under the gated mix; h_full: the same
// under full attention (every α = 1). After each Adam step the gates are
// clamped to [0, 1]; the heads whose gate stays high are the ones the
// window loses something on, and a per-head plan keeps the best share of
// them full (eval/retrieval_heads.h SelectTopHeads).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "train/layers.h"
#include "train/routed.h"

namespace swan {

class TrainModel;

// --- the gated layer: both branches saved (train/routed.h RoutedBranches) ---
//   out [N, H*D]; gates [KV] of this layer; q, k, v as in AttentionForward.
void HeadGatedAttentionForward(float* out, const RoutedBranches& saved, const float* gates, const float* q,
                               const float* k, const float* v, const SequenceAttention& a);
// dq, dk, dv (=): the full branch's backward of α·d_out plus the window
// branch's of (1 − α)·d_out. d_gates [KV] (+=): Σ over tokens and the
// group's query heads of d_out · (o_full − o_window).
void HeadGatedAttentionBackward(float* dq, float* dk, float* dv, float* d_gates, const float* d_out,
                                const RoutedBranches& saved, const float* gates, const float* q, const float* k,
                                const float* v, const SequenceAttention& a);

// The distillation term: returns Σ_t w_t ‖hidden_t − target_t‖² / Σ_t w_t
// and writes its gradient d_hidden [n, dim] (0 when no weight is counted).
//   hidden, target [n, dim], weights [n]
double HiddenDistillation(float* d_hidden, const float* hidden, const float* target, const float* weights, int64_t n,
                          int64_t dim);

// One training sequence: T input tokens and the weight of each position's
// hidden state in the distillation (the queries that predict an answer).
struct HeadGateSample {
  std::vector<int32_t> tokens;  // [T]
  std::vector<float> weights;   // [T]
};

struct HeadGateOptions {
  int64_t steps = 200;
  int64_t batch = 8;  // sequences per step
  double lr = 0.02;   // Adam (β 0.9, 0.999), DuoAttention's rate
  double l1 = 0.05;   // λ
};

struct HeadGateProgress {
  int64_t step = 0;                           // 1-based, of options.steps
  double distill = 0;                         // mean over the step's sequences
  double l1 = 0;                              // λ Σ α
  const std::vector<float>* gates = nullptr;  // [L * KV] after the step
};

struct HeadGates {
  std::vector<float> gates;  // [L * KV] after the last step, in [0, 1]
  // −∂distill/∂α averaged over the last tenth of the steps: how hard the
  // distillation still pulls each gate open. Gates clamped at 1 tie; this
  // orders them (the costlier to close first).
  std::vector<double> pressure;  // [L * KV]
};

// Trains the gates of `model` (its plan gives every layer's window span;
// set_head_gates refuses plans without one) from all ones on
// samples(0), samples(1), ... The model's weights are not changed.
HeadGates TrainHeadGates(TrainModel& model, const std::function<HeadGateSample(uint64_t index)>& samples,
                         const HeadGateOptions& options, const std::function<void(const HeadGateProgress&)>& progress);

}  // namespace swan
