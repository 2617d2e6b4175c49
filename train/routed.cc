#include "train/routed.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "attention/backward.h"

namespace swan {
namespace {

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// log(1 + e^x) without overflow for large |x|.
double Softplus(double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x))); }

}  // namespace

// --- router ------------------------------------------------------------------------------

void InitRouter(float* w, float* b, int64_t dim) {
  std::fill(w, w + dim, 0.0f);
  b[0] = 2.0f;
}

// --- routed attention ------------------------------------------------------------------

void AttendBranches(const RoutedBranches& saved, const float* q, const float* k, const float* v,
                    const SequenceAttention& a) {
  const int64_t row = int64_t(a.shape.n_heads) * a.shape.head_dim, H = a.shape.n_heads;
  for (int64_t b = 0; b < a.batch; ++b) {
    const int64_t first = b * a.seq;  // the sequence's first token
    DualOutput d;
    d.out_window = saved.out_window + first * row;
    d.lse_window = saved.lse_window + first * H;
    d.out_full = saved.out_full + first * row;
    d.lse_full = saved.lse_full + first * H;
    AttendDual(SequenceArgs(q, k, v, a, b), d);
  }
}

void RoutedAttentionForward(float* out, const RoutedBranches& saved, const float* logit, const float* q, const float* k,
                            const float* v, const SequenceAttention& a) {
  const AttentionTimer timer;
  const int64_t row = int64_t(a.shape.n_heads) * a.shape.head_dim;
  AttendBranches(saved, q, k, v, a);
  // A selection, not g·o_full + (1 − g)·o_window: exact, and safe when the
  // unused branch holds an empty window's zeros.
  const int64_t N = a.batch * a.seq;
  for (int64_t t = 0; t < N; ++t) {
    const float* src = (RoutesFull(logit[t]) ? saved.out_full : saved.out_window) + t * row;
    std::memcpy(out + t * row, src, size_t(row) * sizeof(float));
  }
}

namespace {

// One branch's backward over the tokens `rows` of sequence b (token indices
// within the sequence, ascending), under `span`: gathers their queries,
// outputs and gradients when they are not the whole sequence, so the kernel
// only visits what those queries see.
struct BranchBackward {
  const SequenceAttention* a;
  const float *q, *k, *v, *d_out;
  float *dq, *dk, *dv;

  // accumulate: add into dk, dv (the other branch already wrote them).
  void Run(int64_t b, const std::vector<int32_t>& rows, Span span, const float* out, const float* lse,
           bool accumulate) const {
    const int64_t T = a->seq, H = a->shape.n_heads;
    const int64_t row = H * a->shape.head_dim, kv_row = int64_t(a->shape.n_kv_heads) * a->shape.head_dim;
    const int64_t first = b * T, n = int64_t(rows.size());
    AttentionArgs args = SequenceArgs(q, k, v, *a, b);
    args.span = span;
    AttentionSaved saved;
    AttentionGrads grads;
    grads.dk = dk + first * kv_row;
    grads.dv = dv + first * kv_row;
    grads.accumulate = accumulate;
    if (n == T) {  // every token of the sequence: no copies
      saved.out = out + first * row;
      saved.lse = lse + first * H;
      saved.d_out = d_out + first * row;
      grads.dq = dq + first * row;
      AttendBackward(args, saved, grads);
      return;
    }
    std::vector<float> q_sel(size_t(n * row));             // [n, H*D]
    std::vector<float> out_sel(size_t(n * row));           // [n, H*D]
    std::vector<float> d_out_sel(size_t(n * row));         // [n, H*D]
    std::vector<float> dq_sel(size_t(n * row));            // [n, H*D]
    std::vector<float> lse_sel(size_t(n * H));             // [n, H]
    std::vector<int32_t> pos_sel(static_cast<size_t>(n));  // [n]
    const size_t row_bytes = size_t(row) * sizeof(float);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = first + rows[size_t(i)];
      std::memcpy(&q_sel[size_t(i * row)], q + t * row, row_bytes);
      std::memcpy(&out_sel[size_t(i * row)], out + t * row, row_bytes);
      std::memcpy(&d_out_sel[size_t(i * row)], d_out + t * row, row_bytes);
      std::memcpy(&lse_sel[size_t(i * H)], lse + t * H, size_t(H) * sizeof(float));
      pos_sel[size_t(i)] = a->pos[rows[size_t(i)]];
    }
    args.q = q_sel.data();
    args.q_pos = pos_sel.data();
    args.n_q = n;
    saved.out = out_sel.data();
    saved.lse = lse_sel.data();
    saved.d_out = d_out_sel.data();
    grads.dq = dq_sel.data();
    AttendBackward(args, saved, grads);
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(dq + (first + rows[size_t(i)]) * row, &dq_sel[size_t(i * row)], row_bytes);
  }
};

}  // namespace

