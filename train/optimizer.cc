#include "train/optimizer.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace swan {

double LearningRate(const ScheduleOptions& o, int64_t step) {
  if (step < o.warmup_steps) return o.lr * double(step + 1) / double(o.warmup_steps);
  const double min_lr = o.lr * o.min_lr_ratio;
  if (step >= o.total_steps) return min_lr;
  const double span = double(std::max<int64_t>(1, o.total_steps - o.warmup_steps));
  const double progress = double(step - o.warmup_steps) / span;
  return min_lr + 0.5 * (o.lr - min_lr) * (1.0 + std::cos(M_PI * progress));
}

AdamW::AdamW(const AdamWOptions& options, int64_t num_params)
    : options_(options), m_(size_t(num_params), 0.0f), v_(size_t(num_params), 0.0f) {}

double AdamW::GradNorm(const std::vector<float>& grads) {
  double sum = 0;
  const int64_t n = int64_t(grads.size());
#pragma omp parallel for reduction(+ : sum) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) sum += double(grads[size_t(i)]) * grads[size_t(i)];
  return std::sqrt(sum);
}

bool IsRouterTensor(const ParamTensor& t) { return IsRouterRole(t.role); }

double AdamW::Step(TrainModel& model, double base_lr, double router_lr) {
  std::vector<float>& params = model.params();
  std::vector<float>& grads = model.grads();
  if (params.size() != m_.size()) throw std::logic_error("AdamW: parameter count changed");
  const double norm = GradNorm(grads);
  const double clip = options_.clip_norm > 0 && norm > options_.clip_norm ? options_.clip_norm / norm : 1.0;
  ++t_;
  const double b1 = options_.beta1, b2 = options_.beta2;
  const double c1 = 1.0 - std::pow(b1, double(t_)), c2 = 1.0 - std::pow(b2, double(t_));
  for (const ParamTensor& t : model.tensors()) {
    if (t.frozen) continue;
    const double lr = IsRouterTensor(t) ? router_lr : base_lr;
    const float decay = t.decay ? float(lr * options_.weight_decay) : 0.0f;
#pragma omp parallel for if (t.numel > 65536)
    for (int64_t i = t.offset; i < t.offset + t.numel; ++i) {
      const float g = float(grads[size_t(i)] * clip);
      float& m = m_[size_t(i)];
      float& v = v_[size_t(i)];
      m = float(b1 * m + (1 - b1) * g);
      v = float(b2 * v + (1 - b2) * double(g) * g);
      const double update = (m / c1) / (std::sqrt(v / c2) + options_.eps);
      float& p = params[size_t(i)];
      p = float(p - lr * update - decay * p);
    }
  }
  return norm;
}

}  // namespace swan
