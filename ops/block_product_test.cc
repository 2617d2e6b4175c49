#include "ops/block_product.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <vector>

#include "ops/packed_blocks.h"
#include "ops/quant_blocks.h"
#include "util/seeded_test.h"

namespace swan {
namespace {

// Random rows in the file's layout: every byte random, the scales finite
// (random bits would give infinities and NaN) and small.
std::vector<uint8_t> RandomRows(WeightType type, int64_t n, int64_t k, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> rows(size_t(n) * WeightRowBytes(type, k));  // [n, row_bytes]
  for (auto& b : rows) b = uint8_t(byte(rng));
  if (type == WeightType::kQ6_K) {
    for (size_t at = 0; at < rows.size(); at += kQ6KBytes) rows[at + 209] &= 0x3b;  // |d| < 2
    return rows;
  }
  if (type == WeightType::kQ4_K || type == WeightType::kQ5_K) {
    const size_t bytes = type == WeightType::kQ4_K ? kQ4KBytes : kQ5KBytes;
    for (size_t at = 0; at < rows.size(); at += bytes) rows[at + 1] &= 0x3b, rows[at + 3] &= 0x3b;  // |d|, |dmin| < 2
    return rows;
  }
  for (size_t at = 0; at < rows.size(); at += QuantBlockBytes(type)) {
    rows[at + 1] &= 0x3b;                                                              // |d| < 2
    if (type == WeightType::kQ4_1 || type == WeightType::kQ5_1) rows[at + 3] &= 0x3b;  // |m| < 2
  }
  return rows;
}

std::vector<uint8_t> Pack(WeightType type, const std::vector<uint8_t>& rows, int64_t n, int64_t k) {
  std::vector<uint8_t> packed(PackedBytes(type, n, k));
  PackBlockRows(type, packed.data(), rows.data(), n, k);
  return packed;
}

using Shapes = std::vector<std::pair<int64_t, int64_t>>;  // [n, k] matrices

// Matrix shapes for a format: rows of 256 values and more for the K-quants.
Shapes ShapesFor(WeightType type, Shapes shapes) {
  if (IsSuperBlocked(type)) return {{1, 256}, {16, 256}, {37, 512}, {70, 256}};
  return shapes;
}

constexpr WeightType kBlockTypes[] = {WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ4_1, WeightType::kQ5_0,
                                      WeightType::kQ5_1, WeightType::kQ4_K, WeightType::kQ5_K, WeightType::kQ6_K};

TEST(PackedBlocks, HoldTheRowsBitForBit) {
  std::mt19937 rng(std::random_device{}());
  for (WeightType type : kBlockTypes)
    for (auto [n, k] : ShapesFor(type, {{1, 32}, {16, 64}, {37, 96}, {70, 256}})) {
      const std::vector<uint8_t> rows = RandomRows(type, n, k, rng);
      const std::vector<uint8_t> packed = Pack(type, rows, n, k);
      // the file's bytes for whole groups; Q4_K's and Q5_K's 6-bit scales and mins a byte each
      const size_t file_bytes = size_t(PackedGroups(n) * 16) * WeightRowBytes(type, k);
      EXPECT_EQ(packed.size(), type == WeightType::kQ4_K   ? file_bytes / 288 * 296
                               : type == WeightType::kQ5_K ? file_bytes / 352 * 360
                                                           : file_bytes);
      std::vector<float> want(size_t(n * k)), got(want.size());  // [n, k]
      DequantizeRows(type, want.data(), rows.data(), n, k);
      DequantizePackedRows(PackedBlocksAt(packed.data(), type, n, k), got.data(), 0, n);
      ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
          << WeightTypeName(type) << " " << n;
      // one row from the middle
      std::vector<float> row(static_cast<size_t>(k));
      DequantizePackedRows(PackedBlocksAt(packed.data(), type, n, k), row.data(), n / 2, 1);
      EXPECT_EQ(std::memcmp(row.data(), want.data() + (n / 2) * k, row.size() * sizeof(float)), 0);
    }
  // done_with sees every source byte once, after its rows are packed (and
  // nothing when the rows are reordered: they are not read in turn)
  for (int64_t n : {1, 37, 300}) {
    const int64_t k = 64;
    const std::vector<uint8_t> rows = RandomRows(WeightType::kQ8_0, n, k, rng);
    std::vector<uint8_t> packed(PackedBytes(WeightType::kQ8_0, n, k));
    std::vector<int> seen(rows.size(), 0);  // [bytes] times each byte was handed back
    std::mutex mu;
    PackBlockRows(WeightType::kQ8_0, packed.data(), rows.data(), n, k, nullptr, [&](const uint8_t* span, size_t bytes) {
      std::lock_guard<std::mutex> lock(mu);
      for (size_t i = 0; i < bytes; ++i) ++seen[size_t(span - rows.data()) + i];
    });
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), int64_t(seen.size())) << n;
    EXPECT_EQ(packed, Pack(WeightType::kQ8_0, rows, n, k));
    std::vector<int64_t> order(static_cast<size_t>(n));  // [n] the rows backwards
    for (int64_t r = 0; r < n; ++r) order[size_t(r)] = n - 1 - r;
    bool called = false;
    PackBlockRows(WeightType::kQ8_0, packed.data(), rows.data(), n, k, order.data(),
                  [&](const uint8_t*, size_t) { called = true; });
    EXPECT_FALSE(called);
  }
  std::vector<uint8_t> bytes(PackedBytes(WeightType::kQ4_0, 3, 32));
  std::vector<float> row(32);
  EXPECT_THROW(DequantizePackedRows(PackedBlocksAt(bytes.data(), WeightType::kQ4_0, 3, 32), row.data(), 3, 1),
               std::out_of_range);
  EXPECT_THROW(PackedBlocksAt(bytes.data(), WeightType::kQ4_0, 3, 40), std::invalid_argument);
  EXPECT_THROW(PackedBlocksAt(bytes.data(), WeightType::kF16, 3, 32), std::invalid_argument);
  EXPECT_THROW(PackedBlocksAt(bytes.data(), WeightType::kQ6_K, 3, 96), std::invalid_argument);  // not 256
}

