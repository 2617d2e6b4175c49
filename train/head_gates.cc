#include "train/head_gates.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "attention/backward.h"
#include "train/model.h"

namespace swan {

void HeadGatedAttentionForward(float* out, const RoutedBranches& saved, const float* gates, const float* q,
                               const float* k, const float* v, const SequenceAttention& a) {
  const AttentionTimer timer;
  const int64_t H = a.shape.n_heads, D = a.shape.head_dim, row = H * D;
  const int64_t group = H / a.shape.n_kv_heads;
  AttendBranches(saved, q, k, v, a);
  const int64_t N = a.batch * a.seq;
#pragma omp parallel for if (N * row > 65536)
  for (int64_t t = 0; t < N; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const float alpha = gates[h / group];
      const int64_t at = t * row + h * D;
      for (int64_t c = at; c < at + D; ++c) out[c] = alpha * saved.out_full[c] + (1.0f - alpha) * saved.out_window[c];
    }
}

void HeadGatedAttentionBackward(float* dq, float* dk, float* dv, float* d_gates, const float* d_out,
                                const RoutedBranches& saved, const float* gates, const float* q, const float* k,
                                const float* v, const SequenceAttention& a) {
  const AttentionTimer timer;
  const int64_t H = a.shape.n_heads, D = a.shape.head_dim, row = H * D;
  const int64_t KV = a.shape.n_kv_heads, group = H / KV, kv_row = KV * D;
  const int64_t N = a.batch * a.seq;
  std::vector<float> d_full(size_t(N * row));    // [N, H*D] α · d_out
  std::vector<float> d_window(size_t(N * row));  // [N, H*D] (1 − α) · d_out
  for (int64_t g = 0; g < KV; ++g) {
    double dg = 0;
#pragma omp parallel for reduction(+ : dg) if (N * group * D > 65536)
    for (int64_t t = 0; t < N; ++t)
      for (int64_t c = t * row + g * group * D; c < t * row + (g + 1) * group * D; ++c) {
        dg += double(d_out[c]) * (double(saved.out_full[c]) - saved.out_window[c]);
        d_full[size_t(c)] = gates[g] * d_out[c];
        d_window[size_t(c)] = (1.0f - gates[g]) * d_out[c];
      }
    d_gates[g] += float(dg);
  }
  for (int64_t b = 0; b < a.batch; ++b) {
    const int64_t first = b * a.seq;
    AttentionArgs args = SequenceArgs(q, k, v, a, b);
    AttentionGrads grads;
    grads.dq = dq + first * row;
    grads.dk = dk + first * kv_row;
    grads.dv = dv + first * kv_row;
    args.span = Span{};
    AttendBackward(args, {saved.out_full + first * row, saved.lse_full + first * H, &d_full[size_t(first * row)]},
                   grads);
    args.span = a.span;
    grads.accumulate = true;
    AttendBackward(args, {saved.out_window + first * row, saved.lse_window + first * H, &d_window[size_t(first * row)]},
                   grads);
  }
}

double HiddenDistillation(float* d_hidden, const float* hidden, const float* target, const float* weights, int64_t n,
                          int64_t dim) {
  double total_weight = 0;
  for (int64_t t = 0; t < n; ++t) total_weight += weights[t];
  double loss = 0;
  for (int64_t t = 0; t < n; ++t) {
    const double w = total_weight > 0 ? weights[t] / total_weight : 0.0;
    for (int64_t c = t * dim; c < (t + 1) * dim; ++c) {
      const double diff = double(hidden[c]) - target[c];
      loss += w * diff * diff;
      d_hidden[c] = float(2.0 * w * diff);
    }
  }
  return loss;
}

HeadGates TrainHeadGates(TrainModel& model, const std::function<HeadGateSample(uint64_t index)>& samples,
                         const HeadGateOptions& o, const std::function<void(const HeadGateProgress&)>& progress) {
  if (o.steps <= 0 || o.batch <= 0 || !(o.lr > 0) || !(o.l1 >= 0))
    throw std::invalid_argument("head gates: steps, batch and lr must be positive, λ >= 0");
  const int64_t n_gates = int64_t(model.config().n_layers) * model.config().n_kv_heads;
  const int64_t C = model.config().hidden_size;
  HeadGates result;
  std::vector<float>& gates = result.gates;
  gates.assign(size_t(n_gates), 1.0f);    // [L * KV]
  const std::vector<float> ones = gates;  // [L * KV] the full-attention teacher
  result.pressure.assign(size_t(n_gates), 0.0);
  const int64_t pressure_from = o.steps - std::max<int64_t>(1, o.steps / 10);  // the last tenth
  std::vector<double> m(size_t(n_gates), 0.0), v(size_t(n_gates), 0.0);        // Adam moments
  const double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  std::vector<float> target, d_hidden;  // [T, C]
  uint64_t next = 0;
  for (int64_t step = 1; step <= o.steps; ++step) {
    model.set_head_gates(gates);
    model.ZeroGrads();
    double distill = 0;
    for (int64_t s = 0; s < o.batch; ++s) {
      const HeadGateSample sample = samples(next++);
      const int64_t T = int64_t(sample.tokens.size());
      if (T == 0 || int64_t(sample.weights.size()) != T)
        throw std::invalid_argument("head gates: a sample needs one weight per token");
      model.set_head_gates(ones);
      const float* teacher = model.ForwardHidden(sample.tokens.data(), 1, T);
      target.assign(teacher, teacher + T * C);
      model.set_head_gates(gates);
      const float* hidden = model.ForwardHidden(sample.tokens.data(), 1, T);
      d_hidden.resize(size_t(T * C));
      distill += HiddenDistillation(d_hidden.data(), hidden, target.data(), sample.weights.data(), T, C);
      model.BackwardHidden(d_hidden.data());
    }
    // The mean over the batch: scale the summed gradient the same way.
    const std::vector<float>& grad = model.head_gate_grads();
    for (int64_t g = 0; g < n_gates; ++g) {
      const double d_distill = double(grad[size_t(g)]) / double(o.batch);
      if (step > pressure_from) result.pressure[size_t(g)] -= d_distill / double(o.steps - pressure_from);
      const double dg = d_distill + o.l1;
      m[size_t(g)] = beta1 * m[size_t(g)] + (1 - beta1) * dg;
      v[size_t(g)] = beta2 * v[size_t(g)] + (1 - beta2) * dg * dg;
      const double m_hat = m[size_t(g)] / (1 - std::pow(beta1, double(step)));
      const double v_hat = v[size_t(g)] / (1 - std::pow(beta2, double(step)));
      const double updated = gates[size_t(g)] - o.lr * m_hat / (std::sqrt(v_hat) + eps);
      gates[size_t(g)] = float(std::clamp(updated, 0.0, 1.0));
    }
    if (progress) {
      double sum = 0;
      for (const float a : gates) sum += a;
      progress({step, distill / double(o.batch), o.l1 * sum, &gates});
    }
  }
  model.set_head_gates({});
  return result;
}

}  // namespace swan
