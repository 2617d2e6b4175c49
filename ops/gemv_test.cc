#include "ops/gemv.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "ops/linear.h"

namespace swan {
namespace {

// Largest difference relative to the largest reference value, or to
// `floor` when that is larger: y = 1 + x·w can cancel to nearly 0, where the
// float rounding of the 1 is what remains.
double MaxRelativeError(const std::vector<float>& a, const std::vector<float>& b, double floor = 0) {
  double diff = 0, scale = floor;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return diff / scale;
}

TEST(Gemv, MatchesReferenceOnEveryTarget) {
  const unsigned seed = std::random_device()();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    for (int64_t m : {1, 2, 3, 5, 8})
      for (auto [n, k] : {std::pair<int64_t, int64_t>{1, 1},
                          {7, 13},
                          {64, 64},
                          {129, 200},
                          {300, 1031},
                          {5, 32},
                          {70, 96},
                          {129, 1024}})
        for (WeightType type : {WeightType::kF32, WeightType::kBF16, WeightType::kF16, WeightType::kQ8_0,
                                WeightType::kQ4_0, WeightType::kQ4_1, WeightType::kQ5_0, WeightType::kQ5_1}) {
          if (!RowFits(type, k)) continue;
          std::vector<float> x(size_t(m * k)), w(size_t(n * k));  // [m, k], [n, k]
          for (auto& e : x) e = normal(rng);
          for (auto& e : w) e = normal(rng);
          const LinearWeight stored(w, n, k, type);  // rounds or quantizes w
          const WeightView view = stored.view();
          std::vector<float> y(size_t(m * n), 1.0f), ref(y);  // [m, n]
          Gemv(y.data(), x.data(), view, m, /*accumulate=*/true);
          GemvReference(ref.data(), x.data(), view, m, true);
          EXPECT_LE(MaxRelativeError(y, ref, /*floor=*/1.0), 1e-5)
              << m << " " << n << " " << k << " " << WeightTypeName(type);
          Gemv(y.data(), x.data(), view, m);
          GemvReference(ref.data(), x.data(), view, m);
          EXPECT_LE(MaxRelativeError(y, ref), 1e-5) << m << " " << n << " " << k << " " << WeightTypeName(type);
        }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// q, k and v of a GQA layer (and sizes that leave part pieces, or cut
// pieces at a thread's share) in one region, each output as Gemv alone
// would compute it, on 1-3 threads.
TEST(Gemv, SeveralOutputsMatchOneAtATime) {
  const unsigned seed = std::random_device()();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  const int64_t k = 256;
  const int64_t outs_n[] = {600, 512, 128, 128, 70, 1};
  const int threads_before = omp_get_max_threads();
  for (WeightType type : {WeightType::kF32, WeightType::kBF16, WeightType::kF16})
    for (auto [m, threads] : {std::pair<int64_t, int>{1, 1}, {1, 2}, {1, 3}, {3, 2}}) {
      omp_set_num_threads(threads);
      std::vector<float> x(size_t(m * k));  // [m, k]
      for (auto& e : x) e = normal(rng);
      std::vector<LinearWeight> weights;
      std::vector<std::vector<float>> y, ref;  // [outs][m, n]
      for (int64_t n : outs_n) {
        std::vector<float> w(size_t(n * k));  // [n, k]
        for (auto& e : w) e = normal(rng);
        weights.emplace_back(w, n, k, type);
        y.emplace_back(size_t(m * n), 2.0f);
        ref.emplace_back(size_t(m * n), 2.0f);
      }
      std::vector<GemvOutput> outs;
      for (size_t i = 0; i < weights.size(); ++i) outs.push_back(GemvOutput{y[i].data(), weights[i].view()});
      Gemvs(x.data(), m, outs.data(), int64_t(outs.size()), /*accumulate=*/true);
      for (size_t i = 0; i < weights.size(); ++i) {
        GemvReference(ref[i].data(), x.data(), weights[i].view(), m, /*accumulate=*/true);
        EXPECT_LE(MaxRelativeError(y[i], ref[i], /*floor=*/2.0), 1e-5)
            << WeightTypeName(type) << " m " << m << " threads " << threads << " out " << i;
      }
    }
  omp_set_num_threads(threads_before);
}

TEST(Gemv, SeveralOutputsRejectMixedInputsAndBlocks) {
  std::vector<float> x(64), y(64);  // [1, 64], [1, 64]
  const LinearWeight a(std::vector<float>(64 * 64, 1.0f), 64, 64), b(std::vector<float>(64 * 32, 1.0f), 64, 32),
      q(std::vector<float>(64 * 64, 1.0f), 64, 64, WeightType::kQ8_0);
  const GemvOutput mixed[] = {{y.data(), a.view()}, {y.data(), b.view()}};
  EXPECT_THROW(Gemvs(x.data(), 1, mixed, 2), std::invalid_argument);
  const GemvOutput blocks[] = {{y.data(), a.view()}, {y.data(), q.view()}};
  EXPECT_THROW(Gemvs(x.data(), 1, blocks, 2), std::invalid_argument);
}

TEST(Gemv, RejectsBadSizes) {
  float y = 0, x = 0, w = 0;
  EXPECT_THROW(Gemv(&y, &x, WeightView{&w, WeightType::kF32, 1, 1}, 0), std::invalid_argument);
  EXPECT_THROW(Gemv(&y, &x, WeightView{nullptr, WeightType::kF32, 1, 1}, 1), std::invalid_argument);
  EXPECT_THROW(Gemv(&y, &x, WeightView{&w, WeightType::kF32, 0, 1}, 1), std::invalid_argument);
  EXPECT_THROW(Gemv(&y, &x, WeightView{&w, WeightType::kQ8_0, 1, 48}, 1), std::invalid_argument);
}

}  // namespace
}  // namespace swan
