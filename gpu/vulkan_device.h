// The Vulkan devices swan can run kernels on, and an open one: instance,
// logical device, one compute queue and a command pool. Every failure is
// a std::runtime_error with one line that names what is missing.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>
#include <vector>

namespace swan {

// What a device offers the kernels.
struct VulkanDeviceInfo {
  int index = 0;
  std::string name;  // "llvmpipe (LLVM 15.0.6, 256 bits)", "NVIDIA H100 80GB HBM3"
  std::string kind;  // "cpu", "discrete GPU", "integrated GPU", "virtual GPU", "other"
  uint32_t api_version = 0;
  uint32_t subgroup_size = 0;
  uint64_t memory_bytes = 0;               // its largest device-local heap
  bool float16 = false;                    // shaderFloat16
  bool int8 = false;                       // shaderInt8
  bool storage16 = false;                  // 16-bit storage buffers
  bool storage8 = false;                   // 8-bit storage buffers
  uint32_t storage_buffers_per_stage = 0;  // maxPerStageDescriptorStorageBuffers
};

// Every device with a compute queue, in the loader's order: empty when
// there is no Vulkan loader or driver (why, in *reason, when given).
std::vector<VulkanDeviceInfo> ListVulkanDevices(std::string* reason = nullptr);

// The lines `swan --version` prints about Vulkan: each device, or why none.
std::string VulkanReport();

// SWAN_VULKAN_VALIDATION=1 turns on the Khronos validation layer for every
// device opened; its messages go to stderr and are counted.
class VulkanDevice {
 public:
  // Opens device `index` of ListVulkanDevices().
  explicit VulkanDevice(int index = 0);
  ~VulkanDevice();
  VulkanDevice(const VulkanDevice&) = delete;
  VulkanDevice& operator=(const VulkanDevice&) = delete;

  const VulkanDeviceInfo& info() const { return info_; }
  VkDevice device() const { return device_; }
  VkQueue queue() const { return queue_; }
  VkCommandPool command_pool() const { return pool_; }
  // A memory type among type_bits with every flag of `want`; -1 if none.
  int MemoryType(uint32_t type_bits, VkMemoryPropertyFlags want) const;
  // Whether storage buffers are copied through staging buffers even where
  // the host can map them (SWAN_VULKAN_STAGING=1: how a discrete GPU's
  // copies run, tested on lavapipe).
  bool stage_copies() const { return stage_copies_; }
  // Validation messages (warnings and errors) since the device opened.
  int validation_messages() const { return validation_messages_; }

  // Runs a one-off command buffer that record() fills, and waits for it.
  template <class Record>
  void RunOnce(const Record& record) {
    VkCommandBuffer cb = BeginOnce();
    record(cb);
    SubmitOnce(cb);
  }

 private:
  void Release();  // destroys what was created, in reverse order
  VkCommandBuffer BeginOnce();
  void SubmitOnce(VkCommandBuffer cb);
  static VKAPI_ATTR VkBool32 VKAPI_CALL OnValidation(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                     VkDebugUtilsMessageTypeFlagsEXT types,
                                                     const VkDebugUtilsMessengerCallbackDataEXT* data, void* self);

  VulkanDeviceInfo info_;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  int validation_messages_ = 0;
  bool stage_copies_ = false;
};

// A Vulkan structure, zeroed, with its sType.
template <class T>
T VkInfo(VkStructureType type) {
  T info{};
  info.sType = type;
  return info;
}

// Throws std::runtime_error naming `what` unless result is VK_SUCCESS.
void CheckVulkan(VkResult result, const char* what);

}  // namespace swan