struct Input {
  std::vector<int8_t> q;         // [m, k]
  std::vector<float> d;          // [m, k / 32]
  std::vector<int32_t> sum;      // [m, k / 32]
  std::vector<int32_t> sum_low;  // [m, k / 32]
  QuantizedInput view() const { return {q.data(), d.data(), sum.data(), sum_low.data()}; }
};

Input Quantized(const std::vector<float>& x, int64_t m, int64_t k) {
  const size_t blocks = x.size() / 32;
  Input in{std::vector<int8_t>(x.size()), std::vector<float>(blocks), std::vector<int32_t>(blocks),
           std::vector<int32_t>(blocks)};
  QuantizeInput(in.q.data(), in.d.data(), in.sum.data(), x.data(), m, k);
  SumLowHalves(in.sum_low.data(), in.q.data(), m, k);
  return in;
}

// y = x · wᵀ in double over the values the kernels multiply, and the sum of
// the terms' magnitudes, which bounds float32's rounding error: the kernels
// add in float32 what may cancel (Q4_K's min term against its scaled sum).
struct Product {
  std::vector<double> y;    // [m, n]
  std::vector<double> abs;  // [m, n] Σ |w x d|
};

Product Reference(const Input& x, const std::vector<float>& w, int64_t m, int64_t n, int64_t k) {
  Product p{std::vector<double>(size_t(m * n)), std::vector<double>(size_t(m * n))};
  for (int64_t r = 0; r < m; ++r)
    for (int64_t o = 0; o < n; ++o) {
      double s = 0, a = 0;
      for (int64_t c = 0; c < k; ++c) {
        const double t =
            double(w[size_t(o * k + c)]) * double(x.q[size_t(r * k + c)]) * double(x.d[size_t((r * k + c) / 32)]);
        s += t;
        a += std::fabs(t);
      }
      p.y[size_t(r * n + o)] = s;
      p.abs[size_t(r * n + o)] = a;
    }
  return p;
}

class BlockProductTest : public testing::SeededTest {};

