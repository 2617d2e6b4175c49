// AdamW with decoupled weight decay, a warmup + cosine learning-rate
// schedule and global gradient-norm clipping, over a TrainModel's flat
// float32 parameter buffer. Switch Attention routers may have their own
// learning rate: AdamW moves a parameter by about lr per step, so a new
// router's bias of +2 needs ~2/lr steps to reach 0 at the model's rate.
#pragma once

#include <cstdint>
#include <vector>

#include "train/model.h"

namespace swan {

struct ScheduleOptions {
  double lr = 3e-3;           // peak learning rate
  double min_lr_ratio = 0.1;  // the cosine ends at lr * min_lr_ratio
  int64_t warmup_steps = 100;
  int64_t total_steps = 1000;
};

// Linear warmup from lr/warmup to lr over warmup_steps, then cosine decay to
// lr * min_lr_ratio at total_steps (and flat after). `step` is 0-based.
double LearningRate(const ScheduleOptions& o, int64_t step);

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;  // decoupled; only tensors with ParamTensor::decay
  double clip_norm = 1.0;     // global gradient L2 norm limit; 0 = no clipping
};

// A Switch Attention router's tensor: model.layers.N.self_attn.router.{weight,bias}.
bool IsRouterTensor(const ParamTensor& t);

class AdamW {
 public:
  AdamW(const AdamWOptions& options, int64_t num_params);

  // The L2 norm of all gradients (before clipping).
  static double GradNorm(const std::vector<float>& grads);

  // One update of model.params() from model.grads() at learning rate lr;
  // router tensors (IsRouterTensor) at router_lr, the others at lr.
  // Returns the gradient norm before clipping.
  double Step(TrainModel& model, double lr, double router_lr);
  double Step(TrainModel& model, double lr) { return Step(model, lr, lr); }

  int64_t steps() const { return t_; }
  std::vector<float>& m() { return m_; }  // [num_params] first moment
  std::vector<float>& v() { return v_; }  // [num_params] second moment
  void set_steps(int64_t t) { t_ = t; }

 private:
  AdamWOptions options_;
  std::vector<float> m_, v_;
  int64_t t_ = 0;
};

}  // namespace swan
