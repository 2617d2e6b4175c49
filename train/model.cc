#include "train/model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>

#include "ops/elementwise.h"
#include "ops/gemm.h"
#include "attention/hedgehog.h"
#include "attention/linear_attention.h"
#include "train/head_gates.h"
#include "train/layers.h"

namespace swan {
namespace {

float* At(std::vector<float>& v, int64_t offset) { return v.data() + offset; }

bool AllFinite(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

}  // namespace

void ModelShape::Validate() const {
  auto positive = [](const char* name, int64_t v) {
    if (v <= 0) throw std::invalid_argument(std::string("model shape: ") + name + " must be positive");
  };
  positive("vocab", vocab);
  positive("hidden", hidden);
  positive("intermediate", intermediate);
  positive("n_layers", n_layers);
  positive("n_heads", n_heads);
  positive("n_kv_heads", n_kv_heads);
  positive("head_dim", head_dim);
  if (n_heads % n_kv_heads != 0)
    throw std::invalid_argument("model shape: n_heads must be a multiple of n_kv_heads");
  if (head_dim % 2 != 0) throw std::invalid_argument("model shape: head_dim must be even for RoPE");
}

ModelShape PresetShape(const std::string& name, int64_t vocab, int64_t context) {
  ModelShape s;
  s.vocab = vocab;
  s.max_position = context;
  s.rope.base = 10000.0;
  if (name == "tiny") {  // tests: ~vocab*16 + 10K parameters
    s.hidden = 16;
    s.intermediate = 32;
    s.n_layers = 2;
    s.n_heads = 2;
    s.n_kv_heads = 1;
    s.head_dim = 8;
  } else if (name == "mini") {  // quick experiments: 4 layers, dim 128
    s.hidden = 128;
    s.intermediate = 352;
    s.n_layers = 4;
    s.n_heads = 4;
    s.n_kv_heads = 2;
    s.head_dim = 32;
  } else if (name == "small") {  // the default model: ~7M parameters at vocab 4096
    s.hidden = 256;
    s.intermediate = 704;
    s.n_layers = 8;
    s.n_heads = 8;
    s.n_kv_heads = 4;
    s.head_dim = 32;
  } else {
    throw std::invalid_argument("unknown model preset '" + name + "' (tiny, mini, small)");
  }
  return s;
}

TrainModel::TrainModel(const ModelShape& shape, const AttentionPlan& plan)
    : shape_(shape), plan_(plan) {
  shape_.Validate();
  if (int32_t(plan.layers.size()) != shape.n_layers)
    throw std::invalid_argument("attention plan has " + std::to_string(plan.layers.size()) +
                                " layers, the model " + std::to_string(shape.n_layers));
  for (const LayerPlan& l : plan_.layers) {
    ropes_.emplace_back(l.rope, shape.head_dim);
    routed_index_.push_back(l.kind == LayerKind::kRouted ? n_routed_++ : -1);
    linear_index_.push_back(l.kind == LayerKind::kLinear ? n_linear_++ : -1);
  }
  routing_.full_tokens.assign(size_t(shape.n_layers), 0);
  Layout();
}

void TrainModel::Layout() {
  const int64_t C = shape_.hidden, F = shape_.intermediate, V = shape_.vocab;
  int64_t offset = 0;
  auto add = [&](const std::string& name, std::vector<int64_t> dims) {
    ParamTensor t;
    t.name = name;
    t.numel = 1;
    for (int64_t d : dims) t.numel *= d;
    t.shape = std::move(dims);
    t.offset = offset;
    t.decay = t.shape.size() >= 2;
    offset += t.numel;
    tensors_.push_back(std::move(t));
  };
  add("model.embed_tokens.weight", {V, C});
  for (int32_t l = 0; l < shape_.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    layer_first_.push_back(tensors_.size());
    add(p + "input_layernorm.weight", {C});
    add(p + "self_attn.q_proj.weight", {shape_.q_dim(), C});
    add(p + "self_attn.k_proj.weight", {shape_.kv_dim(), C});
    add(p + "self_attn.v_proj.weight", {shape_.kv_dim(), C});
    add(p + "self_attn.o_proj.weight", {C, shape_.q_dim()});
    add(p + "post_attention_layernorm.weight", {C});
    add(p + "mlp.gate_proj.weight", {F, C});
    add(p + "mlp.up_proj.weight", {F, C});
    add(p + "mlp.down_proj.weight", {C, F});
    if (shape_.qkv_bias) {
      add(p + "self_attn.q_proj.bias", {shape_.q_dim()});
      add(p + "self_attn.k_proj.bias", {shape_.kv_dim()});
      add(p + "self_attn.v_proj.bias", {shape_.kv_dim()});
    }
    if (routed_index_[size_t(l)] >= 0) {
      add(p + "self_attn.router.weight", {1, C});
      tensors_.back().decay = false;  // decay would pull every token's route towards the bias alone
      add(p + "self_attn.router.bias", {1});
    }
    if (linear_index_[size_t(l)] >= 0) {
      const size_t first = tensors_.size();
      const int64_t D = shape_.head_dim, Fm = shape_.linear_features();
      add(p + "self_attn.feature_map_q.weight", {shape_.n_heads, D, Fm});
      add(p + "self_attn.feature_map_q.bias", {shape_.n_heads, Fm});
      add(p + "self_attn.feature_map_k.weight", {shape_.n_kv_heads, D, Fm});
      add(p + "self_attn.feature_map_k.bias", {shape_.n_kv_heads, Fm});
      if (plan_.layers[size_t(l)].span.window > 0) add(p + "self_attn.window_factor", {shape_.n_heads});
      for (size_t i = first; i < tensors_.size(); ++i) tensors_[i].decay = false;
    }
  }
  add("model.norm.weight", {C});
  if (!shape_.tied_embeddings) add("lm_head.weight", {V, C});
  params_.assign(size_t(offset), 0.0f);
  grads_.assign(size_t(offset), 0.0f);
}

const ParamTensor& TrainModel::tensor(const std::string& name) const {
  for (const ParamTensor& t : tensors_)
    if (t.name == name) return t;
  throw std::invalid_argument("the model has no parameter '" + name + "'");
}

TrainModel::LayerParams TrainModel::Layer(std::vector<float>& b, int32_t l) {
  // The layer's tensors in Layout() order: 9, the q/k/v biases if any, then
  // a routed layer's router or a linear layer's feature maps (and a linear +
  // window layer's factor).
  const size_t first = layer_first_[size_t(l)];
  auto p = [&](size_t i) { return At(b, tensors_[first + i].offset); };
  const bool routed = routed_index_[size_t(l)] >= 0, linear = linear_index_[size_t(l)] >= 0;
  const bool hybrid = linear && plan_.layers[size_t(l)].span.window > 0, bias = shape_.qkv_bias;
  const size_t x = bias ? 12 : 9;  // the first extra tensor
  return LayerParams{p(0), p(1), p(2), p(3), p(4), p(5), p(6), p(7), p(8),
                     bias ? p(9) : nullptr, bias ? p(10) : nullptr, bias ? p(11) : nullptr,
                     routed ? p(x) : nullptr, routed ? p(x + 1) : nullptr,
                     linear ? p(x) : nullptr, linear ? p(x + 1) : nullptr,
                     linear ? p(x + 2) : nullptr, linear ? p(x + 3) : nullptr,
                     hybrid ? p(x + 4) : nullptr};
}

void TrainModel::InitRandom(uint64_t seed) {
  params16_stale_ = true;
  std::mt19937_64 rng(seed);
  const float out_scale = 1.0f / std::sqrt(2.0f * float(shape_.n_layers));
  for (const ParamTensor& t : tensors_) {
    float* p = At(params_, t.offset);
    if (t.name.find(".router.") != std::string::npos) continue;  // InitRouters, no draws
    if (t.name.find(".feature_map_") != std::string::npos || t.name.find(".window_factor") != std::string::npos)
      continue;  // InitFeatureMaps, no draws
    if (t.shape.size() == 1) {  // norm weights start at 1, q/k/v biases at 0
      std::fill(p, p + t.numel, t.name.size() > 5 && t.name.ends_with(".bias") ? 0.0f : 1.0f);
      continue;
    }
    const bool output = t.name.find("o_proj") != std::string::npos ||
                        t.name.find("down_proj") != std::string::npos;
    std::normal_distribution<float> dist(0.0f, 0.02f * (output ? out_scale : 1.0f));
    for (int64_t i = 0; i < t.numel; ++i) p[i] = dist(rng);
  }
  InitRouters();
  InitFeatureMaps();
}

void TrainModel::InitFeatureMaps() {
  params16_stale_ = true;
  const FeatureMapShape q{shape_.n_heads, shape_.head_dim, shape_.linear_features()};
  const FeatureMapShape k{shape_.n_kv_heads, shape_.head_dim, shape_.linear_features()};
  for (int32_t l = 0; l < shape_.n_layers; ++l) {
    const LayerParams p = Layer(params_, l);
    if (!p.fq_w) continue;
    InitHedgehog(p.fq_w, p.fq_b, q);
    InitHedgehog(p.fk_w, p.fk_b, k);
    if (p.window_factor) std::fill_n(p.window_factor, shape_.n_heads, kInitialWindowFactorLogit);
  }
}

void TrainModel::set_attention_transfer(bool on) {
  if (on && n_linear_ == 0)
    throw std::invalid_argument("attention transfer trains linear layers' feature maps, and the plan '" + plan_.spec +
                                "' has no linear layer");
  transfer_ = on;
  for (ParamTensor& t : tensors_)
    t.frozen = on && t.name.find(".feature_map_") == std::string::npos && t.name.find(".window_factor") == std::string::npos;
  acts_.batch = 0;  // lin_out is allocated only under transfer
}

void TrainModel::InitRouters() {
  params16_stale_ = true;
  for (int32_t l = 0; l < shape_.n_layers; ++l) {
    const LayerParams p = Layer(params_, l);
    if (p.router_w) InitRouter(p.router_w, p.router_b, shape_.hidden);
  }
}

double TrainModel::router_loss() const {
  return counted_ > 0 ? routing_.regularizer / double(counted_) : 0.0;
}

double TrainModel::full_ratio() const {
  if (n_routed_ == 0 || routing_.tokens == 0) return -1;
  int64_t full = 0;
  for (int64_t f : routing_.full_tokens) full += f;
  return double(full) / double(routing_.tokens * n_routed_);
}

RoutedBranches TrainModel::Branches(int32_t r) {
  const int64_t N = acts_.batch * acts_.seq, QD = shape_.q_dim(), H = shape_.n_heads;
  return RoutedBranches{At(acts_.att_full, r * N * QD), At(acts_.lse_full, r * N * H),
                        At(acts_.att_window, r * N * QD), At(acts_.lse_window, r * N * H)};
}

SequenceAttention TrainModel::LayerAttention(int32_t l, int64_t batch, int64_t seq, const int32_t* pos) const {
  const LayerPlan& lp = plan_.layers[size_t(l)];
  SequenceAttention sa{{shape_.n_heads, shape_.n_kv_heads, shape_.head_dim}, lp.span, batch, seq, pos, {}};
  if (lp.kind == LayerKind::kPerHead)
    for (int32_t h = 0; h < shape_.n_kv_heads; ++h) sa.head_spans.push_back(lp.HeadSpan(h));
  return sa;
}

void TrainModel::ZeroGrads() {
  std::fill(grads_.begin(), grads_.end(), 0.0f);
  std::fill(head_gate_grads_.begin(), head_gate_grads_.end(), 0.0f);
}

void TrainModel::set_head_gates(const std::vector<float>& gates) {
  if (!gates.empty()) {
    const int64_t n = int64_t(shape_.n_layers) * shape_.n_kv_heads;
    if (int64_t(gates.size()) != n)
      throw std::invalid_argument("head gates: " + std::to_string(gates.size()) + " gates for " +
                                  std::to_string(n) + " KV heads (layers x KV heads)");
    for (size_t l = 0; l < plan_.layers.size(); ++l) {
      const LayerPlan& lp = plan_.layers[l];
      if (lp.kind != LayerKind::kWindow)
        throw std::invalid_argument("head gates mix full attention with each layer's window, and layer " +
                                    std::to_string(l) + " is " + LayerKindName(lp.kind) +
                                    ": give every layer a window (e.g. swa:64,sinks:4)");
    }
  }
  const bool was_on = !head_gates_.empty();
  head_gates_ = gates;
  if (was_on != !gates.empty()) head_gate_grads_.assign(gates.size(), 0.0f);
}

void TrainModel::RefreshBF16Params() {
  params16_.resize(params_.size());
  ConvertToBF16(params16_.data(), params_.data(), int64_t(params_.size()));
  params16_stale_ = false;
}

void TrainModel::Project(float* y, const float* x, const float* w, int64_t n, int64_t in,
                         int64_t out, bool accumulate_y) const {
  if (matmul_ == MatmulPrecision::kF32) return LinearForward(y, x, w, n, in, out, accumulate_y);
  // The bf16 copy has params_'s layout: w's offset finds its copy.
  LinearForwardBF16(y, x, params16_.data() + (w - params_.data()), n, in, out, accumulate_y);
}

void TrainModel::ProjectBackward(float* dx, float* d_w, const float* dy, const float* x,
                                 const float* w, int64_t n, int64_t in, int64_t out,
                                 bool accumulate_dx) const {
  if (matmul_ == MatmulPrecision::kF32)
    return LinearBackward(dx, d_w, dy, x, w, n, in, out, accumulate_dx);
  LinearBackwardBF16(dx, d_w, dy, x, params16_.data() + (w - params_.data()), n, in, out,
                     accumulate_dx);
}

void TrainModel::Allocate(int64_t batch, int64_t seq) {
  // Both branches of the routed layers, or of every layer under head gates.
  const int64_t R = n_routed_, branches = head_gates_.empty() ? R : shape_.n_layers;
  const size_t branch_floats = size_t(branches * batch * seq * shape_.q_dim());
  if (acts_.batch == batch && acts_.seq == seq && acts_.att_full.size() == branch_floats) return;
  const int64_t N = batch * seq, L = shape_.n_layers, C = shape_.hidden, F = shape_.intermediate;
  const int64_t QD = shape_.q_dim(), KD = shape_.kv_dim(), H = shape_.n_heads, V = shape_.vocab;
  Activations& a = acts_;
  a.batch = batch;
  a.seq = seq;
  a.tokens.resize(static_cast<size_t>(N));
  a.targets.resize(static_cast<size_t>(N));
  a.pos.resize(static_cast<size_t>(seq));
  std::iota(a.pos.begin(), a.pos.end(), 0);
  a.residual.assign(size_t((L + 1) * N * C), 0.0f);
  a.attn_xn.assign(size_t(L * N * C), 0.0f);
  a.attn_rstd.assign(size_t(L * N), 0.0f);
  a.q.assign(size_t(L * N * QD), 0.0f);
  a.k.assign(size_t(L * N * KD), 0.0f);
  a.v.assign(size_t(L * N * KD), 0.0f);
  a.att.assign(size_t(L * N * QD), 0.0f);
  a.lse.assign(size_t(L * N * H), 0.0f);
  a.attn_mid.assign(size_t(L * N * C), 0.0f);
  a.mlp_xn.assign(size_t(L * N * C), 0.0f);
  a.mlp_rstd.assign(size_t(L * N), 0.0f);
  a.gate.assign(size_t(L * N * F), 0.0f);
  a.up.assign(size_t(L * N * F), 0.0f);
  a.act.assign(size_t(L * N * F), 0.0f);
  a.final_xn.assign(size_t(N * C), 0.0f);
  a.final_rstd.assign(size_t(N), 0.0f);
  a.logits.assign(size_t(N * V), 0.0f);
  a.losses.assign(size_t(N), 0.0f);
  a.router_logit.assign(size_t(R * N), 0.0f);
  a.gamma.assign(size_t(R * N), 0.0f);
  const int64_t Lin = n_linear_, P = 2 * int64_t(shape_.linear_features()), KV = shape_.n_kv_heads;
  a.phi_q.assign(size_t(Lin * N * H * P), 0.0f);
  a.phi_k.assign(size_t(Lin * N * KV * P), 0.0f);
  a.lin_norm.assign(size_t(Lin * N * H), 0.0f);
  a.lin_out.assign(transfer_ ? size_t(Lin * N * QD) : 0, 0.0f);
  a.att_full.assign(branch_floats, 0.0f);
  a.lse_full.assign(size_t(branches * N * H), 0.0f);
  a.att_window.assign(branch_floats, 0.0f);
  a.lse_window.assign(size_t(branches * N * H), 0.0f);
  Scratch& s = scratch_;
  s.d_res.assign(size_t(N * C), 0.0f);
  s.d_xn.assign(size_t(N * C), 0.0f);
  s.d_att.assign(size_t(N * QD), 0.0f);
  s.dq.assign(size_t(N * QD), 0.0f);
  s.dk.assign(size_t(N * KD), 0.0f);
  s.dv.assign(size_t(N * KD), 0.0f);
  s.d_act.assign(size_t(N * F), 0.0f);
  s.d_gate.assign(size_t(N * F), 0.0f);
  s.d_up.assign(size_t(N * F), 0.0f);
  s.d_logit.assign(size_t(N), 0.0f);
  s.d_phi_q.assign(Lin > 0 ? size_t(N * H * P) : 0, 0.0f);
  s.d_phi_k.assign(Lin > 0 ? size_t(N * KV * P) : 0, 0.0f);
}

double TrainModel::Forward(const int32_t* tokens, const int32_t* targets, int64_t batch,
                           int64_t seq, const float* weights) {
  if (batch <= 0 || seq <= 0) throw std::invalid_argument("Forward: empty batch");
  Allocate(batch, seq);
  Activations& a = acts_;
  const int64_t N = batch * seq, C = shape_.hidden, V = shape_.vocab, QD = shape_.q_dim();
  std::copy(tokens, tokens + N, a.tokens.begin());
  std::copy(targets, targets + N, a.targets.begin());
  if (weights) a.weights.assign(weights, weights + N);
  else a.weights.clear();
  counted_ = 0;
  counted_weight_ = 0;
  for (int64_t t = 0; t < N; ++t) {
    counted_ += targets[t] >= 0;
    if (targets[t] >= 0) counted_weight_ += weights ? weights[t] : 1.0;
  }
  ForwardLayers();
  const float* head = shape_.tied_embeddings ? params_.data() : At(params_, tensors_.back().offset);
  Project(a.logits.data(), a.final_xn.data(), head, N, C, V);
  const float* w = a.weights.empty() ? nullptr : a.weights.data();
  const double loss = CrossEntropyForward(a.losses.data(), a.logits.data(), a.targets.data(), w, N, V);
  // The regularizer weighs each token by its NLL, so it follows the loss.
  routing_.tokens = N;
  routing_.regularizer = 0;
  for (int32_t r = 0; r < n_routed_; ++r) {
    const RoutedBranches br = Branches(r);
    routing_.regularizer += RouterRegularizerForward(
        At(a.gamma, r * N), At(a.router_logit, r * N), a.losses.data(), a.targets.data(),
        br.out_full, br.out_window, router_reg_, N, QD);
  }
  return transfer_ ? transfer_loss_ : loss;
}

namespace {

// A linear + window layer's γ = σ(θ) per head; empty for other layers (null θ).
std::vector<float> WindowFactors(const float* theta, int64_t heads) {
  std::vector<float> factor;  // [heads]
  for (int64_t h = 0; theta && h < heads; ++h) factor.push_back(WindowFactor(theta[h]));
  return factor;
}

}  // namespace

void TrainModel::LinearAttentionForward(int32_t l, float* out, const float* q, const float* k, const float* v) {
  Activations& a = acts_;
  const int64_t N = a.batch * a.seq, T = a.seq, H = shape_.n_heads, KV = shape_.n_kv_heads;
  const int64_t D = shape_.head_dim, F = shape_.linear_features(), P = 2 * F;
  const int64_t i = linear_index_[size_t(l)];
  const LayerParams p = Layer(params_, l);
  float* phi_q = At(a.phi_q, i * N * H * P);
  float* phi_k = At(a.phi_k, i * N * KV * P);
  float* norm = At(a.lin_norm, i * N * H);
  HedgehogForward(phi_q, q, p.fq_w, p.fq_b, N, {int32_t(H), int32_t(D), int32_t(F)});
  HedgehogForward(phi_k, k, p.fk_w, p.fk_b, N, {int32_t(KV), int32_t(D), int32_t(F)});
  const LinearAttentionShape shape{int32_t(H), int32_t(KV), int32_t(D), int32_t(P)};
  const int32_t window = plan_.layers[size_t(l)].span.window;  // > 0: LoLCATs' hybrid
  const std::vector<float> factor = WindowFactors(p.window_factor, H);  // [H] γ
  const AttentionTimer timer;
  for (int64_t b = 0; b < a.batch; ++b) {  // each sequence from an empty state
    if (window > 0) {
      LinearWindowForward(out + b * T * H * D, norm + b * T * H, q + b * T * H * D, k + b * T * KV * D,
                          v + b * T * KV * D, phi_q + b * T * H * P, phi_k + b * T * KV * P, factor.data(), T,
                          shape, window);
      continue;
    }
    LinearState state;
    state.Reset(shape);
    LinearAttend(out + b * T * H * D, norm + b * T * H, state, phi_q + b * T * H * P, phi_k + b * T * KV * P,
                 v + b * T * KV * D, T, shape);
  }
}

void TrainModel::LinearAttentionBackward(int32_t l, const float* d_out, const float* out, const float* q, const float* k,
                                         const float* v, float* dq, float* dk, float* dv, const LayerParams& g) {
  Activations& a = acts_;
  Scratch& s = scratch_;
  const int64_t N = a.batch * a.seq, T = a.seq, H = shape_.n_heads, KV = shape_.n_kv_heads;
  const int64_t D = shape_.head_dim, F = shape_.linear_features(), P = 2 * F;
  const int64_t i = linear_index_[size_t(l)];
  const LayerParams p = Layer(params_, l);
  const float* phi_q = At(a.phi_q, i * N * H * P);
  const float* phi_k = At(a.phi_k, i * N * KV * P);
  const float* norm = At(a.lin_norm, i * N * H);
  const LinearAttentionShape shape{int32_t(H), int32_t(KV), int32_t(D), int32_t(P)};
  const int32_t window = plan_.layers[size_t(l)].span.window;  // > 0: LoLCATs' hybrid
  const bool hybrid = window > 0;
  const std::vector<float> factor = WindowFactors(p.window_factor, H);  // [H] γ
  std::vector<float> d_factor(static_cast<size_t>(H), 0.0f);           // [H] dγ
  {
    const AttentionTimer timer;
    // Linear alone is the hybrid's backward with no window; dv is null
    // under attention transfer.
    for (int64_t b = 0; b < a.batch; ++b)
      LinearWindowBackward(hybrid && dq ? dq + b * T * H * D : nullptr, hybrid && dk ? dk + b * T * KV * D : nullptr,
                           dv ? dv + b * T * KV * D : nullptr, &s.d_phi_q[size_t(b * T * H * P)],
                           &s.d_phi_k[size_t(b * T * KV * P)], hybrid ? d_factor.data() : nullptr,
                           d_out + b * T * H * D, out + b * T * H * D, norm + b * T * H, q + b * T * H * D,
                           k + b * T * KV * D, v + b * T * KV * D, phi_q + b * T * H * P, phi_k + b * T * KV * P,
                           factor.data(), T, shape, window);
  }
  // dθ = dγ γ (1 − γ)
  for (int64_t h = 0; h < H && hybrid && g.window_factor; ++h)
    g.window_factor[h] += d_factor[size_t(h)] * factor[size_t(h)] * (1.0f - factor[size_t(h)]);
  // dq, dk: linear alone, only the feature maps lead back to them (=); the
  // hybrid's window wrote its part already (+=).
  if (window == 0 && dq) std::fill(dq, dq + N * H * D, 0.0f);
  if (window == 0 && dk) std::fill(dk, dk + N * KV * D, 0.0f);
  HedgehogBackward(dq, g.fq_w, g.fq_b, s.d_phi_q.data(), phi_q, q, p.fq_w, N, {int32_t(H), int32_t(D), int32_t(F)});
  HedgehogBackward(dk, g.fk_w, g.fk_b, s.d_phi_k.data(), phi_k, k, p.fk_w, N, {int32_t(KV), int32_t(D), int32_t(F)});
}

const float* TrainModel::ForwardHidden(const int32_t* tokens, int64_t batch, int64_t seq) {
  if (batch <= 0 || seq <= 0) throw std::invalid_argument("ForwardHidden: empty batch");
  Allocate(batch, seq);
  const int64_t N = batch * seq;
  std::copy(tokens, tokens + N, acts_.tokens.begin());
  std::fill(acts_.targets.begin(), acts_.targets.end(), -1);
  acts_.weights.clear();
  counted_ = 0;
  counted_weight_ = 0;
  ForwardLayers();
  return acts_.final_xn.data();
}

void TrainModel::ForwardLayers() {
  Activations& a = acts_;
  const int64_t batch = a.batch, seq = a.seq, N = batch * seq, C = shape_.hidden;
  const int64_t F = shape_.intermediate, V = shape_.vocab;
  const int64_t QD = shape_.q_dim(), KD = shape_.kv_dim(), H = shape_.n_heads;
  if (matmul_ == MatmulPrecision::kBF16 && params16_stale_) RefreshBF16Params();

  EmbeddingForward(a.residual.data(), a.tokens.data(), params_.data(), N, V, C);
  transfer_loss_ = 0;
  for (int32_t l = 0; l < shape_.n_layers; ++l) {
    const LayerParams p = Layer(params_, l);
    float* res = At(a.residual, l * N * C);
    float* xn = At(a.attn_xn, l * N * C);
    float* q = At(a.q, l * N * QD);
    float* k = At(a.k, l * N * KD);
    float* v = At(a.v, l * N * KD);
    float* att = At(a.att, l * N * QD);
    float* mid = At(a.attn_mid, l * N * C);
    // Attention branch.
    RmsNorm(xn, res, p.attn_norm, shape_.rms_eps, N, C, At(a.attn_rstd, l * N));
    const int32_t r = routed_index_[size_t(l)];
    float* logit = r >= 0 ? At(a.router_logit, r * N) : nullptr;
    if (r >= 0) RouterForward(logit, xn, p.router_w, p.router_b, N, C);
    Project(q, xn, p.wq, N, C, QD);
    Project(k, xn, p.wk, N, C, KD);
    Project(v, xn, p.wv, N, C, KD);
    if (p.bq) {
      AddBias(q, p.bq, N, QD);
      AddBias(k, p.bk, N, KD);
      AddBias(v, p.bv, N, KD);
    }
    for (int64_t b = 0; b < batch; ++b) {
      RopeForward(q + b * seq * QD, ropes_[size_t(l)], a.pos.data(), seq, shape_.n_heads);
      RopeForward(k + b * seq * KD, ropes_[size_t(l)], a.pos.data(), seq, shape_.n_kv_heads);
    }
    const SequenceAttention sa = LayerAttention(l, batch, seq, a.pos.data());
    if (r >= 0) {
      RoutedAttentionForward(att, Branches(r), logit, q, k, v, sa);
      int64_t full = 0;
      for (int64_t t = 0; t < N; ++t) full += RoutesFull(logit[t]);
      routing_.full_tokens[size_t(l)] = full;
    } else if (!head_gates_.empty()) {
      HeadGatedAttentionForward(att, Branches(l), &head_gates_[size_t(l) * shape_.n_kv_heads], q, k, v, sa);
    } else if (linear_index_[size_t(l)] >= 0 && transfer_) {
      // The teacher's softmax output goes on; the linear output is scored
      // against it. The teacher is full causal attention, also for a linear
      // + window layer, whose linear part must learn the keys beyond it.
      float* lin = At(a.lin_out, linear_index_[size_t(l)] * N * QD);
      LinearAttentionForward(l, lin, q, k, v);
      SequenceAttention teacher = sa;
      teacher.span = Span{};
      AttentionForward(att, At(a.lse, l * N * H), q, k, v, teacher);
      double sq = 0;
      for (int64_t i = 0; i < N * QD; ++i) sq += double(lin[i] - att[i]) * (lin[i] - att[i]);
      transfer_loss_ += sq / double(N * QD);
    } else if (linear_index_[size_t(l)] >= 0) {
      LinearAttentionForward(l, att, q, k, v);
    } else {
      AttentionForward(att, At(a.lse, l * N * H), q, k, v, sa);
    }
    std::copy(res, res + N * C, mid);
    Project(mid, att, p.wo, N, QD, C, /*accumulate_y=*/true);
    // MLP branch.
    float* mxn = At(a.mlp_xn, l * N * C);
    float* gate = At(a.gate, l * N * F);
    float* up = At(a.up, l * N * F);
    float* act = At(a.act, l * N * F);
    float* out = At(a.residual, (l + 1) * N * C);
    RmsNorm(mxn, mid, p.mlp_norm, shape_.rms_eps, N, C, At(a.mlp_rstd, l * N));
    Project(gate, mxn, p.w_gate, N, C, F);
    Project(up, mxn, p.w_up, N, C, F);
    SiluMul(act, gate, up, N * F);
    std::copy(mid, mid + N * C, out);
    Project(out, act, p.w_down, N, F, C, /*accumulate_y=*/true);
  }
  const float* final_norm = At(params_, tensor("model.norm.weight").offset);
  RmsNorm(a.final_xn.data(), At(a.residual, shape_.n_layers * N * C), final_norm, shape_.rms_eps, N, C,
          a.final_rstd.data());
}

std::vector<double> TrainModel::AttentionWeights(int32_t layer, int32_t head, int64_t query) const {
  const Activations& a = acts_;
  if (a.batch == 0 || layer < 0 || layer >= shape_.n_layers || head < 0 || head >= shape_.n_heads ||
      query < 0 || query >= a.seq)
    throw std::out_of_range("AttentionWeights: no such layer, head or query in the last Forward");
  const int64_t N = a.batch * a.seq, D = shape_.head_dim, QD = shape_.q_dim(), KD = shape_.kv_dim();
  const int32_t kv_head = head / (shape_.n_heads / shape_.n_kv_heads);
  const LayerPlan& lp = plan_.layers[size_t(layer)];
  const Span span = lp.kind == LayerKind::kRouted ? Span{} : lp.HeadSpan(kv_head);
  const float* q = a.q.data() + layer * N * QD + query * QD + head * D;  // sequence 0
  std::vector<double> w(size_t(query + 1), 0.0);                        // [query + 1]
  double max_logit = -1e300;
  for (int64_t k = 0; k <= query; ++k) {
    if (!Sees(span, query, k)) continue;
    const float* key = a.k.data() + layer * N * KD + k * KD + kv_head * D;
    double dot = 0;
    for (int64_t d = 0; d < D; ++d) dot += double(q[d]) * key[d];
    w[size_t(k)] = dot / std::sqrt(double(D));
    max_logit = std::max(max_logit, w[size_t(k)]);
  }
  double sum = 0;
  for (int64_t k = 0; k <= query; ++k) {
    if (!Sees(span, query, k)) continue;
    w[size_t(k)] = std::exp(w[size_t(k)] - max_logit);
    sum += w[size_t(k)];
  }
  for (double& x : w) x /= sum;
  return w;
}

void TrainModel::Backward(float loss_scale) {
  Activations& a = acts_;
  Scratch& s = scratch_;
  if (a.batch == 0) throw std::logic_error("Backward before Forward");
  const int64_t N = a.batch * a.seq, C = shape_.hidden, V = shape_.vocab;
  const bool frozen = !head_gates_.empty();
  if (transfer_) return BackwardTransfer(loss_scale);
  // Loss -> logits -> final norm, in reverse order of the forward.
  CrossEntropyBackward(a.logits.data(), a.logits.data(), a.targets.data(),
                       a.weights.empty() ? nullptr : a.weights.data(), loss_scale, N, V);
  const ParamTensor& norm_t = tensor("model.norm.weight");
  const int64_t head_offset = shape_.tied_embeddings ? 0 : tensors_.back().offset;
  ProjectBackward(s.d_xn.data(), frozen ? nullptr : At(grads_, head_offset), a.logits.data(),
                  a.final_xn.data(), At(params_, head_offset), N, C, V, false);
  RmsNormBackward(s.d_res.data(), frozen ? nullptr : At(grads_, norm_t.offset), s.d_xn.data(),
                  At(a.residual, shape_.n_layers * N * C), a.final_rstd.data(),
                  At(params_, norm_t.offset), N, C, /*accumulate_dx=*/false);
  BackwardLayers(loss_scale);
}

void TrainModel::BackwardTransfer(float loss_scale) {
  // d(counted weight x Σ_l mean squared distance) x loss_scale, so that the
  // trainer's 1 / (weight of the step) gives the weighted mean over micro-batches.
  Activations& a = acts_;
  const int64_t N = a.batch * a.seq, QD = shape_.q_dim(), KD = shape_.kv_dim();
  const double scale = 2.0 * counted_weight_ * loss_scale / double(N * QD);
  std::vector<float> d_lin(size_t(N * QD));  // [N, H*D]
  for (int32_t l = 0; l < shape_.n_layers; ++l) {
    const int32_t i = linear_index_[size_t(l)];
    if (i < 0) continue;
    const float* lin = At(a.lin_out, i * N * QD);
    const float* att = At(a.att, l * N * QD);
    for (int64_t e = 0; e < N * QD; ++e) d_lin[size_t(e)] = float(scale * (double(lin[e]) - att[e]));
    LinearAttentionBackward(l, d_lin.data(), lin, At(a.q, l * N * QD), At(a.k, l * N * KD), At(a.v, l * N * KD), nullptr,
                   nullptr, nullptr, Layer(grads_, l));
  }
}

void TrainModel::BackwardHidden(const float* d_hidden) {
  Activations& a = acts_;
  if (a.batch == 0) throw std::logic_error("BackwardHidden before a forward pass");
  const int64_t N = a.batch * a.seq, C = shape_.hidden;
  const bool frozen = !head_gates_.empty();
  const ParamTensor& norm_t = tensor("model.norm.weight");
  RmsNormBackward(scratch_.d_res.data(), frozen ? nullptr : At(grads_, norm_t.offset), d_hidden,
                  At(a.residual, shape_.n_layers * N * C), a.final_rstd.data(),
                  At(params_, norm_t.offset), N, C, /*accumulate_dx=*/false);
  BackwardLayers(0.0f);
}

void TrainModel::BackwardLayers(float loss_scale) {
  Activations& a = acts_;
  Scratch& s = scratch_;
  const int64_t batch = a.batch, seq = a.seq, N = batch * seq, C = shape_.hidden;
  const int64_t F = shape_.intermediate, QD = shape_.q_dim(), KD = shape_.kv_dim();
  const int64_t H = shape_.n_heads, L = shape_.n_layers;
  const bool frozen = !head_gates_.empty();  // gates only: no weight gradients
  const ParamTensor& norm_t = tensor("model.norm.weight");
  for (int32_t l = int32_t(L) - 1; l >= 0; --l) {
    const LayerParams p = Layer(params_, l);
    const LayerParams g = frozen ? LayerParams{} : Layer(grads_, l);
    // MLP branch: out = mid + act · w_downᵀ.
    ProjectBackward(s.d_act.data(), g.w_down, s.d_res.data(), At(a.act, l * N * F), p.w_down, N,
                    F, C, false);
    SiluMulBackward(s.d_gate.data(), s.d_up.data(), s.d_act.data(), At(a.gate, l * N * F),
                   At(a.up, l * N * F), N * F);
    const float* mxn = At(a.mlp_xn, l * N * C);
    ProjectBackward(s.d_xn.data(), g.w_gate, s.d_gate.data(), mxn, p.w_gate, N, C, F, false);
    ProjectBackward(s.d_xn.data(), g.w_up, s.d_up.data(), mxn, p.w_up, N, C, F, true);
    RmsNormBackward(s.d_res.data(), g.mlp_norm, s.d_xn.data(), At(a.attn_mid, l * N * C),
                    At(a.mlp_rstd, l * N), p.mlp_norm, N, C, /*accumulate_dx=*/true);
    // Attention branch: mid = res + att · woᵀ.
    const float* att = At(a.att, l * N * QD);
    ProjectBackward(s.d_att.data(), g.wo, s.d_res.data(), att, p.wo, N, QD, C, false);
    const float* q = At(a.q, l * N * QD);
    const float* k = At(a.k, l * N * KD);
    const float* v = At(a.v, l * N * KD);
    const SequenceAttention sa = LayerAttention(l, batch, seq, a.pos.data());
    const int32_t r = routed_index_[size_t(l)];
    const float* logit = r >= 0 ? At(a.router_logit, r * N) : nullptr;
    if (r >= 0) {
      RoutedAttentionBackward(s.dq.data(), s.dk.data(), s.dv.data(), s.d_logit.data(),
                              s.d_att.data(), Branches(r), logit, q, k, v, sa);
      RouterRegularizerBackward(s.d_logit.data(), At(a.gamma, r * N), logit, loss_scale, N);
    } else if (linear_index_[size_t(l)] >= 0) {
      LinearAttentionBackward(l, s.d_att.data(), att, q, k, v, s.dq.data(), s.dk.data(), s.dv.data(), g);
    } else if (frozen) {
      const int64_t KV = shape_.n_kv_heads;
      HeadGatedAttentionBackward(s.dq.data(), s.dk.data(), s.dv.data(), &head_gate_grads_[size_t(l * KV)],
                                 s.d_att.data(), Branches(l), &head_gates_[size_t(l * KV)], q, k, v, sa);
    } else {
      AttentionBackward(s.dq.data(), s.dk.data(), s.dv.data(), s.d_att.data(), att,
                        At(a.lse, l * N * H), q, k, v, sa);
    }
    for (int64_t b = 0; b < batch; ++b) {
      RopeBackward(s.dq.data() + b * seq * QD, ropes_[size_t(l)], a.pos.data(), seq, shape_.n_heads);
      RopeBackward(s.dk.data() + b * seq * KD, ropes_[size_t(l)], a.pos.data(), seq,
                   shape_.n_kv_heads);
    }
    const float* xn = At(a.attn_xn, l * N * C);
    if (g.bq) {
      AddBiasBackward(g.bq, s.dq.data(), N, QD);
      AddBiasBackward(g.bk, s.dk.data(), N, KD);
      AddBiasBackward(g.bv, s.dv.data(), N, KD);
    }
    ProjectBackward(s.d_xn.data(), g.wq, s.dq.data(), xn, p.wq, N, C, QD, false);
    ProjectBackward(s.d_xn.data(), g.wk, s.dk.data(), xn, p.wk, N, C, KD, true);
    ProjectBackward(s.d_xn.data(), g.wv, s.dv.data(), xn, p.wv, N, C, KD, true);
    if (r >= 0) RouterBackward(s.d_xn.data(), g.router_w, g.router_b, s.d_logit.data(), xn, p.router_w, N, C);
    RmsNormBackward(s.d_res.data(), g.attn_norm, s.d_xn.data(), At(a.residual, l * N * C),
                    At(a.attn_rstd, l * N), p.attn_norm, N, C, /*accumulate_dx=*/true);
    if (grads_ready_ && !frozen) {
      const int64_t first = tensors_[layer_first_[size_t(l)]].offset;
      const int64_t end = l + 1 < L ? tensors_[layer_first_[size_t(l) + 1]].offset : norm_t.offset;
      grads_ready_(first, end - first);
    }
  }
  if (frozen) return;
  EmbeddingBackward(grads_.data(), s.d_res.data(), a.tokens.data(), N, C);
  if (grads_ready_) {
    // With tied embeddings lm_head's gradient is the embedding's, final only now.
    grads_ready_(0, tensors_.front().numel);
    grads_ready_(norm_t.offset, num_params() - norm_t.offset);
  }
}

std::string TrainModel::FirstNonFinite() const {
  const Activations& a = acts_;
  const int64_t N = a.batch * a.seq, C = shape_.hidden;
  if (N == 0) return "";
  if (!AllFinite(a.residual.data(), N * C)) return "embedding";
  for (int32_t l = 0; l < shape_.n_layers; ++l) {
    const int32_t r = routed_index_[size_t(l)];
    if (r >= 0 && !AllFinite(a.router_logit.data() + r * N, N))
      return "layer " + std::to_string(l) + " router";
    if (!AllFinite(a.attn_mid.data() + l * N * C, N * C))
      return "layer " + std::to_string(l) + " attention";
    if (!AllFinite(a.residual.data() + (l + 1) * N * C, N * C))
      return "layer " + std::to_string(l) + " mlp";
  }
  if (!AllFinite(a.losses.data(), N)) return "final norm / lm_head";
  return "";
}

}  // namespace swan
