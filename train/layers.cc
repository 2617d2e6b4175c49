#include "train/layers.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/backward.h"
#include "attention/head_groups.h"
#include "ops/gemm.h"

namespace swan {

// --- embedding ---------------------------------------------------------------

void EmbeddingForward(float* out, const int32_t* ids, const float* table, int64_t n, int64_t vocab, int64_t dim) {
  for (int64_t t = 0; t < n; ++t) {
    if (ids[t] < 0 || ids[t] >= vocab)
      throw std::out_of_range("token id " + std::to_string(ids[t]) + " outside the vocabulary [0, " +
                              std::to_string(vocab) + ")");
    std::memcpy(out + t * dim, table + int64_t(ids[t]) * dim, size_t(dim) * sizeof(float));
  }
}

void EmbeddingBackward(float* d_table, const float* d_out, const int32_t* ids, int64_t n, int64_t dim) {
  for (int64_t t = 0; t < n; ++t) {
    float* row = d_table + int64_t(ids[t]) * dim;
    const float* g = d_out + t * dim;
    for (int64_t i = 0; i < dim; ++i) row[i] += g[i];
  }
}

// --- RMSNorm -------------------------------------------------------------------

// --- linear --------------------------------------------------------------------

void LinearForward(float* y, const float* x, const float* w, int64_t n, int64_t in, int64_t out, bool accumulate_y) {
  Gemm(y, x, w, GemmShape{n, out, in, false, true}, accumulate_y);
}

void LinearBackward(float* dx, float* d_w, const float* dy, const float* x, const float* w, int64_t n, int64_t in,
                    int64_t out, bool accumulate_dx) {
  // dx [n, in] = dy [n, out] · w [out, in]
  if (dx) Gemm(dx, dy, w, GemmShape{n, in, out, false, false}, accumulate_dx);
  // d_w [out, in] += dyᵀ [out, n] · x [n, in]
  if (d_w) Gemm(d_w, dy, x, GemmShape{out, in, n, true, false}, /*accumulate=*/true);
}

namespace {

// The bf16 copy of an activation for one product, in a buffer per slot that
// grows to the largest activation seen and is reused (the lm_head's d_logits
// [n, vocab] is the largest), so a training step allocates nothing.
const uint16_t* ToBF16Scratch(int slot, const float* x, int64_t count) {
  thread_local std::vector<uint16_t> scratch[2];  // [slot][count]
  std::vector<uint16_t>& buffer = scratch[slot];
  if (int64_t(buffer.size()) < count) buffer.resize(size_t(count));
  ConvertToBF16(buffer.data(), x, count);
  return buffer.data();
}

}  // namespace

void LinearForwardBF16(float* y, const float* x, const uint16_t* w16, int64_t n, int64_t in, int64_t out,
                       bool accumulate_y) {
  const uint16_t* x16 = ToBF16Scratch(0, x, n * in);  // [n, in]
  GemmBF16(y, x16, w16, GemmShape{n, out, in, false, true}, accumulate_y);
}

void LinearBackwardBF16(float* dx, float* d_w, const float* dy, const float* x, const uint16_t* w16, int64_t n,
                        int64_t in, int64_t out, bool accumulate_dx) {
  const uint16_t* dy16 = ToBF16Scratch(0, dy, n * out);  // [n, out], read by both products
  if (dx) GemmBF16(dx, dy16, w16, GemmShape{n, in, out, false, false}, accumulate_dx);
  if (!d_w) return;
  const uint16_t* x16 = ToBF16Scratch(1, x, n * in);  // [n, in]
  GemmBF16(d_w, dy16, x16, GemmShape{out, in, n, true, false}, /*accumulate=*/true);
}

const char* MatmulPrecisionName(MatmulPrecision p) { return p == MatmulPrecision::kBF16 ? "bf16" : "f32"; }

MatmulPrecision ParseMatmulPrecision(const std::string& name) {
  if (name == "f32") return MatmulPrecision::kF32;
  if (name == "bf16") return MatmulPrecision::kBF16;
  throw std::invalid_argument("matrix product precision (--matmul) must be f32 or bf16, got '" + name + "'");
}

// --- RoPE ------------------------------------------------------------------------

void RopeForward(float* x, const Rope& rope, const int32_t* pos, int64_t n, int32_t heads) {
  rope.Apply(x, pos, n, heads);
}

void RopeBackward(float* dx, const Rope& rope, const int32_t* pos, int64_t n, int32_t heads) {
  std::vector<int32_t> neg(static_cast<size_t>(n));  // [n]
  for (int64_t t = 0; t < n; ++t) neg[size_t(t)] = -pos[t];
  rope.Apply(dx, neg.data(), n, heads);
}

// --- attention -----------------------------------------------------------------------

AttentionArgs SequenceArgs(const float* q, const float* k, const float* v, const SequenceAttention& a, int64_t b) {
  const int64_t q_row = int64_t(a.shape.n_heads) * a.shape.head_dim;
  const int64_t kv_row = int64_t(a.shape.n_kv_heads) * a.shape.head_dim;
  AttentionArgs args;
  args.shape = a.shape;
  args.q = q + b * a.seq * q_row;
  args.q_pos = a.pos;
  args.n_q = a.seq;
  args.kv.k = k + b * a.seq * kv_row;
  args.kv.v = v + b * a.seq * kv_row;
  args.kv.pos = a.pos;
  args.kv.n_rows = a.seq;
  args.scale = a.scale;
  args.kv.type = KvType::kF32;
  args.span = a.span;
  return args;
}

namespace {

std::atomic<int64_t> attention_ns{0};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

AttentionTimer::AttentionTimer() : start_ns_(NowNs()) {}
AttentionTimer::~AttentionTimer() { attention_ns += NowNs() - start_ns_; }

double AttentionSeconds() { return double(attention_ns.load()) * 1e-9; }
void ResetAttentionSeconds() { attention_ns = 0; }

void AttentionForward(float* out, float* lse, const float* q, const float* k, const float* v,
                      const SequenceAttention& a) {
  const AttentionTimer timer;
  const int64_t q_row = int64_t(a.shape.n_heads) * a.shape.head_dim;
  for (int64_t b = 0; b < a.batch; ++b) {
    const AttentionArgs args = SequenceArgs(q, k, v, a, b);
    float* out_b = out + b * a.seq * q_row;
    float* lse_b = lse + b * a.seq * a.shape.n_heads;
    if (a.head_spans.empty())
      Attend(args, out_b, lse_b);
    else
      AttendPerHead(args, a.head_spans, out_b, lse_b);
  }
}

void AttentionBackward(float* dq, float* dk, float* dv, const float* d_out, const float* out, const float* lse,
                       const float* q, const float* k, const float* v, const SequenceAttention& a) {
  const AttentionTimer timer;
  const int64_t q_row = int64_t(a.shape.n_heads) * a.shape.head_dim;
  const int64_t kv_row = int64_t(a.shape.n_kv_heads) * a.shape.head_dim;
  for (int64_t b = 0; b < a.batch; ++b) {
    AttentionSaved saved;
    saved.out = out + b * a.seq * q_row;
    saved.lse = lse + b * a.seq * a.shape.n_heads;
    saved.d_out = d_out + b * a.seq * q_row;
    AttentionGrads grads;
    grads.dq = dq + b * a.seq * q_row;
    grads.dk = dk + b * a.seq * kv_row;
    grads.dv = dv + b * a.seq * kv_row;
    if (a.head_spans.empty())
      AttendBackward(SequenceArgs(q, k, v, a, b), saved, grads);
    else
      AttendBackwardPerHead(SequenceArgs(q, k, v, a, b), a.head_spans, saved, grads);
  }
}

// --- cross-entropy -------------------------------------------------------------------

namespace {

double LogSumExp(const float* row, int64_t vocab) {
  float max = row[0];
  for (int64_t j = 1; j < vocab; ++j) max = row[j] > max ? row[j] : max;
  double sum = 0;
  for (int64_t j = 0; j < vocab; ++j) sum += double(std::exp(row[j] - max));  // expf, double sum
  return double(max) + std::log(sum);
}

}  // namespace

double CrossEntropyForward(float* losses, const float* logits, const int32_t* targets, const float* weights, int64_t n,
                           int64_t vocab) {
  double total = 0, weight_sum = 0;
#pragma omp parallel for reduction(+ : total, weight_sum) if (n > 16)
  for (int64_t t = 0; t < n; ++t) {
    if (targets[t] < 0) {
      losses[t] = 0;
      continue;
    }
    const float* row = logits + t * vocab;
    const double loss = LogSumExp(row, vocab) - double(row[targets[t]]);
    const double w = weights ? weights[t] : 1.0;
    losses[t] = float(loss);
    total += w * loss;
    weight_sum += w;
  }
  return weight_sum > 0 ? total / weight_sum : 0.0;
}

void CrossEntropyBackward(float* d_logits, const float* logits, const int32_t* targets, const float* weights,
                          float d_loss, int64_t n, int64_t vocab) {
#pragma omp parallel for if (n > 16)
  for (int64_t t = 0; t < n; ++t) {
    const float* row = logits + t * vocab;
    float* d = d_logits + t * vocab;
    const float scale = d_loss * (weights ? weights[t] : 1.0f);
    if (targets[t] < 0 || scale == 0) {
      for (int64_t j = 0; j < vocab; ++j) d[j] = 0;
      continue;
    }
    const float lse = float(LogSumExp(row, vocab));
    for (int64_t j = 0; j < vocab; ++j) d[j] = std::exp(row[j] - lse) * scale;
    d[targets[t]] -= scale;
  }
}

}  // namespace swan
