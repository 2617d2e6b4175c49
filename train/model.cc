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
#include "model/decoder.h"
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

int64_t QDim(const ModelConfig& c) { return int64_t(c.n_heads) * c.head_dim; }
int64_t KvDim(const ModelConfig& c) { return int64_t(c.n_kv_heads) * c.head_dim; }
int32_t FeatureDim(const ModelConfig& c) { return LinearPhiDim(c) / 2; }  // the Hedgehog map's F

}  // namespace

ModelConfig PresetConfig(const std::string& name, int64_t vocab, int64_t context, const std::string& architecture) {
  ModelConfig c;
  c.architecture = architecture;
  const DecoderSpec spec = FamilyOf(c, "swan train --arch").spec;
  c.model_type = spec.model_type;
  c.hidden_act = MlpActivationName(spec.activation);
  c.vocab_size = vocab;
  c.max_position_embeddings = context;
  c.rms_norm_eps = 1e-5;
  c.tie_word_embeddings = true;
  c.rope.base = 10000.0;
  if (spec.architecture == "Gemma3ForCausalLM") {
    // Gemma 3's layers: 5 local of window 512 and RoPE base 10K per global one of base 1M.
    c.rope.base = 1e6;
    c.rope_local_base_freq = 10000.0;
    c.sliding_window = 512;
    c.sliding_window_pattern = 6;
  }
  if (name == "tiny") {  // tests: ~vocab*16 + 10K parameters
    c.hidden_size = 16;
    c.intermediate_size = 32;
    c.n_layers = 2;
    c.n_heads = 2;
    c.n_kv_heads = 1;
    c.head_dim = 8;
  } else if (name == "mini") {  // quick experiments: 4 layers, dim 128
    c.hidden_size = 128;
    c.intermediate_size = 352;
    c.n_layers = 4;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = 32;
  } else if (name == "small") {  // the default model: ~7M parameters at vocab 4096
    c.hidden_size = 256;
    c.intermediate_size = 704;
    c.n_layers = 8;
    c.n_heads = 8;
    c.n_kv_heads = 4;
    c.head_dim = 32;
  } else {
    throw std::invalid_argument("unknown model preset '" + name + "' (tiny, mini, small)");
  }
  if (spec.default_query_pre_attn_scalar > 0) c.query_pre_attn_scalar = c.head_dim;
  return c;
}

TrainModel::TrainModel(const ModelConfig& config, const AttentionPlan& plan) : config_(config), plan_(plan) {
  const std::string origin = "model config (" + config_.architecture + ")";
  CheckModelSizes(config_, origin);
  spec_ = DecoderSpecOf(config_, origin);
  attention_scale_ = AttentionScaleOf(config_, spec_);
  if (spec_.scale_embeddings) embed_scale_ = float(std::sqrt(double(config_.hidden_size)));
  if (int32_t(plan.layers.size()) != config_.n_layers)
    throw std::invalid_argument("attention plan has " + std::to_string(plan.layers.size()) + " layers, the model " +
                                std::to_string(config_.n_layers));
  CheckLinearLayersFit(config_, spec_, plan_);
  for (const LayerPlan& l : plan_.layers) {
    ropes_.emplace_back(l.rope, config_.head_dim);
    routed_index_.push_back(l.kind == LayerKind::kRouted ? n_routed_++ : -1);
    linear_index_.push_back(l.kind == LayerKind::kLinear ? n_linear_++ : -1);
  }
  routing_.full_tokens.assign(size_t(config_.n_layers), 0);
  Layout();
}

void TrainModel::Layout() {
  int64_t offset = 0;
  layer_first_.assign(size_t(config_.n_layers), 0);
  layer_end_.assign(size_t(config_.n_layers), 0);
  for (const DecoderTensor& d : DecoderTensors(config_, spec_, PlanExtras(plan_))) {
    ParamTensor t;
    t.name = d.name;
    t.shape = d.shape;
    t.numel = 1;
    for (int64_t x : d.shape) t.numel *= x;
    t.offset = offset;
    t.decay = d.decay;
    t.role = d.role;
    t.layer = d.layer;
    offset += t.numel;
    if (d.layer >= 0) {
      if (layer_end_[size_t(d.layer)] == 0) layer_first_[size_t(d.layer)] = tensors_.size();
      layer_end_[size_t(d.layer)] = tensors_.size() + 1;
    }
    tensors_.push_back(std::move(t));
  }
  params_.assign(size_t(offset), 0.0f);
  grads_.assign(size_t(offset), 0.0f);
}

const ParamTensor& TrainModel::tensor(const std::string& name) const {
  for (const ParamTensor& t : tensors_)
    if (t.name == name) return t;
  throw std::invalid_argument("the model has no parameter '" + name + "'");
}

