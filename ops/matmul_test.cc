#include "ops/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ops/elementwise.h"
#include "ops/gemm.h"
#include "ops/rope.h"
#include "util/bf16.h"

namespace swan {
namespace {

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

TEST(Matmul, MatchesReferenceForManyShapes) {
  const MatmulShape shapes[] = {{1, 1, 1}, {1, 512, 64}, {16, 172, 64}, {7, 64, 172}, {33, 65, 129}};
  for (const MatmulShape& s : shapes) {
    for (bool accumulate : {false, true}) {
      const auto x = Random(size_t(s.m * s.k), 1), w = Random(size_t(s.n * s.k), 2);
      std::vector<float> y = Random(size_t(s.m * s.n), 3), expected = y;
      MatmulTransB(y.data(), x.data(), w.data(), s, accumulate);
      MatmulTransBReference(expected.data(), x.data(), w.data(), s, accumulate);
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_NEAR(y[i], expected[i], 1e-4 * (1 + std::fabs(expected[i])))
            << "m=" << s.m << " n=" << s.n << " k=" << s.k << " accumulate=" << accumulate;
    }
  }
}

// A server meets a product shape per prompt length: the primitives kept
// stay under their cap, and a shape built again after it was dropped
// computes what it did.
TEST(Matmul, ManyShapesKeepABoundedCache) {
  const int64_t n = 24, k = 40;
  const auto w = Random(size_t(n * k), 5);
  auto check = [&](int64_t m) {
    const auto x = Random(size_t(m * k), uint32_t(m));
    std::vector<float> y(size_t(m * n)), expected(size_t(m * n));
    MatmulTransB(y.data(), x.data(), w.data(), MatmulShape{m, n, k}, false);
    MatmulTransBReference(expected.data(), x.data(), w.data(), MatmulShape{m, n, k}, false);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], expected[i], 1e-4 * (1 + std::fabs(expected[i]))) << m;
  };
  for (int64_t m = 2; m <= 301; ++m) check(m);
  EXPECT_LE(CachedGemmPrimitives(), 128u);
  EXPECT_GE(CachedGemmPrimitives(), 64u);  // it is a cache: the recent ones stay
  check(2);                                // dropped long ago, built again
}

TEST(Matmul, RejectsEmptyShapes) {
  float y = 0, x = 0, w = 0;
  EXPECT_THROW(MatmulTransB(&y, &x, &w, {0, 1, 1}), std::invalid_argument);
  EXPECT_THROW(MatmulTransB(&y, &x, &w, {1, 2, 1, /*ldy=*/1}), std::invalid_argument);
}

// With a row stride, the product fills columns of a wider y and leaves the
// others as they were.
TEST(Matmul, RowStrideWritesOnlyItsColumns) {
  const MatmulShape s{17, 40, 64, /*ldy=*/100};
  const auto x = Random(size_t(s.m * s.k), 4), w = Random(size_t(s.n * s.k), 5);
  for (bool accumulate : {false, true}) {
    const std::vector<float> before = Random(size_t(s.m * s.ldy), 6);  // [m, ldy]
    std::vector<float> y = before, expected = before;
    MatmulTransB(y.data() + 30, x.data(), w.data(), s, accumulate);  // columns [30, 70)
    MatmulTransBReference(expected.data() + 30, x.data(), w.data(), s, accumulate);
    for (int64_t r = 0; r < s.m; ++r)
      for (int64_t c = 0; c < s.ldy; ++c) {
        const size_t i = size_t(r * s.ldy + c);
        if (c < 30 || c >= 70)
          ASSERT_EQ(y[i], before[i]) << r << "," << c;
        else
          ASSERT_NEAR(y[i], expected[i], 1e-4 * (1 + std::fabs(expected[i]))) << r << "," << c;
      }
  }
}

