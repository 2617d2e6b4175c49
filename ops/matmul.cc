#include "ops/matmul.h"

#include <stdexcept>
#include <string>

#include "ops/gemm.h"

namespace swan {
namespace {

void CheckShape(const MatmulShape& s) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0)
    throw std::invalid_argument("matmul sizes must be positive, got m=" + std::to_string(s.m) +
                                " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k));
  if (s.ldy != 0 && s.ldy < s.n)
    throw std::invalid_argument("matmul: y's row stride " + std::to_string(s.ldy) + " is below its " +
                                std::to_string(s.n) + " columns");
}

}  // namespace

// y = x · wᵀ is the general product with B = w stored transposed.
void MatmulTransB(float* y, const float* x, const float* w, const MatmulShape& shape, bool accumulate) {
  CheckShape(shape);
  Gemm(y, x, w, GemmShape{shape.m, shape.n, shape.k, false, true, shape.ldy}, accumulate);
}

void MatmulTransBBF16(float* y, const uint16_t* x, const uint16_t* w, const MatmulShape& shape, bool accumulate) {
  CheckShape(shape);
  GemmBF16(y, x, w, GemmShape{shape.m, shape.n, shape.k, false, true, shape.ldy}, accumulate);
}

void MatmulTransBReference(float* y, const float* x, const float* w, const MatmulShape& shape, bool accumulate) {
  CheckShape(shape);
  const int64_t ldy = shape.ldy != 0 ? shape.ldy : shape.n;
  for (int64_t i = 0; i < shape.m; ++i)
    for (int64_t j = 0; j < shape.n; ++j) {
      double acc = accumulate ? y[i * ldy + j] : 0.0;
      for (int64_t c = 0; c < shape.k; ++c) acc += double(x[i * shape.k + c]) * w[j * shape.k + c];
      y[i * ldy + j] = float(acc);
    }
}

}  // namespace swan
