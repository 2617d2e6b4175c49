#include "ops/bf16_gemm.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>
#include <omp.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/bf16_round.h"
#include "ops/gemm.h"
#include "util/bf16.h"
#include "util/f16.h"

namespace swan {
namespace {

std::vector<uint16_t> RandomBF16(size_t n, std::mt19937& rng) {  // [n]
  std::normal_distribution<float> normal;
  std::vector<uint16_t> v(n);
  for (uint16_t& x : v) x = F32ToBF16(normal(rng));
  return v;
}

// op(A)(i, kk) and op(B)(kk, j) of the stored operands.
float OpA(const std::vector<uint16_t>& a, const GemmShape& s, int64_t i, int64_t kk) {
  return BF16ToF32(s.trans_a ? a[size_t(kk * s.m + i)] : a[size_t(i * s.k + kk)]);
}
float OpB(const std::vector<uint16_t>& b, const GemmShape& s, int64_t kk, int64_t j) {
  return BF16ToF32(s.trans_b ? b[size_t(j * s.k + kk)] : b[size_t(kk * s.n + j)]);
}

// Checks c against C0 (+) op(A) · op(B) summed in double, each element
// within 1e-5 of the sum of its terms' magnitudes (float32 accumulation
// over k terms, in blocks).   c, c0 [m, n]
void ExpectProduct(const std::vector<float>& c, const std::vector<float>& c0, const std::vector<uint16_t>& a,
                   const std::vector<uint16_t>& b, const GemmShape& s, bool accumulate) {
  int bad = 0;
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      double sum = accumulate ? c0[size_t(i * s.n + j)] : 0.0, magnitude = std::fabs(sum);
      for (int64_t kk = 0; kk < s.k; ++kk) {
        const double term = double(OpA(a, s, i, kk)) * OpB(b, s, kk, j);
        sum += term;
        magnitude += std::fabs(term);
      }
      const double got = c[size_t(i * s.n + j)];
      if (std::fabs(got - sum) > 1e-5 * magnitude + 1e-30 && ++bad <= 3)
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", expected " << sum << " (m=" << s.m
                      << " n=" << s.n << " k=" << s.k << " trans_a=" << s.trans_a << " trans_b=" << s.trans_b
                      << " accumulate=" << accumulate << ")";
    }
}

// Shapes around the register tile (6 x 2 vectors), the 4 x 4 transposes
// that pack B, the depth block (256) and the row block (384), in every
// layout; 400 x 20 and 300 x 8 have fewer panels of B than 3 threads.
const GemmShape kShapes[] = {{1, 1, 1},       {5, 17, 3},    {6, 16, 256}, {7, 33, 257},   {97, 40, 19},
                             {200, 300, 600}, {13, 4200, 5}, {2, 96, 70},  {400, 20, 300}, {300, 8, 900}};

// Runs fn(shape, layout) on every Highway target for every shape of
// kShapes in every layout (bit 0: trans_a, bit 1: trans_b, set in shape).
template <class Fn>
void ForEveryTargetShapeAndLayout(const Fn& fn) {
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    for (GemmShape s : kShapes)
      for (int layout = 0; layout < 4; ++layout) {
        s.trans_a = layout & 1;
        s.trans_b = layout & 2;
        fn(s, layout);
      }
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(GemmBF16Swan, MatchesTheReferenceOnEveryTargetLayoutAndThreadCount) {
  const unsigned seed = std::random_device()();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int threads_before = omp_get_max_threads();
  ForEveryTargetShapeAndLayout([&](const GemmShape& s, int layout) {
    const auto a = RandomBF16(size_t(s.m * s.k), rng);  // [m, k] or [k, m]
    const auto b = RandomBF16(size_t(s.k * s.n), rng);  // [k, n] or [n, k]
    std::vector<float> c0(size_t(s.m * s.n));           // [m, n]
    for (float& x : c0) x = BF16ToF32(RandomBF16(1, rng)[0]);
    const bool accumulate = layout != 1;  // both modes on both sides of each transpose
    omp_set_num_threads(1 + layout % 3);
    std::vector<float> c = c0;
    GemmBF16Swan(c.data(), a.data(), b.data(), s, accumulate);
    ExpectProduct(c, c0, a, b, s, accumulate);
  });
  omp_set_num_threads(threads_before);
}

// GemmBF16 takes oneDNN's path where it has bf16 and swan's otherwise;
// both give the reference's product.
TEST(GemmBF16, EitherPathGivesTheProduct) {
  std::mt19937 rng(11);
  for (GemmShape s :
       {GemmShape{33, 65, 129}, GemmShape{64, 48, 300, true, false}, GemmShape{20, 70, 50, false, true}}) {
    const auto a = RandomBF16(size_t(s.m * s.k), rng), b = RandomBF16(size_t(s.k * s.n), rng);
    std::vector<float> c0(size_t(s.m * s.n), 0.5f), c = c0;  // [m, n]
    GemmBF16(c.data(), a.data(), b.data(), s, /*accumulate=*/true);
    ExpectProduct(c, c0, a, b, s, true);
  }
}

// The ISA caps that CI sets for its second run must reach oneDNN: under
// DNNL_MAX_CPU_ISA (or ONEDNN_MAX_CPU_ISA) = AVX2 it has no bf16 products,
// and GemmBF16 above ran swan's.
TEST(GemmBF16, OneDnnCappedToAvx2HasNoBF16) {
  for (const char* name : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"}) {
    const char* cap = std::getenv(name);
    if (cap && std::string(cap) == "AVX2") {
      EXPECT_FALSE(OneDnnHasBF16Matmul()) << name << "=AVX2";
      return;
    }
  }
  // Uncapped: the answer must be the same when asked again (it is cached).
  EXPECT_EQ(OneDnnHasBF16Matmul(), OneDnnHasBF16Matmul());
}

// RoundToBF16 gives util/bf16.h's bits (nearest even) on normal numbers of
// every magnitude, denormals, halfway cases, signed zeros, infinities, the
// largest floats and NaN, on every target, in lengths with vector tails.
TEST(RoundToBF16, RoundsLikeTheScalarConversionOnEveryTarget) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> exponent(-140, 120);
  std::normal_distribution<float> normal;
  std::vector<float> x(1000);  // [n]
  for (float& v : x) v = std::ldexp(normal(rng), exponent(rng));
  for (uint32_t bits : {0x3f808000u, 0x3f818000u, 0xbf808000u, 0x3f80ffffu, 0x3f807fffu, 0x00008000u, 0x00018000u,
                        0x007fffffu, 0x7f7fffffu, 0xff7fffffu})
    x.push_back(std::bit_cast<float>(bits));
  for (float v : {0.0f, -0.0f, INFINITY, -INFINITY}) x.push_back(v);
  x.push_back(std::nanf(""));
  x.push_back(std::bit_cast<float>(0x7f800001u));  // signalling NaN: must not round to infinity
  x.push_back(std::bit_cast<float>(0xffffffffu));
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    for (size_t n : {x.size(), x.size() - 3, size_t(5)}) {
      std::vector<uint16_t> got(n);  // [n]
      RoundToBF16(got.data(), x.data(), int64_t(n));
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], F32ToBF16(x[i])) << "x[" << i << "] = " << x[i];
    }
  }
  hwy::SetSupportedTargetsForTest(0);
  // The timed entry point that training calls is the same conversion.
  std::vector<uint16_t> got(x.size());
  ConvertToBF16(got.data(), x.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got[i], F32ToBF16(x[i])) << i;
}