TEST_F(BlockProductTest, EveryKernelMatchesTheReference) {
  std::normal_distribution<float> normal;
  for (BlockKernel kernel : BlockKernelsHere()) {
    SCOPED_TRACE(BlockKernelName(kernel));
    for (WeightType type : kBlockTypes)
      for (int64_t m : {1, 2, 3, 4, 5, 9})
        for (auto [n, k] : ShapesFor(type, {{1, 32}, {16, 64}, {37, 96}, {70, 512}})) {
          const std::vector<uint8_t> rows = RandomRows(type, n, k, rng);
          const std::vector<uint8_t> packed = Pack(type, rows, n, k);
          const PackedBlocks w = PackedBlocksAt(packed.data(), type, n, k);
          std::vector<float> wf(size_t(n * k)), x(size_t(m * k));  // [n, k], [m, k]
          DequantizeRows(type, wf.data(), rows.data(), n, k);
          for (auto& e : x) e = normal(rng);
          const Input in = Quantized(x, m, k);
          const Product ref = Reference(in, wf, m, n, k);
          // float32 rounds at 6e-8 of the terms; 101 seeds erred at most 2.4e-7 of Σ |terms|
          const auto tolerance = [&](size_t i) { return 2e-6 * ref.abs[i] + 1e-6; };
          std::vector<float> y(size_t(m * n), 0.25f);  // [m, n]
          BlockProductWith(kernel, y.data(), in.view(), w, m, /*accumulate=*/true);
          for (size_t i = 0; i < y.size(); ++i)
            ASSERT_NEAR(y[i], ref.y[i] + 0.25, tolerance(i))
                << WeightTypeName(type) << " m " << m << " n " << n << " k " << k << " at " << i;
          BlockProductWith(kernel, y.data(), in.view(), w, m);
          for (size_t i = 0; i < y.size(); ++i)
            ASSERT_NEAR(y[i], ref.y[i], tolerance(i))
                << WeightTypeName(type) << " m " << m << " n " << n << " k " << k << " at " << i;
        }
  }
}

// The largest sums the kernels' integer steps meet: every nibble 15 (and
// every int8 -128, which only a file from elsewhere holds; Q6_K: every q 63
// with scales of -128) against inputs of ±127. AVX2 adds a Q4_x block's
// pairs in int16 (at most 30480 here), Q5_x's four chunks' (31496) and
// Q6_K's two chunks' (32004).
TEST(BlockProduct, ExtremeValuesDoNotOverflow) {
  const int64_t n = 16, k = 256, m = 2;
  std::vector<float> x(size_t(m * k));  // row 0 all +1, row 1 all -1: q = ±127
  for (int64_t c = 0; c < k; ++c) x[size_t(c)] = 1, x[size_t(k + c)] = -1;
  const Input in = Quantized(x, m, k);
  ASSERT_EQ(in.q[0], 127);
  ASSERT_EQ(in.q[size_t(k)], -127);
  for (WeightType type : kBlockTypes) {
    std::vector<uint8_t> rows(size_t(n) * WeightRowBytes(type, k), type == WeightType::kQ8_0 ? 0x80 : 0xff);
    if (type == WeightType::kQ6_K) {
      for (size_t at = 0; at < rows.size(); at += kQ6KBytes) {
        std::memset(&rows[at + 192], 0x80, 16);        // scales -128
        rows[at + 208] = 0x00, rows[at + 209] = 0x3c;  // d = 1
      }
    } else if (type == WeightType::kQ4_K || type == WeightType::kQ5_K) {
      // scales and mins 63, every q 15 or 31 (0xff bytes)
      for (size_t at = 0; at < rows.size(); at += type == WeightType::kQ4_K ? kQ4KBytes : kQ5KBytes)
        rows[at] = 0x00, rows[at + 1] = 0x3c, rows[at + 2] = 0x00, rows[at + 3] = 0x30;  // d = 1, dmin = 0.125
    } else {
      for (size_t at = 0; at < rows.size(); at += QuantBlockBytes(type)) {
        rows[at] = 0x00, rows[at + 1] = 0x3c;                                                                  // d = 1
        if (type == WeightType::kQ4_1 || type == WeightType::kQ5_1) rows[at + 2] = 0x00, rows[at + 3] = 0xc0;  // m = -2
      }
    }
    const std::vector<uint8_t> packed = Pack(type, rows, n, k);
    // each value -128 (Q8_0), 15 - 8 = 7 (Q4_0), 15 - 2 = 13 (Q4_1),
    // 31 - 16 = 15 (Q5_0), 31 - 2 = 29 (Q5_1),
    // 63 * 15 - 63 / 8 (Q4_K), 63 * 31 - 63 / 8 (Q5_K) or -128 (63 - 32)
    // (Q6_K), times ±127 · d_x
    const double value = type == WeightType::kQ8_0   ? -128
                         : type == WeightType::kQ4_0 ? 7
                         : type == WeightType::kQ4_1 ? 13
                         : type == WeightType::kQ5_0 ? 15
                         : type == WeightType::kQ5_1 ? 29
                         : type == WeightType::kQ4_K ? 63 * 15 - 63 / 8.0
                         : type == WeightType::kQ5_K ? 63 * 31 - 63 / 8.0
                                                     : -128 * 31;
    for (BlockKernel kernel : BlockKernelsHere()) {
      std::vector<float> y(size_t(m * n));
      BlockProductWith(kernel, y.data(), in.view(), PackedBlocksAt(packed.data(), type, n, k), m);
      for (int64_t r = 0; r < m; ++r)
        for (int64_t o = 0; o < n; ++o) {
          const double want = value * k * in.q[size_t(r * k)] * in.d[size_t(r * k / 32)];
          EXPECT_NEAR(y[size_t(r * n + o)], want, 1e-6 * std::fabs(want))
              << BlockKernelName(kernel) << " " << WeightTypeName(type);
        }
    }
  }
}