TEST(Elementwise, RmsNormAndSiluMul) {
  const std::vector<float> x = {1, 2, 3, 4}, w = {1, 2};  // [2 tokens, 2], [2]
  std::vector<float> out(4);
  RmsNorm(out.data(), x.data(), w.data(), 0.0f, 2, 2);
  const float r0 = 1 / std::sqrt(2.5f), r1 = 1 / std::sqrt(12.5f);
  EXPECT_NEAR(out[0], 1 * r0, 1e-6);
  EXPECT_NEAR(out[1], 2 * r0 * 2, 1e-6);
  EXPECT_NEAR(out[2], 3 * r1, 1e-6);
  EXPECT_NEAR(out[3], 4 * r1 * 2, 1e-6);
  const std::vector<float> g = {0, 1, -2}, u = {5, 2, 3};
  std::vector<float> s(3);
  SiluMul(s.data(), g.data(), u.data(), 3);
  EXPECT_NEAR(s[0], 0, 1e-7);
  EXPECT_NEAR(s[1], 2 / (1 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(s[2], 3 * -2 / (1 + std::exp(2.0)), 1e-6);
}

// rotate_half: pairs (i, i + d/2) rotate by pos * base^(-2i/d).
TEST(Rope, RotatesHalfPairsAndPreservesNorm) {
  const int32_t d = 8;
  Rope rope(RopeSettings{}, d);
  std::vector<float> x = Random(2 * d, 4), orig = x;  // [2 tokens, 1 head, 8]
  const int32_t pos[2] = {0, 5};
  rope.Apply(x.data(), pos, 2, 1);
  for (int i = 0; i < d; ++i) EXPECT_FLOAT_EQ(x[size_t(i)], orig[size_t(i)]);  // position 0
  for (int i = 0; i < d / 2; ++i) {
    const double angle = 5 * std::pow(10000.0, -2.0 * i / d);
    const float a = orig[size_t(d + i)], b = orig[size_t(d + i + d / 2)];
    EXPECT_NEAR(x[size_t(d + i)], a * std::cos(angle) - b * std::sin(angle), 1e-5);
    EXPECT_NEAR(x[size_t(d + i + d / 2)], b * std::cos(angle) + a * std::sin(angle), 1e-5);
  }
  RopeSettings nope;
  nope.enabled = false;
  std::vector<float> y = orig;
  Rope(nope, d).Apply(y.data(), pos, 2, 1);
  EXPECT_EQ(y, orig);
}

// A layer's queries and keys rotated together are what each alone gives, bit
// for bit (20 tokens: more than run on one thread).
TEST(Rope, QueriesAndKeysTogetherAsApart) {
  const int32_t d = 16, n = 20;
  const Rope rope(RopeSettings{}, d);
  std::vector<float> q = Random(size_t(n * 4 * d), 5), k = Random(size_t(n * 2 * d), 6);  // [n, 4 or 2, d]
  std::vector<int32_t> pos(static_cast<size_t>(n));                                       // [n]
  for (int32_t t = 0; t < n; ++t) pos[size_t(t)] = 3 * t + 1;
  std::vector<float> q_apart = q, k_apart = k;
  rope.Apply(q_apart.data(), pos.data(), n, 4);
  rope.Apply(k_apart.data(), pos.data(), n, 2);
  rope.Apply(q.data(), 4, k.data(), 2, pos.data(), n);
  EXPECT_EQ(q, q_apart);
  EXPECT_EQ(k, k_apart);
  EXPECT_NE(q, Random(size_t(n * 4 * d), 5));  // rotated
}

TEST(Rope, ScalingFrequencies) {
  RopeSettings s;
  s.scaling.kind = RopeScaling::Kind::kLinear;
  s.scaling.factor = 4;
  const Rope plain(RopeSettings{}, 64), linear(s, 64);
  for (size_t i = 0; i < 32; ++i) EXPECT_DOUBLE_EQ(linear.inv_freq()[i], plain.inv_freq()[i] / 4);

  // llama3: high frequencies (short wavelengths) kept, low ones divided by factor.
  s.base = 500000;
  s.scaling = RopeScaling{};
  s.scaling.kind = RopeScaling::Kind::kLlama3;
  s.scaling.factor = 8;
  s.scaling.original_max_position_embeddings = 8192;
  RopeSettings base = s;
  base.scaling = RopeScaling{};
  const Rope l3(s, 128), l3_base(base, 128);
  EXPECT_DOUBLE_EQ(l3.inv_freq()[0], l3_base.inv_freq()[0]);
  EXPECT_DOUBLE_EQ(l3.inv_freq()[63], l3_base.inv_freq()[63] / 8);

  // YaRN: the same ends, and the attention factor 0.1 ln(f) + 1.
  s.scaling.kind = RopeScaling::Kind::kYarn;
  s.scaling.original_max_position_embeddings = 4096;
  const Rope yarn(s, 128);
  EXPECT_DOUBLE_EQ(yarn.inv_freq()[0], l3_base.inv_freq()[0]);
  EXPECT_NEAR(yarn.inv_freq()[63], l3_base.inv_freq()[63] / 8, 1e-15);
  EXPECT_NEAR(yarn.attention_factor(), 0.1 * std::log(8.0) + 1, 1e-12);
}

// llama.cpp's rope_freqs: each frequency divided by its own factor. Equal
// factors are linear scaling; llama3's are what llama.cpp's converter
// writes for Llama 3.1 (written out here as it computes them).
TEST(Rope, PerFrequencyFactors) {
  RopeSettings s;
  s.scaling.kind = RopeScaling::Kind::kFrequencyFactors;
  s.scaling.frequency_factors.assign(32, 4.0);
  RopeSettings linear;
  linear.scaling.kind = RopeScaling::Kind::kLinear;
  linear.scaling.factor = 4;
  for (size_t i = 0; i < 32; ++i) EXPECT_DOUBLE_EQ(Rope(s, 64).inv_freq()[i], Rope(linear, 64).inv_freq()[i]);
  EXPECT_EQ(FrequencyFactors(linear, 64), std::vector<double>(32, 4.0));

  RopeSettings l3;
  l3.base = 500000;
  l3.scaling.kind = RopeScaling::Kind::kLlama3;
  l3.scaling.factor = 8;
  l3.scaling.original_max_position_embeddings = 8192;
  const std::vector<double> factors = FrequencyFactors(l3, 128);  // [64]
  ASSERT_EQ(factors.size(), 64u);
  int kept = 0, divided = 0, smoothed = 0;
  for (int i = 0; i < 64; ++i) {
    const double wavelen = 2 * 3.14159265358979323846 * std::pow(500000.0, 2.0 * i / 128);
    double expected = 0;
    if (wavelen < 8192 / 4.0) {
      expected = 1, ++kept;
    } else if (wavelen > 8192 / 1.0) {
      expected = 8, ++divided;
    } else {
      const double smooth = (8192 / wavelen - 1) / (4 - 1);
      expected = 1 / ((1 - smooth) / 8 + smooth), ++smoothed;
    }
    EXPECT_NEAR(factors[size_t(i)], expected, 1e-12 * expected) << i;
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(smoothed, 0);
  s = l3;
  s.scaling = RopeScaling{};
  s.scaling.kind = RopeScaling::Kind::kFrequencyFactors;
  s.scaling.frequency_factors = factors;
  for (size_t i = 0; i < 64; ++i)
    EXPECT_NEAR(Rope(s, 128).inv_freq()[i], Rope(l3, 128).inv_freq()[i], 1e-15 * Rope(l3, 128).inv_freq()[i]);

  s.scaling.frequency_factors.pop_back();
  EXPECT_THROW(Rope(s, 128), std::invalid_argument);  // 63 factors for 64 frequencies
  for (double bad : {0.0, -1.0, std::nan("")}) {
    s.scaling.frequency_factors = factors;
    s.scaling.frequency_factors[5] = bad;
    EXPECT_THROW(Rope(s, 128), std::invalid_argument) << bad;
  }
}

}  // namespace
}  // namespace swan
