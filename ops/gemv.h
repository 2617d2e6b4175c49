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

#include "ops/weight_type.h"

namespace swan {

// A weight matrix in nn.Linear layout [n, k] row-major: f32, bf16, f16, or
// rows of Q8_0 / Q4_0 blocks (k a multiple of 32).
struct WeightView {
  const void* data = nullptr;  // [n, WeightRowBytes(type, k)] bytes
  WeightType type = WeightType::kF32;
  int64_t n = 0;  // output features (rows)
  int64_t k = 0;  // input features (columns)
};

// The input rows as the kernels read them: float32, and for the block
// formats also quantized per 32 values (QuantizeActivations), which lets
// them multiply in integers as llama.cpp's Q8_0 and Q4_0 dot products do.
struct GemvInput {
  const float* x = nullptr;    // [m, k]
  const int16_t* q = nullptr;  // [m, k] x / d, rounded, in [-127, 127]
  const float* d = nullptr;    // [m, k / 32] the scales
};

// y = x · wᵀ (or y += with accumulate).  y [m, n], x [m, k], 1 <= m.
// Efficient for m <= 8; larger m work but belong to a GEMM. Block formats
// are expanded in registers (int8 or nibbles times the block's scale).
// Throws std::invalid_argument on bad sizes or null pointers.
void Gemv(float* y, const float* x, const WeightView& w, int64_t m, bool accumulate = false);

// Double-accumulation loops, for tests (over the values the kernel
// multiplies: for the block formats, x quantized as Gemv quantizes it).
void GemvReference(float* y, const float* x, const WeightView& w, int64_t m,
                   bool accumulate = false);

}  // namespace swan
