// Matrix products through oneDNN (2.6, pre-3.0 API), float32.
//
// The layout of every linear layer in a Hugging Face checkpoint:
//   y [m, n] = x [m, k] · wᵀ,   w [n, k] row-major (nn.Linear.weight).
// oneDNN primitives are built once per (m, n, k, accumulate) and cached.
#pragma once

#include <cstdint>

namespace swan {

struct MatmulShape {
  int64_t m = 0;    // rows of x and y (tokens)
  int64_t n = 0;    // output features (rows of w)
  int64_t k = 0;    // input features
  int64_t ldy = 0;  // y's row stride, >= n: columns of a wider y; 0 = n
};

// y = x · wᵀ (accumulate = false) or y += x · wᵀ (accumulate = true).
//   y [m, ldy] (columns [0, n) written), x [m, k], w [n, k]
// Thread-safe. Throws std::invalid_argument on non-positive sizes.
void MatmulTransB(float* y, const float* x, const float* w, const MatmulShape& shape, bool accumulate = false);

// The same with x and w in bfloat16 (raw bits), y in float32: oneDNN's bf16
// path where the CPU has one (AVX-512), else swan's own (ops/bf16_gemm.h).
//   y [m, n] float32, x [m, k] bf16, w [n, k] bf16
void MatmulTransBBF16(float* y, const uint16_t* x, const uint16_t* w, const MatmulShape& shape,
                      bool accumulate = false);

// The plain triple loop (double accumulation), for tests.
void MatmulTransBReference(float* y, const float* x, const float* w, const MatmulShape& shape, bool accumulate = false);

}  // namespace swan