TrainModel::LayerParams TrainModel::Layer(std::vector<float>& b, int32_t l) {
  LayerParams p;
  using R = TensorRole;
  for (size_t i = layer_first_[size_t(l)]; i < layer_end_[size_t(l)]; ++i) {
    float* x = At(b, tensors_[i].offset);
    switch (tensors_[i].role) {
      case R::kAttnNorm: p.attn_norm = x; break;
      case R::kQ: p.wq = x; break;
      case R::kK: p.wk = x; break;
      case R::kV: p.wv = x; break;
      case R::kO: p.wo = x; break;
      case R::kQBias: p.bq = x; break;
      case R::kKBias: p.bk = x; break;
      case R::kVBias: p.bv = x; break;
      case R::kQNorm: p.q_norm = x; break;
      case R::kKNorm: p.k_norm = x; break;
      case R::kPostAttnNorm: p.post_attn_norm = x; break;
      case R::kMlpNorm: p.mlp_norm = x; break;
      case R::kGate: p.w_gate = x; break;
      case R::kUp: p.w_up = x; break;
      case R::kDown: p.w_down = x; break;
      case R::kPostMlpNorm: p.post_mlp_norm = x; break;
      case R::kRouterWeight: p.router_w = x; break;
      case R::kRouterBias: p.router_b = x; break;
      case R::kFeatureMapQWeight: p.fq_w = x; break;
      case R::kFeatureMapQBias: p.fq_b = x; break;
      case R::kFeatureMapKWeight: p.fk_w = x; break;
      case R::kFeatureMapKBias: p.fk_b = x; break;
      case R::kWindowFactor: p.window_factor = x; break;
      case R::kEmbedding:
      case R::kFinalNorm:
      case R::kLmHead: throw std::logic_error("TrainModel: " + tensors_[i].name + " inside a layer");
    }
  }
  return p;
}

const float* TrainModel::NormWeight(const float* w, int64_t n, std::vector<float>& applied) const {
  if (!spec_.unit_offset_norms) return w;
  applied.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) applied[size_t(i)] = 1.0f + w[i];
  return applied.data();
}

void TrainModel::BranchForward(float* next, const float* prev, const float* x, const float* w, int64_t in,
                               const float* out_norm, float* out, float* rstd) {
  const int64_t N = acts_.batch * acts_.seq, C = config_.hidden_size;
  std::copy(prev, prev + N * C, next);
  if (!out_norm) return Project(next, x, w, N, in, C, /*accumulate_y=*/true);
  std::vector<float> norm_w;              // [C]
  float* normed = scratch_.d_out.data();  // [N, C]
  Project(out, x, w, N, in, C);
  RmsNorm(normed, out, NormWeight(out_norm, C, norm_w), float(config_.rms_norm_eps), N, C, rstd);
  for (int64_t i = 0; i < N * C; ++i) next[i] += normed[i];
}

const float* TrainModel::BranchBackward(const float* out_norm, float* d_out_norm, const float* out, const float* rstd) {
  Scratch& s = scratch_;
  if (!out_norm) return s.d_res.data();
  const int64_t N = acts_.batch * acts_.seq, C = config_.hidden_size;
  std::vector<float> norm_w;  // [C]
  RmsNormBackward(s.d_out.data(), d_out_norm, s.d_res.data(), out, rstd, NormWeight(out_norm, C, norm_w), N, C, false);
  return s.d_out.data();
}

void TrainModel::GateForward(float* act, const float* gate, const float* up, int64_t n) const {
  if (spec_.activation == MlpActivation::kSilu) return SiluMul(act, gate, up, n);
  GeluTanhMul(act, gate, up, n);
}

void TrainModel::GateBackward(float* d_gate, float* d_up, const float* d_act, const float* gate, const float* up,
                              int64_t n) const {
  if (spec_.activation == MlpActivation::kSilu) return SiluMulBackward(d_gate, d_up, d_act, gate, up, n);
  GeluTanhMulBackward(d_gate, d_up, d_act, gate, up, n);
}

void TrainModel::InitRandom(uint64_t seed) {
  params16_stale_ = true;
  std::mt19937_64 rng(seed);
  const float out_scale = 1.0f / std::sqrt(2.0f * float(config_.n_layers));
  for (const ParamTensor& t : tensors_) {
    float* p = At(params_, t.offset);
    if (IsRouterRole(t.role) || IsLinearLayerRole(t.role)) continue;  // InitRouters, InitFeatureMaps: no draws
    if (t.shape.size() == 1) {  // norms apply 1 (stored as 0 under 1 + w norms), q/k/v biases 0
      const bool norm = IsNormRole(t.role);
      std::fill(p, p + t.numel, norm && !spec_.unit_offset_norms ? 1.0f : 0.0f);
      continue;
    }
    const bool output = t.role == TensorRole::kO || t.role == TensorRole::kDown;
    std::normal_distribution<float> dist(0.0f, 0.02f * (output ? out_scale : 1.0f));
    for (int64_t i = 0; i < t.numel; ++i) p[i] = dist(rng);
  }
  InitRouters();
  InitFeatureMaps();
}

