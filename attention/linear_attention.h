// Causal linear attention (Katharopoulos et al. 2020) with a learned feature
// map φ (attention/hedgehog.h). For query head h on KV head g:
//   o_i = Σ_{j≤i} (φq_i · φk_j) v_j  /  (Σ_{j≤i} φq_i · φk_j + ε)
// The keys enter only through two running sums per KV head, the state
//   S = Σ_j φk_j ⊗ v_j   [P, D]      z = Σ_j φk_j   [P]
// so o_i = (φq_i S_i) / (φq_i · z_i): a cache of fixed size at any depth
// (KV · P · (D + 1) floats per layer), and decoding costs O(P · D) per head.
// Within a call, tokens attend to each other by the quadratic (parallel)
// form in blocks of kLinearBlock, the state carrying each block to the next.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace swan {

struct LinearAttentionShape {
  int32_t n_heads = 0;     // H (query heads; GQA: H / KV per KV head)
  int32_t n_kv_heads = 0;  // KV
  int32_t head_dim = 0;    // D
  int32_t phi_dim = 0;     // P = 2F
};

inline constexpr int64_t kLinearBlock = 64;
// Added to every denominator: features can underflow to 0 for extreme
// inputs, and 0 / 0 must not reach the output.
inline constexpr double kLinearEps = 1e-12;

// One layer's state for one sequence.
struct LinearState {
  std::vector<float> s;  // [KV, P, D]
  std::vector<float> z;  // [KV, P]
  int64_t tokens = 0;    // how many tokens it holds
  // LoLCATs' hybrid (LinearWindowAttend): the tokens from `folded` on are
  // still in some query's window; their φk and v wait here, outside S and z.
  int64_t folded = 0;
  std::vector<float> pending_phi;  // [tokens - folded, KV, P]
  std::vector<float> pending_v;    // [tokens - folded, KV, D]

  // Empty, sized for `shape`.
  void Reset(const LinearAttentionShape& shape);
  int64_t bytes() const {
    return int64_t(s.size() + z.size() + pending_phi.size() + pending_v.size()) * int64_t(sizeof(float));
  }
};

// n new tokens after those the state holds: out [n, H, D], norm [n, H] (the
// denominators φq_i · z_i + ε; null when not needed); the state then holds the
// n tokens too.   phi_q [n, H, P], phi_k [n, KV, P], v [n, KV, D]
void LinearAttend(float* out, float* norm, LinearState& state, const float* phi_q, const float* phi_k, const float* v,
                  int64_t n, const LinearAttentionShape& shape);

// The backward of LinearAttend over one whole sequence from an empty state
// (training), from its out and norm: d_phi_q [n, H, P], d_phi_k [n, KV, P],
// dv [n, KV, D], all written.
void LinearAttendBackward(float* d_phi_q, float* d_phi_k, float* dv, const float* d_out, const float* out,
                          const float* norm, const float* phi_q, const float* phi_k, const float* v, int64_t n,
                          const LinearAttentionShape& shape);

// The plain float64 reference: the quadratic masked form over one sequence.
//   out [n, H, D]
void LinearAttendReference(double* out, const double* phi_q, const double* phi_k, const double* v, int64_t n,
                           const LinearAttentionShape& shape);

// --- LoLCATs' hybrid: a softmax window on the newest keys, linear beyond ---
// For query i on head h, the keys in its window (i − W < j <= i) weigh
// γ_h e^{s_ij − m_i}, s_ij = q_i · k_j / sqrt(D), m_i = max_win s_ij, the
// older ones φq_i · φk_j, under one normalization:
//   o_i = (Σ_win γ e^{s−m} v_j + Σ_old (φq_i · φk_j) v_j) / (Σ_win γ e^{s−m} + Σ_old φq_i · φk_j + ε)
// Each window weight is at most γ_h and each older one at most 2 (Hedgehog's
// features are two softmaxes), so neither side drowns the other whatever the
// logits' scale; γ_h = σ(θ_h) is learned per query head (LoLCATs'
// window_factors: a layer's self_attn.window_factor holds θ [H]).
//   window_factor [H]: γ, in (0, 1)

// Over one sequence from position 0 (training): out [n, H, D]; saved norm
// [n, H] (the denominators).
//   q [n, H, D], k, v [n, KV, D], phi_q [n, H, P], phi_k [n, KV, P]
void LinearWindowForward(float* out, float* norm, const float* q, const float* k, const float* v, const float* phi_q,
                         const float* phi_k, const float* window_factor, int64_t n, const LinearAttentionShape& shape,
                         int32_t window);
// Its backward: dq, dk, dv (=, the softmax part and the values; each may be
// null when not needed), d_phi_q, d_phi_k (=), d_window_factor [H] (+=, dγ;
// may be null). Window 0 (q, k, window_factor unused) is
// LinearAttendBackward's: linear attention alone.
void LinearWindowBackward(float* dq, float* dk, float* dv, float* d_phi_q, float* d_phi_k, float* d_window_factor,
                          const float* d_out, const float* out, const float* norm, const float* q, const float* k,
                          const float* v, const float* phi_q, const float* phi_k, const float* window_factor, int64_t n,
                          const LinearAttentionShape& shape, int32_t window);
// The same in inference, n new tokens after those the state holds: the
// window's softmax part comes from the attention kernel over a window
// cache (window_out [n, H, D], window_lse [n, H]: its log-sum-exp,
// window_max [n, H]: its largest logit), the older keys from the state and
// the pending tokens, which then move into S and z as they leave every later
// query's window (at most W - 1 + n pending).
//   out [n, H, D]; phi_q [n, H, P], phi_k [n, KV, P], v [n, KV, D]
void LinearWindowAttend(float* out, const float* window_out, const float* window_lse, const float* window_max,
                        const float* window_factor, LinearState& state, const float* phi_q, const float* phi_k,
                        const float* v, int64_t n, const LinearAttentionShape& shape, int32_t window);

// The plain float64 reference of the same, over one sequence.
void LinearWindowReference(double* out, const double* q, const double* k, const double* v, const double* phi_q,
                           const double* phi_k, const double* window_factor, int64_t n,
                           const LinearAttentionShape& shape, int32_t window);

// γ = σ(θ), and LoLCATs' initial θ (γ = 0.1).
inline float WindowFactor(float theta) { return 1.0f / (1.0f + std::exp(-theta)); }
inline constexpr float kInitialWindowFactorLogit = -2.1972246f;  // log(0.1 / 0.9)

}  // namespace swan
