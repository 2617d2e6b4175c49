// The shared pieces that architecture families assemble: a self-attention
// block (QKV projections, RoPE, KV cache, attention, output projection) and
// a SwiGLU MLP block. Both add their result into the residual stream.
#pragma once

#include <cstdint>

#include "attention/attention.h"
#include "kv/kv_cache.h"
#include "ops/linear.h"
#include "model/plan.h"
#include "ops/rope.h"

namespace swan {

// Linear weights in nn.Linear layout [out, in], f32 or bf16.
struct AttentionWeights {
  LinearWeight q;  // [n_heads * head_dim, hidden]
  LinearWeight k;  // [n_kv_heads * head_dim, hidden]
  LinearWeight v;  // [n_kv_heads * head_dim, hidden]
  LinearWeight o;  // [hidden, n_heads * head_dim]
};

struct MlpWeights {
  LinearWeight gate;  // [intermediate, hidden]
  LinearWeight up;    // [intermediate, hidden]
  LinearWeight down;  // [hidden, intermediate]
};

struct BlockSizes {
  int64_t hidden = 0;
  int64_t intermediate = 0;
  AttentionShape heads;
};

// What the attention block of one layer runs with.
struct AttentionLayer {
  const AttentionWeights* weights = nullptr;
  const Rope* rope = nullptr;
  Span span;
  LayerKvCache* cache = nullptr;
  PositionMode position_mode = PositionMode::kAbsolute;
};

// residual += o_proj(attention(rope(q_proj(xn)), cache ∪ rope(k_proj(xn)), v_proj(xn)))
// (HF LlamaAttention; keys and values of the n tokens are written into the
// cache first, so the chunk's queries see each other causally).
//   residual, xn [n, hidden]; pos [n]
void AttentionBlock(float* residual, const float* xn, const int32_t* pos, int64_t n,
                    const AttentionLayer& layer, const BlockSizes& sizes);

// residual += down(silu(gate(xn)) * up(xn))   (HF LlamaMLP)
//   residual, xn [n, hidden]
void SwiGluBlock(float* residual, const float* xn, int64_t n, const MlpWeights& w,
                 const BlockSizes& sizes);

}  // namespace swan
