// Matrix-vector products for decode: y [m, n] = x [m, k] · wᵀ for a few
// rows m (one new token per sequence, or a few for speculative decoding).
// With m that small the product reads every weight once and does 2 m flops
// per weight, so it is bound by memory bandwidth, not arithmetic: this
// kernel streams w once for all m rows (Highway SIMD, OpenMP over output
// rows; at m = 1 each thread reads 8 distant runs of rows at once, which
// streams faster than one run), where oneDNN's GEMM manages ~10% of the
// bandwidth at m = 1. bench/gemv_bench measures it against the bandwidth.
#pragma once

#include <cstdint>

#include "ops/weight_view.h"

namespace swan {

// y = x · wᵀ (or y += with accumulate).  y [m, n], x [m, k], 1 <= m.
// Efficient for m <= 8; larger m work but belong to a GEMM. f16 and bf16
// are promoted in registers; the block types go to BlockProduct
// (ops/block_product.h), which multiplies in integers.
// Throws std::invalid_argument on bad sizes or null pointers.
void Gemv(float* y, const float* x, const WeightView& w, int64_t m, bool accumulate = false);

// Several products of one input x [m, k] in one parallel region: outs[i].y
// [m, outs[i].w.n] = x · outs[i].w ᵀ (q, k and v of a layer; gate and up).
// Float weights only (f32, bf16, f16): the block formats go to
// BlockProducts. Throws std::invalid_argument as Gemv does, or when the
// inputs' lengths differ.
struct GemvOutput {
  float* y;      // [m, w.n]
  WeightView w;  // [n, k]
};
void Gemvs(const float* x, int64_t m, const GemvOutput* outs, int64_t count, bool accumulate = false);

// Double-accumulation loops, for tests (over the values the kernel
// multiplies: for the block formats, x quantized as QuantizeInput does).
void GemvReference(float* y, const float* x, const WeightView& w, int64_t m, bool accumulate = false);

}  // namespace swan
