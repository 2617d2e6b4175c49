#include "ops/linear.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ops/block_product.h"
#include "ops/gemm.h"
#include "util/bf16.h"
#include "util/f16.h"

namespace swan {
namespace {

// Every path of Linear (GEMV for few rows, oneDNN f32 and bf16 for many,
// f16 converted in one piece here (LargeF16MatrixInPanels has 17); Q8_0 and Q4_0 in
// integers, 300 rows being 18 groups of 16 and a part) against double loops
// over the values the kernel actually multiplies.
TEST(Linear, EveryPathMatchesTheReference) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal;
  const int64_t out = 300, in = 160;       // in: a multiple of the blocks' 32
  std::vector<float> w(size_t(out * in));  // [out, in]
  for (auto& e : w) e = normal(rng);
  for (WeightType type : {WeightType::kF32, WeightType::kBF16, WeightType::kF16, WeightType::kQ8_0, WeightType::kQ4_0,
                          WeightType::kQ4_1, WeightType::kQ5_0, WeightType::kQ5_1}) {
    const LinearWeight weight(w, out, in, type);
    const std::vector<float> stored = weight.ToF32();  // [out, in] the values multiplied
    for (int64_t m : {1, 3, 8, 9, 40}) {
      std::vector<float> x(size_t(m * in));  // [m, in]
      for (auto& e : x) e = normal(rng);
      std::vector<float> y(size_t(m * out), 0.5f);  // [m, out]
      Linear(y.data(), x.data(), m, weight, /*accumulate=*/true);
      // Where oneDNN has bf16 products, 16-bit weights against many rows are
      // multiplied in bf16, x rounded to bf16 too and f16 weights rounded
      // to bf16 (elsewhere widened to float32); GEMV keeps x in float32;
      // the block formats' integer products quantize it per 32 values.
      const bool in_bf16 =
          m > kGemvMaxRows && (type == WeightType::kBF16 || type == WeightType::kF16) && OneDnnHasBF16Matmul();
      std::vector<float> xs = x;  // [m, in] x as the kernel multiplies it
      if (IsBlockQuantized(type)) {
        std::vector<int8_t> q(x.size());      // [m, in]
        std::vector<float> d(x.size() / 32);  // [m, in / 32]
        std::vector<int32_t> sum(d.size());   // [m, in / 32]
        QuantizeInput(q.data(), d.data(), sum.data(), x.data(), m, in);
        for (size_t i = 0; i < x.size(); ++i) xs[i] = float(q[i]) * d[i / 32];
      }
      double worst = 0, scale = 0;
      for (int64_t r = 0; r < m; ++r)
        for (int64_t o = 0; o < out; ++o) {
          double ref = 0.5;
          for (int64_t c = 0; c < in; ++c) {
            const float wf = stored[size_t(o * in + c)], xf = xs[size_t(r * in + c)];
            ref += in_bf16 ? double(BF16ToF32(F32ToBF16(wf))) * BF16ToF32(F32ToBF16(xf)) : double(wf) * xf;
          }
          worst = std::max(worst, std::fabs(ref - y[size_t(r * out + o)]));
          scale = std::max(scale, std::fabs(ref));
        }
      EXPECT_LE(worst / scale, 1e-5) << "m " << m << " type " << WeightTypeName(type);
    }
  }
  EXPECT_EQ(LinearWeight(w, out, in, WeightType::kBF16).Bytes(), size_t(out * in * 2));
  // the packed layout holds whole groups of 16 rows: 304 for 300
  EXPECT_EQ(LinearWeight(w, out, in, WeightType::kQ8_0).Bytes(), size_t(304 * in / 32 * 34));
  EXPECT_EQ(LinearWeight(w, out, in, WeightType::kQ4_0).Bytes(), size_t(304 * in / 32 * 18));
  // what a type holds: bf16 and f16 round each value, the blocks quantize
  EXPECT_EQ(LinearWeight(w, out, in, WeightType::kF16).ToF32()[7], F16ToF32(F32ToF16(w[7])));
  EXPECT_EQ(LinearWeight(w, out, in, WeightType::kBF16).ToF32()[7], BF16ToF32(F32ToBF16(w[7])));
  EXPECT_THROW(LinearWeight(std::vector<float>(size_t(3 * 40)), 3, 40, WeightType::kQ8_0), std::invalid_argument);
  EXPECT_THROW(LinearWeight(w, out + 1, in), std::invalid_argument);
}

// f16 and bf16 weights go in pieces of 256 rows here: on AVX-512 without
// BF16 widened to float32 in panels of 256K values, each multiplied into a
// block and copied or added into its columns of y, or for bf16 products
// (matrices above 4M values, here 4.3M) gathered into y; below AVX-512,
// swan's own product over 263 panels of B.
TEST(Linear, Large16BitMatricesInPanels) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal;
  const int64_t out = 4200, in = 1024, m = 9;                 // 17 panels, the last of 104 rows
  std::vector<float> w(size_t(out * in)), x(size_t(m * in));  // [out, in], [m, in]
  for (auto& e : w) e = normal(rng);
  for (auto& e : x) e = normal(rng);
  const bool in_bf16 = OneDnnHasBF16Matmul();
  auto round = [&](float v) { return in_bf16 ? BF16ToF32(F32ToBF16(v)) : v; };
  for (WeightType type : {WeightType::kF16, WeightType::kBF16})
    for (bool accumulate : {true, false}) {
      SCOPED_TRACE(std::string(WeightTypeName(type)) + (accumulate ? " y +=" : " y ="));
      const LinearWeight weight(w, out, in, type);
      const std::vector<float> stored = weight.ToF32();  // [out, in]
      std::vector<float> y(size_t(m * out), 0.5f);       // [m, out]
      Linear(y.data(), x.data(), m, weight, accumulate);
      double worst = 0, scale = 0;
      for (int64_t r = 0; r < m; ++r)
        for (int64_t o = 0; o < out; ++o) {
          double ref = accumulate ? 0.5 : 0.0;
          for (int64_t c = 0; c < in; ++c)
            ref += double(round(stored[size_t(o * in + c)])) * round(x[size_t(r * in + c)]);
          worst = std::max(worst, std::fabs(ref - y[size_t(r * out + o)]));
          scale = std::max(scale, std::fabs(ref));
        }
      EXPECT_LE(worst / scale, 1e-5);
    }
}

}  // namespace
}  // namespace swan
