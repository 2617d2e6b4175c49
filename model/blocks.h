// The shared pieces that architecture families assemble: a self-attention
// block (QKV projections, RoPE, KV cache, attention, output projection) and
// a gated MLP block (SwiGLU, GELU-tanh). Both add their result into the
// residual stream.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "attention/attention.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "model/plan.h"
#include "ops/linear.h"
#include "ops/rope.h"

namespace swan {

// Linear weights in nn.Linear layout [out, in], f32 or bf16.
struct AttentionWeights {
  LinearWeight q;  // [n_heads * head_dim, hidden]
  LinearWeight k;  // [n_kv_heads * head_dim, hidden]
  LinearWeight v;  // [n_kv_heads * head_dim, hidden]
  LinearWeight o;  // [hidden, n_heads * head_dim]
  // Optional (empty = none): q/k/v projection biases (Qwen2) and QK-norm
  // weights, an RMSNorm over each head of q and k before RoPE (Gemma 3;
  // store them as GemmaNormWeight() for Gemma's (1 + weight)).
  std::vector<float> q_bias;  // [n_heads * head_dim]
  std::vector<float> k_bias;  // [n_kv_heads * head_dim]
  std::vector<float> v_bias;  // [n_kv_heads * head_dim]
  std::vector<float> q_norm;  // [head_dim]
  std::vector<float> k_norm;  // [head_dim]
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
  float scale = 0.0f;        // attention logit scale; 0 = 1/sqrt(head_dim)
  float qk_norm_eps = 1e-6f;  // eps of the QK-norm, when the weights have one
};

// residual += o_proj(attention(rope(q_proj(xn)), cache ∪ rope(k_proj(xn)), v_proj(xn)))
// (HF LlamaAttention; keys and values of the n tokens are written into the
// cache first, so the chunk's queries see each other causally). With biases
// and QK-norm: q = rope(norm(q_proj(xn) + q_bias)), the same for k.
//   residual, xn [n, hidden]; pos [n]
void AttentionBlock(float* residual, const float* xn, const int32_t* pos, int64_t n,
                    const AttentionLayer& layer, const BlockSizes& sizes);

// residual += down(silu(gate(xn)) * up(xn))   (HF LlamaMLP)
//   residual, xn [n, hidden]
void SwiGluBlock(float* residual, const float* xn, int64_t n, const MlpWeights& w,
                 const BlockSizes& sizes);

// residual += down(gelu_tanh(gate(xn)) * up(xn))   (HF GemmaMLP, gelu_pytorch_tanh)
//   residual, xn [n, hidden]
void GeluTanhMlpBlock(float* residual, const float* xn, int64_t n, const MlpWeights& w,
                      const BlockSizes& sizes);

// Gemma's RMSNorm multiplies by (1 + weight), in float32 (HF Gemma3RMSNorm):
// RmsNorm() with the returned weight is that norm.
std::vector<float> GemmaNormWeight(std::vector<float> weight);

// Runs `chunk_forward` on pieces of at most `max_chunk` tokens of `batch`,
// in order, writing logits as Forward() promises (every row, or the last
// row only); pieces before the last get a scratch row when only the last
// row is wanted. logits [n, vocab] or [1, vocab].
void ForwardInChunks(float* logits, const Batch& batch, int64_t max_chunk, int64_t vocab,
                     const std::function<void(float* logits, const Batch& part)>& chunk_forward);

}  // namespace swan