TEST(BlockProduct, QuantizesAlikeOnEveryTarget) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal;
  const int64_t m = 5, k = 160;
  std::vector<float> x(size_t(m * k));
  for (auto& e : x) e = normal(rng) * 3;
  std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // a block of zeros: d = 0, q = 0
  const Input best = Quantized(x, m, k);
  hwy::SetSupportedTargetsForTest(HWY_SCALAR);  // below AVX2: the C++ loop
  ASSERT_EQ(BestBlockKernel(), BlockKernel::kScalar);
  const Input plain = Quantized(x, m, k);
  hwy::SetSupportedTargetsForTest(0);
  EXPECT_EQ(best.q, plain.q);
  EXPECT_EQ(std::memcmp(best.d.data(), plain.d.data(), best.d.size() * sizeof(float)), 0);
  EXPECT_EQ(best.sum, plain.sum);
  EXPECT_EQ(plain.d[1], 0.0f);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_LE(std::fabs(x[i] - plain.q[i] * plain.d[i / 32]), plain.d[i / 32] * 0.5f + 1e-7f) << i;
    EXPECT_LE(std::abs(int(plain.q[i])), 127);
  }
  int32_t s = 0;
  for (int i = 0; i < 32; ++i) s += plain.q[size_t(i)];
  EXPECT_EQ(plain.sum[0], s);
}

// A layer's q, k and v (sizes that leave part pieces) in one region on 1-3
// threads, each output bit for bit as BlockProduct alone on one thread.
TEST(BlockProduct, SeveralOutputsOnThreadsMatchOneAtATime) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  const int64_t k = 512, outs_n[] = {600, 128, 70};
  const int threads_before = omp_get_max_threads();
  for (WeightType type : {WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ4_K, WeightType::kQ6_K})
    for (int64_t m : {1, 3}) {
      std::vector<std::vector<uint8_t>> packed;  // [outs] each output's packed rows
      std::vector<float> x(size_t(m * k));       // [m, k]
      for (auto& e : x) e = normal(rng);
      std::vector<std::vector<float>> alone;  // [outs][m, n] one product at a time, one thread
      omp_set_num_threads(1);
      for (int64_t n : outs_n) {
        packed.push_back(Pack(type, RandomRows(type, n, k, rng), n, k));
        alone.emplace_back(size_t(m * n));
        BlockProduct(alone.back().data(), x.data(), PackedBlocksAt(packed.back().data(), type, n, k), m);
      }
      for (int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        std::vector<std::vector<float>> y;  // [outs][m, n]
        std::vector<BlockOutput> outs;
        for (size_t i = 0; i < packed.size(); ++i) {
          y.emplace_back(size_t(m * outs_n[i]));
          outs.push_back(BlockOutput{y.back().data(), PackedBlocksAt(packed[i].data(), type, outs_n[i], k)});
        }
        BlockProducts(x.data(), m, outs.data(), int64_t(outs.size()));
        for (size_t i = 0; i < y.size(); ++i)
          EXPECT_EQ(y[i], alone[i]) << WeightTypeName(type) << " m " << m << " threads " << threads << " out " << i;
      }
    }
  omp_set_num_threads(threads_before);
}

TEST(BlockProduct, RejectsBadSizes) {
  std::vector<uint8_t> packed(PackedBytes(WeightType::kQ8_0, 16, 32));
  const PackedBlocks w = PackedBlocksAt(packed.data(), WeightType::kQ8_0, 16, 32);
  std::vector<float> x(32), y(16);
  EXPECT_THROW(BlockProduct(y.data(), x.data(), w, 0), std::invalid_argument);
  EXPECT_THROW(BlockProduct(nullptr, x.data(), w, 1), std::invalid_argument);
  EXPECT_THROW(BlockProduct(y.data(), nullptr, w, 1), std::invalid_argument);
  std::vector<int8_t> q(48);
  std::vector<float> d(2);
  std::vector<int32_t> sum(2);
  EXPECT_THROW(QuantizeInput(q.data(), d.data(), sum.data(), x.data(), 1, 48), std::invalid_argument);
}

}  // namespace
}  // namespace swan
