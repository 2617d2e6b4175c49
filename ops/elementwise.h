// Small per-token operations of a transformer block: plain loops, and the
// MLP gates vectorized with Highway (ops/gated_activations.cc).
#pragma once

#include <cstdint>

namespace swan {

// out[t] = x[t] * rstd[t] * weight, rstd[t] = 1 / sqrt(mean(x[t]²) + eps), per
// token t (HF LlamaRMSNorm: the weight multiplies after normalising; QK-norm
// is the same over [n * heads, head_dim]). out may equal x.
//   out, x [n_tokens, dim], weight [dim], rstd [n_tokens] (saved for the
//   backward; may be null)
void RmsNorm(float* out, const float* x, const float* weight, float eps, int64_t n_tokens, int64_t dim,
             float* rstd = nullptr);
// Its backward from the forward's x and rstd: dx [n, dim] (= or +=),
// d_weight [dim] (+=; null: a frozen weight).
void RmsNormBackward(float* dx, float* d_weight, const float* d_out, const float* x, const float* rstd,
                     const float* weight, int64_t n, int64_t dim, bool accumulate_dx);

// out = silu(gate) * up, elementwise; silu(g) = g / (1 + e^-g). out may alias gate.
//   out, gate, up [n]
void SiluMul(float* out, const float* gate, const float* up, int64_t n);
// Its backward: d_gate, d_up [n] (=).
void SiluMulBackward(float* d_gate, float* d_up, const float* d_out, const float* gate, const float* up, int64_t n);

// out = gelu_tanh(gate) * up, elementwise (Gemma's gelu_pytorch_tanh:
// gelu(g) = g/2 * (1 + tanh(sqrt(2/pi) * (g + 0.044715 g³)))). out may alias gate.
//   out, gate, up [n]
void GeluTanhMul(float* out, const float* gate, const float* up, int64_t n);
// Its backward: d_gate, d_up [n] (=).
void GeluTanhMulBackward(float* d_gate, float* d_up, const float* d_out, const float* gate, const float* up, int64_t n);

// x[t] += bias for each row t (an nn.Linear bias).
//   x [n_rows, dim], bias [dim]
void AddBias(float* x, const float* bias, int64_t n_rows, int64_t dim);
// Its backward: d_bias += the sum of dx over the rows.
//   d_bias [dim], dx [n_rows, dim]
void AddBiasBackward(float* d_bias, const float* dx, int64_t n_rows, int64_t dim);

}  // namespace swan