// Both of swan's own products write into a row stride of C and leave the
// columns past n alone.
TEST(GemmBF16Swan, WritesIntoARowStride) {
  std::vector<uint16_t> a(4, F32ToBF16(1.0f)), b(4, F32ToBF16(1.0f));  // [2, 2] each
  std::vector<float> c(6, -1.0f);                                      // [2, 3]
  GemmBF16Swan(c.data(), a.data(), b.data(), GemmShape{2, 2, 2, false, false, /*ldc=*/3}, false);
  EXPECT_EQ(c, (std::vector<float>{2, 2, -1, 2, 2, -1}));
  const std::vector<float> a32(4, 1.0f), b32(4, 1.0f);  // [2, 2] each
  GemmF32Swan(c.data(), a32.data(), b32.data(), GemmShape{2, 2, 2, false, false, /*ldc=*/3}, true);
  EXPECT_EQ(c, (std::vector<float>{4, 4, -1, 4, 4, -1}));
  EXPECT_THROW(GemmF32Swan(c.data(), a32.data(), b32.data(), GemmShape{2, 2, 2, false, false, /*ldc=*/1}, false),
               std::invalid_argument);
}

// The float32 product is the bf16 one's arithmetic: on bf16 values widened
// to float32 it gives the same bits, on every target and layout; and both
// give the same bits on 1, 2 and 3 threads (no sum is split by threads).
TEST(GemmF32Swan, SameBitsAsBF16AndOnAnyThreadCount) {
  std::mt19937 rng(5);
  const int threads_before = omp_get_max_threads();
  ForEveryTargetShapeAndLayout([&](const GemmShape& s, int) {
    const auto a = RandomBF16(size_t(s.m * s.k), rng);  // [m, k] or [k, m]
    const auto b = RandomBF16(size_t(s.k * s.n), rng);  // [k, n] or [n, k]
    std::vector<float> a32(a.size()), b32(b.size());    // the same values, float32
    for (size_t i = 0; i < a.size(); ++i) a32[i] = BF16ToF32(a[i]);
    for (size_t i = 0; i < b.size(); ++i) b32[i] = BF16ToF32(b[i]);
    omp_set_num_threads(1);
    std::vector<float> want(size_t(s.m * s.n), 0.25f);  // [m, n]
    GemmBF16Swan(want.data(), a.data(), b.data(), s, /*accumulate=*/true);
    for (int threads : {1, 2, 3}) {
      omp_set_num_threads(threads);
      std::vector<float> got(want.size(), 0.25f), got16(want.size(), 0.25f);  // [m, n]
      GemmF32Swan(got.data(), a32.data(), b32.data(), s, true);
      GemmBF16Swan(got16.data(), a.data(), b.data(), s, true);
      EXPECT_EQ(got, want) << "float32, " << threads << " threads, m=" << s.m << " n=" << s.n << " k=" << s.k;
      EXPECT_EQ(got16, want) << "bf16, " << threads << " threads, m=" << s.m << " n=" << s.n << " k=" << s.k;
    }
  });
  omp_set_num_threads(threads_before);
}

