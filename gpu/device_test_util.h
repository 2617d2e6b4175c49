// What the gpu/ tests share: the device they run on, opened once per test
// program, and the rule for a machine without one: skip, or fail under
// SWAN_REQUIRE_VULKAN=1 (CI).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "gpu/vulkan_device.h"
#include "model/model.h"
#include "util/seeded_test.h"

namespace swan {

// Opened once for every test of the program (a device takes 0.1-0.3 s).
inline VulkanDevice* Device() {
  static std::unique_ptr<VulkanDevice> device = [] {
    std::string reason;
    if (ListVulkanDevices(&reason).empty()) return std::unique_ptr<VulkanDevice>();
    return std::make_unique<VulkanDevice>(0);
  }();
  return device.get();
}

inline bool VulkanRequired() {
  const char* v = std::getenv("SWAN_REQUIRE_VULKAN");
  return v && std::strcmp(v, "1") == 0;
}

#define SWAN_NEED_VULKAN()                                                                      \
  do {                                                                                          \
    if (!Device()) {                                                                            \
      std::string reason;                                                                       \
      ListVulkanDevices(&reason);                                                               \
      if (VulkanRequired()) FAIL() << "SWAN_REQUIRE_VULKAN=1 and no Vulkan device: " << reason; \
      GTEST_SKIP() << "no Vulkan device: " << reason;                                           \
    }                                                                                           \
  } while (0)

// The model in `dir` with its forward on device 0.
inline std::unique_ptr<LanguageModel> LoadOnDevice(const std::string& dir) {
  LoadOptions on_device;
  on_device.vulkan_device = 0;
  return LoadModel(dir, on_device);
}

// A test on the device: with SWAN_VULKAN_VALIDATION=1 (a CTest entry of
// its own), it fails on any message of the validation layer.
class VulkanTest : public testing::SeededTest {
 protected:
  void TearDown() override {
    if (Device()) {
      EXPECT_EQ(Device()->validation_messages(), 0) << "messages of the validation layer (stderr)";
    }
    testing::SeededTest::TearDown();
  }
};

}  // namespace swan
