#include "model/blocks.h"

#include <algorithm>
#include <vector>

#include "model/cache_positions.h"
#include "ops/elementwise.h"
#include "ops/linear.h"

namespace swan {

void AttentionBlock(float* residual, const float* xn, const int32_t* pos, int64_t n,
                    const AttentionLayer& layer, const BlockSizes& sizes) {
  const AttentionShape& h = sizes.heads;
  const int64_t q_dim = int64_t(h.n_heads) * h.head_dim;
  const int64_t kv_dim = int64_t(h.n_kv_heads) * h.head_dim;
  std::vector<float> q(size_t(n * q_dim));    // [n, n_heads, head_dim]
  std::vector<float> k(size_t(n * kv_dim));   // [n, n_kv_heads, head_dim]
  std::vector<float> v(size_t(n * kv_dim));   // [n, n_kv_heads, head_dim]
  std::vector<float> out(size_t(n * q_dim));  // [n, n_heads, head_dim]
  Linear(q.data(), xn, n, layer.weights->q);
  Linear(k.data(), xn, n, layer.weights->k);
  Linear(v.data(), xn, n, layer.weights->v);
  const AttentionWeights& w = *layer.weights;
  if (!w.q_bias.empty()) AddBias(q.data(), w.q_bias.data(), n, q_dim);
  if (!w.k_bias.empty()) AddBias(k.data(), w.k_bias.data(), n, kv_dim);
  if (!w.v_bias.empty()) AddBias(v.data(), w.v_bias.data(), n, kv_dim);
  // QK-norm: each head's vector is one RMSNorm row.
  if (!w.q_norm.empty())
    RmsNorm(q.data(), q.data(), w.q_norm.data(), layer.qk_norm_eps, n * h.n_heads, h.head_dim);
  if (!w.k_norm.empty())
    RmsNorm(k.data(), k.data(), w.k_norm.data(), layer.qk_norm_eps, n * h.n_kv_heads, h.head_dim);
  // Cache positions (StreamingLLM) rotate the queries a second way for the sinks.
  const bool cache_positions = layer.position_mode == PositionMode::kCache && layer.span.sinks > 0;
  std::vector<float> q_unrotated;  // [n, n_heads, head_dim] before RoPE
  if (cache_positions) q_unrotated = q;
  layer.rope->Apply(q.data(), pos, n, h.n_heads);
  layer.rope->Apply(k.data(), pos, n, h.n_kv_heads);
  layer.cache->Write(k.data(), v.data(), pos, n);

  AttentionArgs args;
  args.shape = h;
  args.q = q.data();
  args.q_pos = pos;
  args.n_q = n;
  args.kv = layer.cache->View();
  args.span = layer.span;
  args.scale = layer.scale;
  if (cache_positions) {
    AttendCachePositions(out.data(), args, q_unrotated.data(), *layer.rope);
  } else {
    Attend(args, out.data());
  }
  Linear(residual, out.data(), n, layer.weights->o, /*accumulate=*/true);
}

namespace {

using GateActivation = void (*)(float* out, const float* gate, const float* up, int64_t n);

// residual += down(activation(gate(xn)) * up(xn))
void GatedMlpBlock(float* residual, const float* xn, int64_t n, const MlpWeights& w,
                   const BlockSizes& sizes, GateActivation activation) {
  const int64_t inter = sizes.intermediate;
  std::vector<float> gate(size_t(n * inter));  // [n, intermediate]
  std::vector<float> up(size_t(n * inter));    // [n, intermediate]
  Linear(gate.data(), xn, n, w.gate);
  Linear(up.data(), xn, n, w.up);
  activation(gate.data(), gate.data(), up.data(), n * inter);
  Linear(residual, gate.data(), n, w.down, /*accumulate=*/true);
}

}  // namespace

void SwiGluBlock(float* residual, const float* xn, int64_t n, const MlpWeights& w,
                 const BlockSizes& sizes) {
  GatedMlpBlock(residual, xn, n, w, sizes, SiluMul);
}

void GeluTanhMlpBlock(float* residual, const float* xn, int64_t n, const MlpWeights& w,
                      const BlockSizes& sizes) {
  GatedMlpBlock(residual, xn, n, w, sizes, GeluTanhMul);
}

std::vector<float> GemmaNormWeight(std::vector<float> weight) {
  for (float& x : weight) x = 1.0f + x;
  return weight;
}

void ForwardInChunks(float* logits, const Batch& batch, int64_t max_chunk, int64_t vocab,
                     const std::function<void(float* logits, const Batch& part)>& chunk_forward) {
  for (int64_t start = 0; start < batch.n; start += max_chunk) {
    Batch part = batch;
    part.tokens = batch.tokens + start;
    part.pos = batch.pos + start;
    part.n = std::min(max_chunk, batch.n - start);
    const bool last = start + part.n == batch.n;
    if (!batch.all_logits) {
      part.all_logits = false;
      if (!last) {
        std::vector<float> unused(static_cast<size_t>(vocab));  // [1, vocab]
        chunk_forward(unused.data(), part);
        continue;
      }
    }
    chunk_forward(batch.all_logits ? logits + start * vocab : logits, part);
  }
}

}  // namespace swan
