#include "model/blocks.h"

#include <vector>

#include "model/cache_positions.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"

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
  MatmulTransB(q.data(), xn, layer.weights->q, {n, q_dim, sizes.hidden});
  MatmulTransB(k.data(), xn, layer.weights->k, {n, kv_dim, sizes.hidden});
  MatmulTransB(v.data(), xn, layer.weights->v, {n, kv_dim, sizes.hidden});
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
  MatmulTransB(residual, out.data(), layer.weights->o, {n, sizes.hidden, q_dim}, /*accumulate=*/true);
}

void SwiGluBlock(float* residual, const float* xn, int64_t n, const MlpWeights& w,
                 const BlockSizes& sizes) {
  const int64_t inter = sizes.intermediate;
  std::vector<float> gate(size_t(n * inter));  // [n, intermediate]
  std::vector<float> up(size_t(n * inter));    // [n, intermediate]
  MatmulTransB(gate.data(), xn, w.gate, {n, inter, sizes.hidden});
  MatmulTransB(up.data(), xn, w.up, {n, inter, sizes.hidden});
  SiluMul(gate.data(), gate.data(), up.data(), n * inter);
  MatmulTransB(residual, gate.data(), w.down, {n, sizes.hidden, inter}, /*accumulate=*/true);
}

}  // namespace swan
