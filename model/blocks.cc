#include "model/blocks.h"

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
  if (cache_positions) {
    AttendCachePositions(out.data(), args, q_unrotated.data(), *layer.rope);
  } else {
    Attend(args, out.data());
  }
  Linear(residual, out.data(), n, layer.weights->o, /*accumulate=*/true);
}

void SwiGluBlock(float* residual, const float* xn, int64_t n, const MlpWeights& w,
                 const BlockSizes& sizes) {
  const int64_t inter = sizes.intermediate;
  std::vector<float> gate(size_t(n * inter));  // [n, intermediate]
  std::vector<float> up(size_t(n * inter));    // [n, intermediate]
  Linear(gate.data(), xn, n, w.gate);
  Linear(up.data(), xn, n, w.up);
  SiluMul(gate.data(), gate.data(), up.data(), n * inter);
  Linear(residual, gate.data(), n, w.down, /*accumulate=*/true);
}

}  // namespace swan