// A float32 by f16 or bf16 weights is the float32 product on the weights'
// float32 values, bit for bit, on every target, layout and thread count;
// the f16 values include subnormals, the largest finite and a signed zero.
TEST(GemmF32ByHalfSwan, SameBitsAsFloat32OnTheWidenedValues) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  const int threads_before = omp_get_max_threads();
  ForEveryTargetShapeAndLayout([&](const GemmShape& s, int) {
    std::vector<float> a(size_t(s.m * s.k));  // [m, k] or [k, m]
    for (float& x : a) x = normal(rng);
    std::vector<uint16_t> f16(size_t(s.k * s.n)), bf16(f16.size());  // [k, n] or [n, k]
    std::vector<float> f16_wide(f16.size()), bf16_wide(f16.size());  // the same, float32
    const float specials[] = {3e-6f, -6e-8f, 65504.0f, -0.0f};       // two subnormals, f16's max, -0
    for (size_t i = 0; i < f16.size(); ++i) {
      const float v = i % 97 < 4 ? specials[i % 97] : normal(rng);
      f16[i] = F32ToF16(v);
      bf16[i] = F32ToBF16(v);
      f16_wide[i] = F16ToF32(f16[i]);
      bf16_wide[i] = BF16ToF32(bf16[i]);
    }
    for (int threads : {1, 3}) {
      omp_set_num_threads(threads);
      std::vector<float> want(size_t(s.m * s.n), 0.25f), got(want.size(), 0.25f);  // [m, n]
      GemmF32Swan(want.data(), a.data(), f16_wide.data(), s, true);
      GemmF32ByHalfSwan(got.data(), a.data(), f16.data(), HalfFormat::kF16, s, true);
      EXPECT_EQ(got, want) << "f16, " << threads << " threads, m=" << s.m << " n=" << s.n << " k=" << s.k;
      std::fill(want.begin(), want.end(), 0.25f);
      std::fill(got.begin(), got.end(), 0.25f);
      GemmF32Swan(want.data(), a.data(), bf16_wide.data(), s, true);
      GemmF32ByHalfSwan(got.data(), a.data(), bf16.data(), HalfFormat::kBF16, s, true);
      EXPECT_EQ(got, want) << "bf16, " << threads << " threads, m=" << s.m << " n=" << s.n << " k=" << s.k;
    }
  });
  omp_set_num_threads(threads_before);
  std::vector<float> c(4);
  const float a[4] = {1, 1, 1, 1};
  const uint16_t b[4] = {F32ToF16(1), F32ToF16(1), F32ToF16(1), F32ToF16(1)};
  EXPECT_THROW(GemmF32ByHalfSwan(c.data(), a, b, HalfFormat::kF16, GemmShape{2, 0, 2}, false), std::invalid_argument);
}

// With thread-invariant products on, Gemm gives the same bits on any
// number of threads, on whichever path this CPU (or DNNL_MAX_CPU_ISA) takes.
TEST(Gemm, ThreadInvariantProductsRepeatOnAnyThreadCount) {
  std::mt19937 rng(9);
  std::normal_distribution<float> normal;
  const int threads_before = omp_get_max_threads();
  SetThreadInvariantProducts(true);
  for (GemmShape s : {GemmShape{12, 256, 256, false, true}, GemmShape{100, 704, 256, false, true},
                      GemmShape{9, 96, 2048, false, true, /*ldc=*/128}}) {
    std::vector<float> a(size_t(s.m * s.k)), b(size_t(s.k * s.n));  // [m, k], [n, k]
    for (float& x : a) x = normal(rng);
    for (float& x : b) x = normal(rng);
    const int64_t ldc = s.ldc != 0 ? s.ldc : s.n;
    std::vector<float> want(size_t(s.m * ldc));  // [m, ldc]
    omp_set_num_threads(1);
    Gemm(want.data(), a.data(), b.data(), s, false);
    for (int threads : {2, 3}) {
      omp_set_num_threads(threads);
      std::vector<float> got(want.size());  // [m, ldc]
      Gemm(got.data(), a.data(), b.data(), s, false);
      EXPECT_EQ(got, want) << threads << " threads, m=" << s.m << " n=" << s.n << " k=" << s.k;
    }
  }
  SetThreadInvariantProducts(false);
  omp_set_num_threads(threads_before);
}

}  // namespace
}  // namespace swan
