// UnpackBlockRows gives back the file's rows byte for byte after
// PackBlockRows, for every block type, on shapes whose last group of 16
// rows is partly empty.
#include "ops/packed_blocks.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "ops/quant_blocks.h"
#include "util/seeded_test.h"

namespace swan {
namespace {

class PackedBlocksTest : public testing::SeededTest {};

TEST_F(PackedBlocksTest, UnpackingGivesBackTheFilesRows) {
  std::normal_distribution<float> normal;
  for (WeightType type : AllWeightTypes()) {
    if (!IsBlockQuantized(type)) continue;
    for (const int64_t n : {1, 16, 37}) {
      SCOPED_TRACE(std::string(WeightTypeName(type)) + " with " + std::to_string(n) + " rows");
      const int64_t k = 2 * RowMultiple(type);
      std::vector<float> w(static_cast<size_t>(n * k));  // [n, k]
      for (float& v : w) v = normal(rng);
      const std::vector<uint8_t> rows = QuantizeRows(type, w.data(), n, k);  // [n, row bytes]
      std::vector<uint8_t> packed(PackedBytes(type, n, k)), back(rows.size());
      PackBlockRows(type, packed.data(), rows.data(), n, k);
      UnpackBlockRows(PackedBlocksAt(packed.data(), type, n, k), back.data());
      ASSERT_EQ(back, rows);
    }
  }
}

}  // namespace
}  // namespace swan
