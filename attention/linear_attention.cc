#include "attention/linear_attention.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "util/parallel_ranges.h"

namespace swan {
namespace {

double Dot(const float* a, const float* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(a[i]) * b[i];
  return s;
}

// acc [D] += φq · S: the state's part of a query's numerator (float rows, so
// the loop over d vectorizes).   q [P], S [P, D]
void ReadState(float* acc, const float* q, const float* S, int64_t P, int64_t D) {
  for (int64_t p = 0; p < P; ++p) {
    const float qp = q[p];
    const float* row = S + p * D;
    for (int64_t d = 0; d < D; ++d) acc[d] += qp * row[d];
  }
}

// One token joins one KV head's state: S [P, D] += φk ⊗ v, z [P] += φk.
void AddToState(float* S, float* z, const float* k, const float* v, int64_t P, int64_t D) {
  for (int64_t p = 0; p < P; ++p) {
    z[p] += k[p];
    for (int64_t d = 0; d < D; ++d) S[p * D + d] += k[p] * v[d];
  }
}

void Check(const LinearAttentionShape& s) {
  if (s.n_heads <= 0 || s.n_kv_heads <= 0 || s.head_dim <= 0 || s.phi_dim <= 0 || s.n_heads % s.n_kv_heads != 0)
    throw std::invalid_argument("linear attention: bad shape (heads, KV heads, head dim, feature dim)");
}

}  // namespace

void LinearState::Reset(const LinearAttentionShape& shape) {
  Check(shape);
  s.assign(size_t(shape.n_kv_heads) * size_t(shape.phi_dim) * size_t(shape.head_dim), 0.0f);
  z.assign(size_t(shape.n_kv_heads) * size_t(shape.phi_dim), 0.0f);
  tokens = 0;
  folded = 0;
  pending_phi.clear();
  pending_v.clear();
}

void LinearAttend(float* out, float* norm, LinearState& state, const float* phi_q, const float* phi_k, const float* v,
                  int64_t n, const LinearAttentionShape& shape) {
  Check(shape);
  const int64_t H = shape.n_heads, KV = shape.n_kv_heads, D = shape.head_dim, P = shape.phi_dim;
  const int64_t group = H / KV;
  if (int64_t(state.z.size()) != KV * P) throw std::invalid_argument("linear attention: the state has another shape");
  for (int64_t b0 = 0; b0 < n; b0 += kLinearBlock) {
    const int64_t b1 = std::min(n, b0 + kLinearBlock);
    ParallelFor(KV, KV > 1 && (b1 - b0) * P * D > 4096, [&](int64_t g) {
      const float* S = state.s.data() + g * P * D;  // [P, D]
      const float* z = state.z.data() + g * P;      // [P]
      // float rows, so that the loops over d vectorize; the denominator in double.
      std::vector<float> num(static_cast<size_t>(D));  // [D]
      for (int64_t h = g * group; h < (g + 1) * group; ++h)
        for (int64_t i = b0; i < b1; ++i) {
          const float* q = phi_q + (i * H + h) * P;
          // What the state holds, then this block's keys up to i.
          std::fill(num.begin(), num.end(), 0.0f);
          double den = Dot(q, z, P) + kLinearEps;
          float* acc = num.data();
          ReadState(acc, q, S, P, D);
          for (int64_t j = b0; j <= i; ++j) {
            const double a = Dot(q, phi_k + (j * KV + g) * P, P);
            const float af = float(a);
            const float* vj = v + (j * KV + g) * D;
            for (int64_t d = 0; d < D; ++d) acc[d] += af * vj[d];
            den += a;
          }
          float* o = out + (i * H + h) * D;
          const float inv = float(1.0 / den);
          for (int64_t d = 0; d < D; ++d) o[d] = acc[d] * inv;
          if (norm) norm[i * H + h] = float(den);
        }
      // The block joins the state.
      float* Sw = state.s.data() + g * P * D;
      float* zw = state.z.data() + g * P;
      for (int64_t j = b0; j < b1; ++j) AddToState(Sw, zw, phi_k + (j * KV + g) * P, v + (j * KV + g) * D, P, D);
    });
  }
  state.tokens += n;
}

void LinearAttendBackward(float* d_phi_q, float* d_phi_k, float* dv, const float* d_out, const float* out,
                          const float* norm, const float* phi_q, const float* phi_k, const float* v, int64_t n,
                          const LinearAttentionShape& shape) {
  // Linear alone is the hybrid with no window: every key older, no shift.
  LinearWindowBackward(nullptr, nullptr, dv, d_phi_q, d_phi_k, nullptr, d_out, out, norm, nullptr, nullptr, v, phi_q,
                       phi_k, nullptr, n, shape, /*window=*/0);
}

void LinearAttendReference(double* out, const double* phi_q, const double* phi_k, const double* v, int64_t n,
                           const LinearAttentionShape& shape) {
  // Linear alone is the hybrid with no window (q, k and the factors unused).
  LinearWindowReference(out, nullptr, nullptr, v, phi_q, phi_k, nullptr, n, shape, /*window=*/0);
}

namespace {

// Query row qi's logits over its window [lo, i] into s [i − lo + 1], and
// their max m_i (LoLCATs' window weights are γ e^{s_ij − m_i}) with the
// first key that has it.
double WindowLogits(double* s, const float* qi, const float* k, int64_t lo, int64_t i, int64_t KV, int64_t g, int64_t D,
                    double scale, int64_t* argmax) {
  double m = -INFINITY;
  for (int64_t j = lo; j <= i; ++j) {
    s[j - lo] = scale * Dot(qi, k + (j * KV + g) * D, D);
    if (s[j - lo] > m) m = s[j - lo], *argmax = j;
  }
  return m;
}

}  // namespace

void LinearWindowForward(float* out, float* norm, const float* q, const float* k, const float* v, const float* phi_q,
                         const float* phi_k, const float* window_factor, int64_t n, const LinearAttentionShape& shape,
                         int32_t window) {
  Check(shape);
  if (window <= 0) throw std::invalid_argument("linear + window attention needs a window");
  const int64_t H = shape.n_heads, KV = shape.n_kv_heads, D = shape.head_dim, P = shape.phi_dim;
  const int64_t group = H / KV;
  const double scale = 1.0 / std::sqrt(double(D));
  ParallelFor(KV, KV > 1, [&](int64_t g) {
    std::vector<double> num(static_cast<size_t>(D));         // [D]
    std::vector<double> logit(static_cast<size_t>(window));  // [W] the row's window
    for (int64_t h = g * group; h < (g + 1) * group; ++h)
      for (int64_t i = 0; i < n; ++i) {
        const float* qi = q + (i * H + h) * D;
        const int64_t lo = std::max<int64_t>(0, i - window + 1);  // the window's first key
        int64_t top = lo;
        const double m = WindowLogits(logit.data(), qi, k, lo, i, KV, g, D, scale, &top);
        std::fill(num.begin(), num.end(), 0.0);
        double den = kLinearEps;
        for (int64_t j = lo; j <= i; ++j) {
          const double w = window_factor[h] * std::exp(logit[size_t(j - lo)] - m);
          const float* vj = v + (j * KV + g) * D;
          for (int64_t d = 0; d < D; ++d) num[size_t(d)] += w * vj[d];
          den += w;
        }
        const float* pq = phi_q + (i * H + h) * P;
        for (int64_t j = 0; j < lo; ++j) {
          const double a = Dot(pq, phi_k + (j * KV + g) * P, P);
          const float* vj = v + (j * KV + g) * D;
          for (int64_t d = 0; d < D; ++d) num[size_t(d)] += a * vj[d];
          den += a;
        }
        float* o = out + (i * H + h) * D;
        for (int64_t d = 0; d < D; ++d) o[d] = float(num[size_t(d)] / den);
        norm[i * H + h] = float(den);
      }
  });
}

void LinearWindowBackward(float* dq, float* dk, float* dv, float* d_phi_q, float* d_phi_k, float* d_window_factor,
                          const float* d_out, const float* out, const float* norm, const float* q, const float* k,
                          const float* v, const float* phi_q, const float* phi_k, const float* window_factor, int64_t n,
                          const LinearAttentionShape& shape, int32_t window) {
  Check(shape);
  const int64_t H = shape.n_heads, KV = shape.n_kv_heads, D = shape.head_dim, P = shape.phi_dim;
  const int64_t group = H / KV;
  const double scale = 1.0 / std::sqrt(double(D));
  if (dq) std::fill(dq, dq + n * H * D, 0.0f);
  if (dk) std::fill(dk, dk + n * KV * D, 0.0f);
  if (dv) std::fill(dv, dv + n * KV * D, 0.0f);
  std::fill(d_phi_q, d_phi_q + n * H * P, 0.0f);
  std::fill(d_phi_k, d_phi_k + n * KV * P, 0.0f);
  // With a_ij the weight of key j and n_i their sum (o_i = Σ a_ij v_j / n_i):
  //   da_ij = (g_i · v_j − g_i · o_i) / n_i,  dv_j += (a_ij / n_i) g_i;
  //   window: a_ij = γ e^{s_ij − m_i}, ds_ij = da_ij a_ij, and m_i = s_ij* takes
  //     −Σ_win da a (added to ds_ij*); dγ += Σ_win da a / γ;
  //   older:  a_ij = φq_i · φk_j, dφq_i += da φk_j, dφk_j += da φq_i.
#pragma omp parallel for if (KV > 1)
  for (int64_t g = 0; g < KV; ++g) {
    std::vector<double> logit(static_cast<size_t>(std::max(window, 1)));  // [W] the row's window
    for (int64_t h = g * group; h < (g + 1) * group; ++h)
      for (int64_t i = 0; i < n; ++i) {
        const float* qi = window > 0 ? q + (i * H + h) * D : nullptr;  // the window branch only
        const float* gi = d_out + (i * H + h) * D;
        const double go = Dot(gi, out + (i * H + h) * D, D);
        const double inv_n = 1.0 / norm[i * H + h];
        const int64_t lo = std::max<int64_t>(0, i - window + 1);
        int64_t top = lo;
        const double m = window > 0 ? WindowLogits(logit.data(), qi, k, lo, i, KV, g, D, scale, &top) : 0.0;
        double window_sum = 0;  // Σ_win da_ij a_ij
        for (int64_t j = 0; j <= i; ++j) {
          const float* vj = v + (j * KV + g) * D;
          const double da = (Dot(gi, vj, D) - go) * inv_n;
          double a;
          if (j >= lo) {
            const float* kj = k + (j * KV + g) * D;
            a = window_factor[h] * std::exp(logit[size_t(j - lo)] - m);
            window_sum += da * a;
            const double ds = da * a * scale;
            if (dq)
              for (int64_t d = 0; d < D; ++d) dq[(i * H + h) * D + d] += float(ds * kj[d]);
            if (dk)
              for (int64_t d = 0; d < D; ++d) dk[(j * KV + g) * D + d] += float(ds * qi[d]);
          } else {
            const float* pq = phi_q + (i * H + h) * P;
            const float* pk = phi_k + (j * KV + g) * P;
            a = Dot(pq, pk, P);
            for (int64_t p = 0; p < P; ++p) {
              d_phi_q[(i * H + h) * P + p] += float(da * pk[p]);
              d_phi_k[(j * KV + g) * P + p] += float(da * pq[p]);
            }
          }
          if (dv)
            for (int64_t d = 0; d < D; ++d) dv[(j * KV + g) * D + d] += float(a * inv_n * gi[d]);
        }
        if (window <= 0) continue;
        // The shift m_i: the window's largest logit moves every window weight.
        const float* kt = k + (top * KV + g) * D;
        const double ds = -window_sum * scale;
        if (dq)
          for (int64_t d = 0; d < D; ++d) dq[(i * H + h) * D + d] += float(ds * kt[d]);
        if (dk)
          for (int64_t d = 0; d < D; ++d) dk[(top * KV + g) * D + d] += float(ds * qi[d]);
        if (d_window_factor) d_window_factor[h] += float(window_sum / window_factor[h]);
      }
  }
}

void LinearWindowAttend(float* out, const float* window_out, const float* window_lse, const float* window_max,
                        const float* window_factor, LinearState& state, const float* phi_q, const float* phi_k,
                        const float* v, int64_t n, const LinearAttentionShape& shape, int32_t window) {
  Check(shape);
  if (window <= 0) throw std::invalid_argument("linear + window attention needs a window");
  const int64_t H = shape.n_heads, KV = shape.n_kv_heads, D = shape.head_dim, P = shape.phi_dim;
  const int64_t group = H / KV, p0 = state.tokens;
  // The new tokens wait with the others: pending holds [folded, p0 + n).
  state.pending_phi.insert(state.pending_phi.end(), phi_k, phi_k + n * KV * P);
  state.pending_v.insert(state.pending_v.end(), v, v + n * KV * D);
  const float* pk = state.pending_phi.data();
  const float* pv = state.pending_v.data();
  ParallelFor(KV, KV > 1 && n * P * D > 4096, [&](int64_t g) {
    const float* S = state.s.data() + g * P * D;     // [P, D]
    const float* z = state.z.data() + g * P;         // [P]
    std::vector<float> num(static_cast<size_t>(D));  // [D]
    for (int64_t h = g * group; h < (g + 1) * group; ++h)
      for (int64_t t = 0; t < n; ++t) {
        const int64_t i = p0 + t;
        const float* q = phi_q + (t * H + h) * P;
        std::fill(num.begin(), num.end(), 0.0f);
        double den = Dot(q, z, P) + kLinearEps;
        ReadState(num.data(), q, S, P, D);
        for (int64_t j = state.folded; j <= i - window; ++j) {  // older than i's window, not yet in S
          const int64_t r = j - state.folded;
          const double a = Dot(q, pk + (r * KV + g) * P, P);
          const float af = float(a);
          for (int64_t d = 0; d < D; ++d) num[size_t(d)] += af * pv[(r * KV + g) * D + d];
          den += a;
        }
        // The window's weights γ e^{s − m} sum to c = γ e^{lse − m} (in [γ, γW]);
        // their values' mean is window_out: (c window_out + num) / (c + den).
        const double c = window_factor[h] * std::exp(double(window_lse[t * H + h]) - double(window_max[t * H + h]));
        const float* wo = window_out + (t * H + h) * D;
        float* o = out + (t * H + h) * D;
        const double inv = 1.0 / (c + den);
        for (int64_t d = 0; d < D; ++d) o[d] = float((c * wo[d] + num[size_t(d)]) * inv);
      }
  });
  // Tokens no later query sees through its window join S and z.
  const int64_t fold_to = std::max(state.folded, p0 + n - window + 1);
  for (int64_t j = state.folded; j < fold_to; ++j) {
    const int64_t r = j - state.folded;
    for (int64_t g = 0; g < KV; ++g) {
      const float* k = pk + (r * KV + g) * P;
      const float* vj = pv + (r * KV + g) * D;
      AddToState(state.s.data() + g * P * D, state.z.data() + g * P, k, vj, P, D);
    }
  }
  const int64_t moved = fold_to - state.folded;
  state.pending_phi.erase(state.pending_phi.begin(), state.pending_phi.begin() + moved * KV * P);
  state.pending_v.erase(state.pending_v.begin(), state.pending_v.begin() + moved * KV * D);
  state.folded = fold_to;
  state.tokens += n;
}

void LinearWindowReference(double* out, const double* q, const double* k, const double* v, const double* phi_q,
                           const double* phi_k, const double* window_factor, int64_t n,
                           const LinearAttentionShape& shape, int32_t window) {
  Check(shape);
  const int64_t H = shape.n_heads, KV = shape.n_kv_heads, D = shape.head_dim, P = shape.phi_dim;
  for (int64_t h = 0; h < H; ++h) {
    const int64_t g = h / (H / KV);
    for (int64_t i = 0; i < n; ++i) {
      // The window's logits, then their max (two passes).
      std::vector<double> logit(static_cast<size_t>(i + 1));  // [i + 1]
      double m = -INFINITY;
      for (int64_t j = std::max<int64_t>(0, i - window + 1); j <= i; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += q[(i * H + h) * D + d] * k[(j * KV + g) * D + d];
        logit[size_t(j)] = dot / std::sqrt(double(D));
        m = std::max(m, logit[size_t(j)]);
      }
      double den = kLinearEps;
      std::vector<double> num(static_cast<size_t>(D), 0.0);  // [D]
      for (int64_t j = 0; j <= i; ++j) {
        double a = 0;
        if (i - j < window) {  // in the window: γ e^{s − m}, at most γ
          a = window_factor[h] * std::exp(logit[size_t(j)] - m);
        } else {
          for (int64_t p = 0; p < P; ++p) a += phi_q[(i * H + h) * P + p] * phi_k[(j * KV + g) * P + p];
        }
        den += a;
        for (int64_t d = 0; d < D; ++d) num[size_t(d)] += a * v[(j * KV + g) * D + d];
      }
      for (int64_t d = 0; d < D; ++d) out[(i * H + h) * D + d] = num[size_t(d)] / den;
    }
  }
}

}  // namespace swan
