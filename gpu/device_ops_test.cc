// Every shader against the CPU on random inputs of odd sizes: the matrix-
// vector product of each weight type against a float64 product of the
// same values dequantized by swan's CPU code, and RMSNorm against
// ops/elementwise.h's. On a machine without a Vulkan device the tests are
// skipped, unless SWAN_REQUIRE_VULKAN=1 (CI), where they fail.
#include "gpu/device_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "ops/elementwise.h"
#include "ops/quant_blocks.h"
#include "util/bf16.h"
#include "util/f16.h"
#include "gpu/device_test_util.h"
#include "util/seeded_test.h"

namespace swan {
namespace {

// w [n, k] as `type`'s rows: [n, WeightRowBytes(type, k)].
std::vector<uint8_t> RowsOf(WeightType type, const std::vector<float>& w, int64_t n, int64_t k) {
  if (IsBlockQuantized(type)) return QuantizeRows(type, w.data(), n, k);
  std::vector<uint8_t> rows(size_t(n) * WeightRowBytes(type, k));
  for (size_t i = 0; i < w.size(); ++i) {
    if (type == WeightType::kF32) {
      std::memcpy(rows.data() + 4 * i, &w[i], 4);
      continue;
    }
    const uint16_t half = type == WeightType::kBF16 ? F32ToBF16(w[i]) : F32ToF16(w[i]);
    std::memcpy(rows.data() + 2 * i, &half, 2);
  }
  return rows;
}

class DeviceMatVec : public VulkanTest {
 protected:
  // Checks y = x · wᵀ on the device for w [n, k] of `type` and m rows of x.
  void Check(WeightType type, int64_t n, int64_t k, int64_t m) {
    SCOPED_TRACE(std::string(WeightTypeName(type)) + " n " + std::to_string(n) + " k " + std::to_string(k) + " m " +
                 std::to_string(m));
    std::normal_distribution<float> normal;
    std::vector<float> w(size_t(n * k)), x(size_t(m * k));  // [n, k], [m, k]
    for (float& v : w) v = normal(rng);
    for (float& v : x) v = normal(rng);
    const std::vector<uint8_t> rows = RowsOf(type, w, n, k);
    std::vector<float> held(size_t(n * k));  // [n, k] the values the rows hold
    DequantizeRows(type, held.data(), rows.data(), n, k);

    VulkanDevice& device = *Device();
    DeviceKernels kernels(device);
    const DeviceMatrix dw = UploadMatrix(device, type, rows.data(), n, k);
    DeviceBuffer dx(device, x.size() * 4), dy(device, size_t(m * n) * 4);
    dx.Upload(x.data(), x.size() * 4);
    CommandBatch batch(device);
    RecordMatVec(batch, kernels, dw, dx, dy, m);
    batch.Run();
    std::vector<float> y(size_t(m * n));  // [m, n]
    dy.Download(y.data(), y.size() * 4);

    int bad = 0;
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < n; ++j) {
        double ref = 0, scale = 0;
        for (int64_t i = 0; i < k; ++i) {
          ref += double(held[size_t(j * k + i)]) * x[size_t(r * k + i)];
          scale += std::fabs(double(held[size_t(j * k + i)]) * x[size_t(r * k + i)]);
        }
        const float got = y[size_t(r * n + j)];
        if (!(std::fabs(got - ref) <= 2e-6 * scale + 1e-6) && ++bad <= 5)
          ADD_FAILURE() << "y[" << r << ", " << j << "] = " << got << ", expected " << ref << " (Σ|w x| " << scale
                        << ")";
      }
    EXPECT_EQ(bad, 0);
  }
};

// Every type with a shader (f32, bf16, f16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// Q4_K, Q5_K, Q6_K: every type swan reads), on
// shapes whose k counts its blocks: 1, 45, 9 and 7 of them; input rows in
// whole tiles of a workgroup's and in a last part tile.
TEST_F(DeviceMatVec, EveryTypeMatchesTheCpuOnOddSizes) {
  SWAN_NEED_VULKAN();
  int types = 0;
  for (WeightType type : AllWeightTypes()) {
    if (!HasDeviceMatVec(type)) continue;
    ++types;
    const int64_t unit = IsBlockQuantized(type) ? RowMultiple(type) : 1;
    for (const auto& [n, blocks, m] :
         std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {37, 45, 1}, {5, 9, 3}, {130, 7, 2}, {3, 2, 9}, {17, 3, 4}})
      Check(type, n, blocks * unit, m);
  }
  EXPECT_EQ(types, 11);
}

// Rows past 65535 go to the grid's second dimension.
TEST_F(DeviceMatVec, MoreRowsThanOneGridDimensionHolds) {
  SWAN_NEED_VULKAN();
  Check(WeightType::kQ8_0, 65537, 32, 1);
}