void TrainModel::InitFeatureMaps() {
  params16_stale_ = true;
  const FeatureMapShape q{config_.n_heads, config_.head_dim, FeatureDim(config_)};
  const FeatureMapShape k{config_.n_kv_heads, config_.head_dim, FeatureDim(config_)};
  for (int32_t l = 0; l < config_.n_layers; ++l) {
    const LayerParams p = Layer(params_, l);
    if (!p.fq_w) continue;
    InitHedgehog(p.fq_w, p.fq_b, q);
    InitHedgehog(p.fk_w, p.fk_b, k);
    if (p.window_factor) std::fill_n(p.window_factor, config_.n_heads, kInitialWindowFactorLogit);
  }
}

void TrainModel::set_attention_transfer(bool on) {
  if (on && n_linear_ == 0)
    throw std::invalid_argument("attention transfer trains linear layers' feature maps, and the plan '" + plan_.spec +
                                "' has no linear layer");
  transfer_ = on;
  for (ParamTensor& t : tensors_) t.frozen = on && !IsLinearLayerRole(t.role);
  acts_.batch = 0;  // lin_out is allocated only under transfer
}

void TrainModel::InitRouters() {
  params16_stale_ = true;
  for (int32_t l = 0; l < config_.n_layers; ++l) {
    const LayerParams p = Layer(params_, l);
    if (p.router_w) InitRouter(p.router_w, p.router_b, config_.hidden_size);
  }
}

double TrainModel::router_loss() const { return counted_ > 0 ? routing_.regularizer / double(counted_) : 0.0; }

double TrainModel::full_ratio() const {
  if (n_routed_ == 0 || routing_.tokens == 0) return -1;
  int64_t full = 0;
  for (int64_t f : routing_.full_tokens) full += f;
  return double(full) / double(routing_.tokens * n_routed_);
}

RoutedBranches TrainModel::Branches(int32_t r) {
  const int64_t N = acts_.batch * acts_.seq, QD = QDim(config_), H = config_.n_heads;
  return RoutedBranches{At(acts_.att_full, r * N * QD), At(acts_.lse_full, r * N * H), At(acts_.att_window, r * N * QD),
                        At(acts_.lse_window, r * N * H)};
}

SequenceAttention TrainModel::LayerAttention(int32_t l, int64_t batch, int64_t seq, const int32_t* pos) const {
  const LayerPlan& lp = plan_.layers[size_t(l)];
  SequenceAttention sa{
      {config_.n_heads, config_.n_kv_heads, config_.head_dim}, lp.span, batch, seq, pos, {}, attention_scale_};
  if (lp.kind == LayerKind::kPerHead)
    for (int32_t h = 0; h < config_.n_kv_heads; ++h) sa.head_spans.push_back(lp.HeadSpan(h));
  return sa;
}

void TrainModel::ZeroGrads() {
  std::fill(grads_.begin(), grads_.end(), 0.0f);
  std::fill(head_gate_grads_.begin(), head_gate_grads_.end(), 0.0f);
}