void RoutedAttentionBackward(float* dq, float* dk, float* dv, float* d_logit, const float* d_out,
                             const RoutedBranches& saved, const float* logit, const float* q, const float* k,
                             const float* v, const SequenceAttention& a) {
  const AttentionTimer timer;
  const int64_t row = int64_t(a.shape.n_heads) * a.shape.head_dim, N = a.batch * a.seq;
  // The gate: o = g o_full + (1 − g) o_window, so dL/dg = d_out · (o_full − o_window).
#pragma omp parallel for if (N * row > 65536)
  for (int64_t t = 0; t < N; ++t) {
    double dg = 0;
    for (int64_t c = 0; c < row; ++c)
      dg += double(d_out[t * row + c]) * (double(saved.out_full[t * row + c]) - saved.out_window[t * row + c]);
    const double s = Sigmoid(logit[t]);
    d_logit[t] = float(dg * s * (1.0 - s));
  }
  // d_o_full = g d_out and d_o_window = (1 − g) d_out: with a hard gate each
  // token's gradient goes to one branch, the other's is zero and needs no pass.
  const BranchBackward branch{&a, q, k, v, d_out, dq, dk, dv};
  std::vector<int32_t> full_rows, window_rows;  // [≤ T] token indices within the sequence
  for (int64_t b = 0; b < a.batch; ++b) {
    full_rows.clear();
    window_rows.clear();
    for (int64_t i = 0; i < a.seq; ++i)
      (RoutesFull(logit[b * a.seq + i]) ? full_rows : window_rows).push_back(int32_t(i));
    if (!full_rows.empty()) branch.Run(b, full_rows, Span{}, saved.out_full, saved.lse_full, false);
    if (!window_rows.empty())
      branch.Run(b, window_rows, a.span, saved.out_window, saved.lse_window,
                 /*accumulate=*/!full_rows.empty());
  }
}

// --- regularizer -------------------------------------------------------------------------

double RouterRegularizerForward(float* gamma, const float* logit, const float* nll, const int32_t* targets,
                                const float* out_full, const float* out_window, const RouterRegularizer& r, int64_t n,
                                int64_t width) {
  double total = 0;
#pragma omp parallel for reduction(+ : total) if (n * width > 65536)
  for (int64_t t = 0; t < n; ++t) {
    if (targets[t] < 0) {
      gamma[t] = 0;
      continue;
    }
    double g = r.gamma_base;
    if (!r.gamma_constant) {
      double dist = 0;  // ‖o_full − o_window‖² over the token's whole attention output
      for (int64_t c = 0; c < width; ++c) {
        const double d = double(out_full[t * width + c]) - out_window[t * width + c];
        dist += d * d;
      }
      g = r.gamma_base / (r.eps + double(nll[t]) + r.alpha * dist);
    }
    gamma[t] = float(g);
    total += g * Softplus(logit[t]);
  }
  return total;
}

void RouterRegularizerBackward(float* d_logit, const float* gamma, const float* logit, float scale, int64_t n) {
  for (int64_t t = 0; t < n; ++t) d_logit[t] += float(double(scale) * gamma[t] * Sigmoid(logit[t]));
}

}  // namespace swan
