// The MLP block on a prefill's rows (in parts, through reused buffers)
// against the same block on 100 rows at a time (one part each, the same
// product kernels), on random weights.
#include "model/blocks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace swan {
namespace {

std::vector<float> Random(size_t n, std::mt19937& rng) {  // [n]
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

TEST(MlpBlock, RowsInPartsMatchSmallCalls) {
  const unsigned seed = std::random_device()();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const BlockSizes sizes{48, 80, AttentionShape{}};
  for (const WeightType type : {WeightType::kF32, WeightType::kF16}) {
    const MlpWeights w{LinearWeight(Random(80 * 48, rng), 80, 48, type),
                       LinearWeight(Random(80 * 48, rng), 80, 48, type),
                       LinearWeight(Random(48 * 80, rng), 48, 80, type)};
    ReleaseBlockScratch();
    for (const MlpActivation act : {MlpActivation::kSilu, MlpActivation::kGeluTanh})
      // 600 rows go in parts with a short last one; 9 rows in one; then 600
      // again through the buffers the smaller call left.
      for (const int64_t n : {600, 9, 600}) {
        SCOPED_TRACE("n " + std::to_string(n));
        const std::vector<float> xn = Random(size_t(n * 48), rng);  // [n, hidden]
        std::vector<float> many = Random(size_t(n * 48), rng);      // [n, hidden] residual
        std::vector<float> small = many;                            // [n, hidden]
        MlpBlock(many.data(), xn.data(), n, w, sizes, act);
        for (int64_t r = 0; r < n; r += 100)
          MlpBlock(small.data() + r * 48, xn.data() + r * 48, std::min<int64_t>(100, n - r), w, sizes, act);
        for (size_t i = 0; i < many.size(); ++i)
          ASSERT_NEAR(many[i], small[i], 1e-4f * (1.0f + std::fabs(small[i]))) << "element " << i;
      }
  }
}

}  // namespace
}  // namespace swan
