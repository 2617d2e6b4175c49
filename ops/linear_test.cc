#include "ops/linear.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "util/bf16.h"
#include "util/f16.h"

namespace swan {
namespace {

// Every path of Linear (GEMV for few rows, oneDNN f32 and bf16 for many,
// f16 widened in blocks of 256 rows: 300 rows take two)
// against double loops over the values the kernel actually multiplies.
TEST(Linear, EveryPathMatchesTheReference) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal;
  const int64_t out = 300, in = 130;
  std::vector<float> w(size_t(out * in));  // [out, in]
  for (auto& e : w) e = normal(rng);
  for (KvType type : {KvType::kF32, KvType::kBF16, KvType::kF16}) {
    const LinearWeight weight(w, out, in, type);
    for (int64_t m : {1, 3, 8, 9, 40}) {
      std::vector<float> x(size_t(m * in));  // [m, in]
      for (auto& e : x) e = normal(rng);
      std::vector<float> y(size_t(m * out), 0.5f);  // [m, out]
      Linear(y.data(), x.data(), m, weight, /*accumulate=*/true);
      // bf16 GEMM rounds x to bf16 too; GEMV keeps x in float32.
      const bool rounds_x = type == KvType::kBF16 && m > kGemvMaxRows;
      double worst = 0, scale = 0;
      for (int64_t r = 0; r < m; ++r)
        for (int64_t o = 0; o < out; ++o) {
          double ref = 0.5;
          for (int64_t c = 0; c < in; ++c) {
            const float wf = w[size_t(o * in + c)];
            const double wv = type == KvType::kBF16  ? BF16ToF32(F32ToBF16(wf))
                              : type == KvType::kF16 ? F16ToF32(F32ToF16(wf))
                                                     : wf;
            const float xf = x[size_t(r * in + c)];
            ref += wv * (rounds_x ? BF16ToF32(F32ToBF16(xf)) : xf);
          }
          worst = std::max(worst, std::fabs(ref - y[size_t(r * out + o)]));
          scale = std::max(scale, std::fabs(ref));
        }
      EXPECT_LE(worst / scale, 1e-5) << "m " << m << " type " << int(type);
    }
  }
  EXPECT_EQ(LinearWeight(w, out, in, KvType::kBF16).Bytes(), size_t(out * in * 2));
  EXPECT_THROW(LinearWeight(w, out + 1, in), std::invalid_argument);
}

}  // namespace
}  // namespace swan