TEST_F(DeviceMatVec, RefusesShortBuffers) {
  SWAN_NEED_VULKAN();
  VulkanDevice& device = *Device();
  DeviceKernels kernels(device);
  const std::vector<float> w(64 * 8, 1.0f);  // [8, 64]
  const DeviceMatrix dw = UploadMatrix(device, WeightType::kF32, w.data(), 8, 64);
  DeviceBuffer short_x(device, 63 * 4), y(device, 8 * 4), x(device, 64 * 4);
  CommandBatch batch(device);
  EXPECT_THROW(RecordMatVec(batch, kernels, dw, short_x, y, 1), std::invalid_argument);
  EXPECT_THROW(RecordMatVec(batch, kernels, dw, x, y, 2), std::invalid_argument);
  EXPECT_EQ(batch.dispatches(), 0);
}

class DeviceRmsNorm : public VulkanTest {};

TEST_F(DeviceRmsNorm, MatchesTheCpuWithAndWithoutGemmasOne) {
  SWAN_NEED_VULKAN();
  VulkanDevice& device = *Device();
  DeviceKernels kernels(device);
  std::normal_distribution<float> normal;
  for (const auto& [rows, dim] : std::vector<std::array<int64_t, 2>>{{1, 1}, {3, 67}, {2, 1000}})
    for (const bool add_one : {false, true}) {
      SCOPED_TRACE(std::to_string(rows) + " rows of " + std::to_string(dim) + (add_one ? ", 1 + w" : ""));
      std::vector<float> x(static_cast<size_t>(rows * dim)), w(static_cast<size_t>(dim)), cpu(x.size()),
          gpu(x.size());  // [rows, dim], [dim]
      for (float& v : x) v = normal(rng);
      for (float& v : w) v = normal(rng);
      std::vector<float> w_cpu = w;  // [dim] the weight the CPU multiplies by
      if (add_one)
        for (float& v : w_cpu) v += 1.0f;
      RmsNorm(cpu.data(), x.data(), w_cpu.data(), 1e-5f, rows, dim);
      DeviceBuffer dx(device, x.size() * 4), dw(device, w.size() * 4), dout(device, x.size() * 4);
      dx.Upload(x.data(), x.size() * 4);
      dw.Upload(w.data(), w.size() * 4);
      CommandBatch batch(device);
      RecordRmsNorm(batch, kernels, dx, dw, dout, rows, dim, 1e-5f, add_one);
      batch.Run();
      dout.Download(gpu.data(), gpu.size() * 4);
      for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(gpu[i], cpu[i], 2e-5f * (1 + std::fabs(cpu[i]))) << i;
    }
}

// Several dispatches in one batch: each reads what the one before wrote.
TEST_F(DeviceRmsNorm, ABatchOrdersItsDispatches) {
  SWAN_NEED_VULKAN();
  VulkanDevice& device = *Device();
  DeviceKernels kernels(device);
  std::normal_distribution<float> normal;
  const int64_t dim = 96, n = 40;
  std::vector<float> x(dim), norm(dim), w(n * dim), y(n), ones(dim, 1.0f);  // [dim], [n, dim], [n]
  for (float& v : x) v = normal(rng);
  for (float& v : w) v = normal(rng);
  RmsNorm(norm.data(), x.data(), ones.data(), 1e-6f, 1, dim);
  DeviceBuffer dx(device, dim * 4), dones(device, dim * 4), dnorm(device, dim * 4), dy(device, n * 4);
  dx.Upload(x.data(), dim * 4);
  dones.Upload(ones.data(), dim * 4);
  const DeviceMatrix dw = UploadMatrix(device, WeightType::kF32, w.data(), n, dim);
  CommandBatch batch(device);
  RecordRmsNorm(batch, kernels, dx, dones, dnorm, 1, dim, 1e-6f, false);
  RecordMatVec(batch, kernels, dw, dnorm, dy, 1);
  EXPECT_EQ(batch.dispatches(), 2);
  batch.Run();
  dy.Download(y.data(), n * 4);
  for (int64_t j = 0; j < n; ++j) {
    double ref = 0;
    for (int64_t i = 0; i < dim; ++i) ref += double(w[size_t(j * dim + i)]) * norm[size_t(i)];
    EXPECT_NEAR(y[size_t(j)], ref, 1e-4 * (1 + std::fabs(ref))) << j;
  }
}

class VulkanDevices : public VulkanTest {};

TEST_F(VulkanDevices, ListedDevicesOpenAndABadIndexIsRefused) {
  SWAN_NEED_VULKAN();
  const std::vector<VulkanDeviceInfo> devices = ListVulkanDevices();
  ASSERT_FALSE(devices.empty());
  EXPECT_FALSE(devices[0].name.empty());
  EXPECT_GT(devices[0].subgroup_size, 0u);
  EXPECT_NE(VulkanReport().find(devices[0].name), std::string::npos);
  try {
    VulkanDevice none(int(devices.size()));
    FAIL() << "opened device " << devices.size();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no Vulkan device " + std::to_string(devices.size())), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace swan