void TrainModel::set_head_gates(const std::vector<float>& gates) {
  if (!gates.empty()) {
    const int64_t n = int64_t(config_.n_layers) * config_.n_kv_heads;
    if (int64_t(gates.size()) != n)
      throw std::invalid_argument("head gates: " + std::to_string(gates.size()) + " gates for " + std::to_string(n) +
                                  " KV heads (layers x KV heads)");
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

void TrainModel::Project(float* y, const float* x, const float* w, int64_t n, int64_t in, int64_t out,
                         bool accumulate_y) const {
  if (matmul_ == MatmulPrecision::kF32) return LinearForward(y, x, w, n, in, out, accumulate_y);
  // The bf16 copy has params_'s layout: w's offset finds its copy.
  LinearForwardBF16(y, x, params16_.data() + (w - params_.data()), n, in, out, accumulate_y);
}

void TrainModel::ProjectBackward(float* dx, float* d_w, const float* dy, const float* x, const float* w, int64_t n,
                                 int64_t in, int64_t out, bool accumulate_dx) const {
  if (matmul_ == MatmulPrecision::kF32) return LinearBackward(dx, d_w, dy, x, w, n, in, out, accumulate_dx);
  LinearBackwardBF16(dx, d_w, dy, x, params16_.data() + (w - params_.data()), n, in, out, accumulate_dx);
}

void TrainModel::Allocate(int64_t batch, int64_t seq) {
  // Both branches of the routed layers, or of every layer under head gates.
  const int64_t R = n_routed_, branches = head_gates_.empty() ? R : config_.n_layers;
  const size_t branch_floats = size_t(branches * batch * seq * QDim(config_));
  if (acts_.batch == batch && acts_.seq == seq && acts_.att_full.size() == branch_floats) return;
  const int64_t N = batch * seq, L = config_.n_layers, C = config_.hidden_size, F = config_.intermediate_size;
  const int64_t QD = QDim(config_), KD = KvDim(config_), H = config_.n_heads, V = config_.vocab_size;
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
  const bool qk = spec_.qk_norm, sandwich = spec_.sandwich_norms;
  const int64_t KV = config_.n_kv_heads;
  a.q_raw.assign(qk ? size_t(L * N * QD) : 0, 0.0f);
  a.k_raw.assign(qk ? size_t(L * N * KD) : 0, 0.0f);
  a.q_rstd.assign(qk ? size_t(L * N * H) : 0, 0.0f);
  a.k_rstd.assign(qk ? size_t(L * N * KV) : 0, 0.0f);
  a.attn_out.assign(sandwich ? size_t(L * N * C) : 0, 0.0f);
  a.attn_out_rstd.assign(sandwich ? size_t(L * N) : 0, 0.0f);
  a.mlp_out.assign(sandwich ? size_t(L * N * C) : 0, 0.0f);
  a.mlp_out_rstd.assign(sandwich ? size_t(L * N) : 0, 0.0f);
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
  const int64_t Lin = n_linear_, P = 2 * int64_t(FeatureDim(config_));
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
  s.d_out.assign(size_t(N * C), 0.0f);
  s.d_raw.assign(qk ? size_t(N * QD) : 0, 0.0f);
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

double TrainModel::Forward(const int32_t* tokens, const int32_t* targets, int64_t batch, int64_t seq,
                           const float* weights) {
  if (batch <= 0 || seq <= 0) throw std::invalid_argument("Forward: empty batch");
  Allocate(batch, seq);
  Activations& a = acts_;
  const int64_t N = batch * seq, C = config_.hidden_size, V = config_.vocab_size, QD = QDim(config_);
  std::copy(tokens, tokens + N, a.tokens.begin());
  std::copy(targets, targets + N, a.targets.begin());
  if (weights)
    a.weights.assign(weights, weights + N);
  else
    a.weights.clear();
  counted_ = 0;
  counted_weight_ = 0;
  for (int64_t t = 0; t < N; ++t) {
    counted_ += targets[t] >= 0;
    if (targets[t] >= 0) counted_weight_ += weights ? weights[t] : 1.0;
  }
  ForwardLayers();
  const float* head = config_.tie_word_embeddings ? params_.data() : At(params_, tensors_.back().offset);
  Project(a.logits.data(), a.final_xn.data(), head, N, C, V);
  const float* w = a.weights.empty() ? nullptr : a.weights.data();
  const double loss = CrossEntropyForward(a.losses.data(), a.logits.data(), a.targets.data(), w, N, V);
  // The regularizer weighs each token by its NLL, so it follows the loss.
  routing_.tokens = N;
  routing_.regularizer = 0;
  for (int32_t r = 0; r < n_routed_; ++r) {
    const RoutedBranches br = Branches(r);
    routing_.regularizer += RouterRegularizerForward(At(a.gamma, r * N), At(a.router_logit, r * N), a.losses.data(),
                                                     a.targets.data(), br.out_full, br.out_window, router_reg_, N, QD);
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
  const int64_t N = a.batch * a.seq, T = a.seq, H = config_.n_heads, KV = config_.n_kv_heads;
  const int64_t D = config_.head_dim, F = FeatureDim(config_), P = 2 * F;
  const int64_t i = linear_index_[size_t(l)];
  const LayerParams p = Layer(params_, l);
  float* phi_q = At(a.phi_q, i * N * H * P);
  float* phi_k = At(a.phi_k, i * N * KV * P);
  float* norm = At(a.lin_norm, i * N * H);
  HedgehogForward(phi_q, q, p.fq_w, p.fq_b, N, {int32_t(H), int32_t(D), int32_t(F)});
  HedgehogForward(phi_k, k, p.fk_w, p.fk_b, N, {int32_t(KV), int32_t(D), int32_t(F)});
  const LinearAttentionShape shape{int32_t(H), int32_t(KV), int32_t(D), int32_t(P)};
  const int32_t window = plan_.layers[size_t(l)].span.window;           // > 0: LoLCATs' hybrid
  const std::vector<float> factor = WindowFactors(p.window_factor, H);  // [H] γ
  const AttentionTimer timer;
  for (int64_t b = 0; b < a.batch; ++b) {  // each sequence from an empty state
    if (window > 0) {
      LinearWindowForward(out + b * T * H * D, norm + b * T * H, q + b * T * H * D, k + b * T * KV * D,
                          v + b * T * KV * D, phi_q + b * T * H * P, phi_k + b * T * KV * P, factor.data(), T, shape,
                          window);
      continue;
    }
    LinearState state;
    state.Reset(shape);
    LinearAttend(out + b * T * H * D, norm + b * T * H, state, phi_q + b * T * H * P, phi_k + b * T * KV * P,
                 v + b * T * KV * D, T, shape);
  }
}

void TrainModel::LinearAttentionBackward(int32_t l, const float* d_out, const float* out, const float* q,
                                         const float* k, const float* v, float* dq, float* dk, float* dv,
                                         const LayerParams& g) {
  Activations& a = acts_;
  Scratch& s = scratch_;
  const int64_t N = a.batch * a.seq, T = a.seq, H = config_.n_heads, KV = config_.n_kv_heads;
  const int64_t D = config_.head_dim, F = FeatureDim(config_), P = 2 * F;
  const int64_t i = linear_index_[size_t(l)];
  const LayerParams p = Layer(params_, l);
  const float* phi_q = At(a.phi_q, i * N * H * P);
  const float* phi_k = At(a.phi_k, i * N * KV * P);
  const float* norm = At(a.lin_norm, i * N * H);
  const LinearAttentionShape shape{int32_t(H), int32_t(KV), int32_t(D), int32_t(P)};
  const int32_t window = plan_.layers[size_t(l)].span.window;  // > 0: LoLCATs' hybrid
  const bool hybrid = window > 0;
  const std::vector<float> factor = WindowFactors(p.window_factor, H);  // [H] γ
  std::vector<float> d_factor(static_cast<size_t>(H), 0.0f);            // [H] dγ
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
  const int64_t batch = a.batch, seq = a.seq, N = batch * seq, C = config_.hidden_size;
  const int64_t F = config_.intermediate_size, V = config_.vocab_size;
  const int64_t QD = QDim(config_), KD = KvDim(config_), H = config_.n_heads, KV = config_.n_kv_heads;
  const int64_t D = config_.head_dim;
  const float eps = float(config_.rms_norm_eps);
  if (matmul_ == MatmulPrecision::kBF16 && params16_stale_) RefreshBF16Params();
  std::vector<float> norm_w;  // [C or D] a norm's applied weight (NormWeight)
  const bool sandwich = spec_.sandwich_norms;

  EmbeddingForward(a.residual.data(), a.tokens.data(), params_.data(), N, V, C);
  if (embed_scale_ != 1.0f)
    for (int64_t i = 0; i < N * C; ++i) a.residual[size_t(i)] *= embed_scale_;
  transfer_loss_ = 0;
  for (int32_t l = 0; l < config_.n_layers; ++l) {
    const LayerParams p = Layer(params_, l);
    float* res = At(a.residual, l * N * C);
    float* xn = At(a.attn_xn, l * N * C);
    float* q = At(a.q, l * N * QD);
    float* k = At(a.k, l * N * KD);
    float* v = At(a.v, l * N * KD);
    float* att = At(a.att, l * N * QD);
    float* mid = At(a.attn_mid, l * N * C);
    // Attention branch.
    RmsNorm(xn, res, NormWeight(p.attn_norm, C, norm_w), eps, N, C, At(a.attn_rstd, l * N));
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
    if (p.q_norm) {  // QK-norm: each head's vector is one RMSNorm row
      float* q_raw = At(a.q_raw, l * N * QD);
      float* k_raw = At(a.k_raw, l * N * KD);
      std::copy(q, q + N * QD, q_raw);
      std::copy(k, k + N * KD, k_raw);
      RmsNorm(q, q_raw, NormWeight(p.q_norm, D, norm_w), eps, N * H, D, At(a.q_rstd, l * N * H));
      RmsNorm(k, k_raw, NormWeight(p.k_norm, D, norm_w), eps, N * KV, D, At(a.k_rstd, l * N * KV));
    }
    for (int64_t b = 0; b < batch; ++b) {
      RopeForward(q + b * seq * QD, ropes_[size_t(l)], a.pos.data(), seq, config_.n_heads);
      RopeForward(k + b * seq * KD, ropes_[size_t(l)], a.pos.data(), seq, config_.n_kv_heads);
    }
    const SequenceAttention sa = LayerAttention(l, batch, seq, a.pos.data());
    if (r >= 0) {
      RoutedAttentionForward(att, Branches(r), logit, q, k, v, sa);
      int64_t full = 0;
      for (int64_t t = 0; t < N; ++t) full += RoutesFull(logit[t]);
      routing_.full_tokens[size_t(l)] = full;
    } else if (!head_gates_.empty()) {
      HeadGatedAttentionForward(att, Branches(l), &head_gates_[size_t(l) * config_.n_kv_heads], q, k, v, sa);
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
    BranchForward(mid, res, att, p.wo, QD, p.post_attn_norm, sandwich ? At(a.attn_out, l * N * C) : nullptr,
                  sandwich ? At(a.attn_out_rstd, l * N) : nullptr);
    // MLP branch.
    float* mxn = At(a.mlp_xn, l * N * C);
    float* gate = At(a.gate, l * N * F);
    float* up = At(a.up, l * N * F);
    float* act = At(a.act, l * N * F);
    float* next = At(a.residual, (l + 1) * N * C);
    RmsNorm(mxn, mid, NormWeight(p.mlp_norm, C, norm_w), eps, N, C, At(a.mlp_rstd, l * N));
    Project(gate, mxn, p.w_gate, N, C, F);
    Project(up, mxn, p.w_up, N, C, F);
    GateForward(act, gate, up, N * F);
    BranchForward(next, mid, act, p.w_down, F, p.post_mlp_norm, sandwich ? At(a.mlp_out, l * N * C) : nullptr,
                  sandwich ? At(a.mlp_out_rstd, l * N) : nullptr);
  }
  const float* final_norm = At(params_, tensor("model.norm.weight").offset);
  RmsNorm(a.final_xn.data(), At(a.residual, config_.n_layers * N * C), NormWeight(final_norm, C, norm_w), eps, N, C,
          a.final_rstd.data());
}

std::vector<double> TrainModel::AttentionWeights(int32_t layer, int32_t head, int64_t query) const {
  const Activations& a = acts_;
  if (a.batch == 0 || layer < 0 || layer >= config_.n_layers || head < 0 || head >= config_.n_heads || query < 0 ||
      query >= a.seq)
    throw std::out_of_range("AttentionWeights: no such layer, head or query in the last Forward");
  const int64_t N = a.batch * a.seq, D = config_.head_dim, QD = QDim(config_), KD = KvDim(config_);
  const int32_t kv_head = head / (config_.n_heads / config_.n_kv_heads);
  const LayerPlan& lp = plan_.layers[size_t(layer)];
  const Span span = lp.kind == LayerKind::kRouted ? Span{} : lp.HeadSpan(kv_head);
  const float* q = a.q.data() + layer * N * QD + query * QD + head * D;  // sequence 0
  std::vector<double> w(size_t(query + 1), 0.0);                         // [query + 1]
  double max_logit = -1e300;
  for (int64_t k = 0; k <= query; ++k) {
    if (!Sees(span, query, k)) continue;
    const float* key = a.k.data() + layer * N * KD + k * KD + kv_head * D;
    double dot = 0;
    for (int64_t d = 0; d < D; ++d) dot += double(q[d]) * key[d];
    w[size_t(k)] = dot * (attention_scale_ > 0 ? double(attention_scale_) : 1.0 / std::sqrt(double(D)));
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
  const int64_t N = a.batch * a.seq, C = config_.hidden_size, V = config_.vocab_size;
  const bool frozen = !head_gates_.empty();
  if (transfer_) return BackwardTransfer(loss_scale);
  // Loss -> logits -> final norm, in reverse order of the forward.
  CrossEntropyBackward(a.logits.data(), a.logits.data(), a.targets.data(),
                       a.weights.empty() ? nullptr : a.weights.data(), loss_scale, N, V);
  const ParamTensor& norm_t = tensor("model.norm.weight");
  const int64_t head_offset = config_.tie_word_embeddings ? 0 : tensors_.back().offset;
  ProjectBackward(s.d_xn.data(), frozen ? nullptr : At(grads_, head_offset), a.logits.data(), a.final_xn.data(),
                  At(params_, head_offset), N, C, V, false);
  std::vector<float> norm_w;  // [C]
  RmsNormBackward(s.d_res.data(), frozen ? nullptr : At(grads_, norm_t.offset), s.d_xn.data(),
                  At(a.residual, config_.n_layers * N * C), a.final_rstd.data(),
                  NormWeight(At(params_, norm_t.offset), C, norm_w), N, C, /*accumulate_dx=*/false);
  BackwardLayers(loss_scale);
}

void TrainModel::BackwardTransfer(float loss_scale) {
  // d(counted weight x Σ_l mean squared distance) x loss_scale, so that the
  // trainer's 1 / (weight of the step) gives the weighted mean over micro-batches.
  Activations& a = acts_;
  const int64_t N = a.batch * a.seq, QD = QDim(config_), KD = KvDim(config_);
  const double scale = 2.0 * counted_weight_ * loss_scale / double(N * QD);
  std::vector<float> d_lin(size_t(N * QD));  // [N, H*D]
  for (int32_t l = 0; l < config_.n_layers; ++l) {
    const int32_t i = linear_index_[size_t(l)];
    if (i < 0) continue;
    const float* lin = At(a.lin_out, i * N * QD);
    const float* att = At(a.att, l * N * QD);
    for (int64_t e = 0; e < N * QD; ++e) d_lin[size_t(e)] = float(scale * (double(lin[e]) - att[e]));
    LinearAttentionBackward(l, d_lin.data(), lin, At(a.q, l * N * QD), At(a.k, l * N * KD), At(a.v, l * N * KD),
                            nullptr, nullptr, nullptr, Layer(grads_, l));
  }
}

void TrainModel::BackwardHidden(const float* d_hidden) {
  Activations& a = acts_;
  if (a.batch == 0) throw std::logic_error("BackwardHidden before a forward pass");
  const int64_t N = a.batch * a.seq, C = config_.hidden_size;
  const bool frozen = !head_gates_.empty();
  const ParamTensor& norm_t = tensor("model.norm.weight");
  std::vector<float> norm_w;  // [C]
  RmsNormBackward(scratch_.d_res.data(), frozen ? nullptr : At(grads_, norm_t.offset), d_hidden,
                  At(a.residual, config_.n_layers * N * C), a.final_rstd.data(),
                  NormWeight(At(params_, norm_t.offset), C, norm_w), N, C, /*accumulate_dx=*/false);
  BackwardLayers(0.0f);
}

void TrainModel::BackwardLayers(float loss_scale) {
  Activations& a = acts_;
  Scratch& s = scratch_;
  const int64_t batch = a.batch, seq = a.seq, N = batch * seq, C = config_.hidden_size;
  const int64_t F = config_.intermediate_size, QD = QDim(config_), KD = KvDim(config_);
  const int64_t H = config_.n_heads, KV = config_.n_kv_heads, D = config_.head_dim, L = config_.n_layers;
  const bool frozen = !head_gates_.empty();  // gates only: no weight gradients
  const ParamTensor& norm_t = tensor("model.norm.weight");
  std::vector<float> norm_w;  // [C or D] a norm's applied weight (NormWeight)
  for (int32_t l = int32_t(L) - 1; l >= 0; --l) {
    const LayerParams p = Layer(params_, l);
    const LayerParams g = frozen ? LayerParams{} : Layer(grads_, l);
    // MLP branch: next = mid + act · w_downᵀ, or + norm(act · w_downᵀ).
    const float* d_mlp_out =
        BranchBackward(p.post_mlp_norm, g.post_mlp_norm, p.post_mlp_norm ? At(a.mlp_out, l * N * C) : nullptr,
                       p.post_mlp_norm ? At(a.mlp_out_rstd, l * N) : nullptr);
    ProjectBackward(s.d_act.data(), g.w_down, d_mlp_out, At(a.act, l * N * F), p.w_down, N, F, C, false);
    GateBackward(s.d_gate.data(), s.d_up.data(), s.d_act.data(), At(a.gate, l * N * F), At(a.up, l * N * F), N * F);
    const float* mxn = At(a.mlp_xn, l * N * C);
    ProjectBackward(s.d_xn.data(), g.w_gate, s.d_gate.data(), mxn, p.w_gate, N, C, F, false);
    ProjectBackward(s.d_xn.data(), g.w_up, s.d_up.data(), mxn, p.w_up, N, C, F, true);
    RmsNormBackward(s.d_res.data(), g.mlp_norm, s.d_xn.data(), At(a.attn_mid, l * N * C), At(a.mlp_rstd, l * N),
                    NormWeight(p.mlp_norm, C, norm_w), N, C, /*accumulate_dx=*/true);
    // Attention branch: mid = res + att · woᵀ, or + norm(att · woᵀ).
    const float* d_attn_out =
        BranchBackward(p.post_attn_norm, g.post_attn_norm, p.post_attn_norm ? At(a.attn_out, l * N * C) : nullptr,
                       p.post_attn_norm ? At(a.attn_out_rstd, l * N) : nullptr);
    const float* att = At(a.att, l * N * QD);
    ProjectBackward(s.d_att.data(), g.wo, d_attn_out, att, p.wo, N, QD, C, false);
    const float* q = At(a.q, l * N * QD);
    const float* k = At(a.k, l * N * KD);
    const float* v = At(a.v, l * N * KD);
    const SequenceAttention sa = LayerAttention(l, batch, seq, a.pos.data());
    const int32_t r = routed_index_[size_t(l)];
    const float* logit = r >= 0 ? At(a.router_logit, r * N) : nullptr;
    if (r >= 0) {
      RoutedAttentionBackward(s.dq.data(), s.dk.data(), s.dv.data(), s.d_logit.data(), s.d_att.data(), Branches(r),
                              logit, q, k, v, sa);
      RouterRegularizerBackward(s.d_logit.data(), At(a.gamma, r * N), logit, loss_scale, N);
    } else if (linear_index_[size_t(l)] >= 0) {
      LinearAttentionBackward(l, s.d_att.data(), att, q, k, v, s.dq.data(), s.dk.data(), s.dv.data(), g);
    } else if (frozen) {
      HeadGatedAttentionBackward(s.dq.data(), s.dk.data(), s.dv.data(), &head_gate_grads_[size_t(l * KV)],
                                 s.d_att.data(), Branches(l), &head_gates_[size_t(l * KV)], q, k, v, sa);
    } else {
      AttentionBackward(s.dq.data(), s.dk.data(), s.dv.data(), s.d_att.data(), att, At(a.lse, l * N * H), q, k, v, sa);
    }
    for (int64_t b = 0; b < batch; ++b) {
      RopeBackward(s.dq.data() + b * seq * QD, ropes_[size_t(l)], a.pos.data(), seq, config_.n_heads);
      RopeBackward(s.dk.data() + b * seq * KD, ropes_[size_t(l)], a.pos.data(), seq, config_.n_kv_heads);
    }
    if (p.q_norm) {  // back through the QK-norms: dq, dk become the raw q's and k's
      RmsNormBackward(s.d_raw.data(), g.q_norm, s.dq.data(), At(a.q_raw, l * N * QD), At(a.q_rstd, l * N * H),
                      NormWeight(p.q_norm, D, norm_w), N * H, D, false);
      std::copy(s.d_raw.begin(), s.d_raw.begin() + N * QD, s.dq.begin());
      RmsNormBackward(s.d_raw.data(), g.k_norm, s.dk.data(), At(a.k_raw, l * N * KD), At(a.k_rstd, l * N * KV),
                      NormWeight(p.k_norm, D, norm_w), N * KV, D, false);
      std::copy(s.d_raw.begin(), s.d_raw.begin() + N * KD, s.dk.begin());
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
    RmsNormBackward(s.d_res.data(), g.attn_norm, s.d_xn.data(), At(a.residual, l * N * C), At(a.attn_rstd, l * N),
                    NormWeight(p.attn_norm, C, norm_w), N, C, /*accumulate_dx=*/true);
    if (grads_ready_ && !frozen) {
      const int64_t first = tensors_[layer_first_[size_t(l)]].offset;
      const int64_t end = l + 1 < L ? tensors_[layer_first_[size_t(l) + 1]].offset : norm_t.offset;
      grads_ready_(first, end - first);
    }
  }
  if (frozen) return;
  if (embed_scale_ != 1.0f)
    for (float& d : s.d_res) d *= embed_scale_;
  EmbeddingBackward(grads_.data(), s.d_res.data(), a.tokens.data(), N, C);
  if (grads_ready_) {
    // With tied embeddings lm_head's gradient is the embedding's, final only now.
    grads_ready_(0, tensors_.front().numel);
    grads_ready_(norm_t.offset, num_params() - norm_t.offset);
  }
}

std::string TrainModel::FirstNonFinite() const {
  const Activations& a = acts_;
  const int64_t N = a.batch * a.seq, C = config_.hidden_size;
  if (N == 0) return "";
  if (!AllFinite(a.residual.data(), N * C)) return "embedding";
  for (int32_t l = 0; l < config_.n_layers; ++l) {
    const int32_t r = routed_index_[size_t(l)];
    if (r >= 0 && !AllFinite(a.router_logit.data() + r * N, N)) return "layer " + std::to_string(l) + " router";
    if (!AllFinite(a.attn_mid.data() + l * N * C, N * C)) return "layer " + std::to_string(l) + " attention";
    if (!AllFinite(a.residual.data() + (l + 1) * N * C, N * C)) return "layer " + std::to_string(l) + " mlp";
  }
  if (!AllFinite(a.losses.data(), N)) return "final norm / lm_head";
  return "";
}

}  // namespace swan
