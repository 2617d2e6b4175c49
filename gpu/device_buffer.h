// A storage buffer in a Vulkan device's memory, with copies in and out.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>

#include "gpu/vulkan_device.h"

namespace swan {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // `bytes` (rounded up to 4; at least 4) of device-local memory, mapped
  // when the host can see it (lavapipe, integrated GPUs, resizable BAR);
  // otherwise copies go through a staging buffer.
  DeviceBuffer(VulkanDevice& device, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Copies src [bytes] to the buffer from byte `offset`.
  void Upload(const void* src, size_t bytes, size_t offset = 0);
  // Copies the buffer's [offset, offset + bytes) to dst.
  void Download(void* dst, size_t bytes, size_t offset = 0) const;

  VkBuffer handle() const { return buffer_; }
  size_t bytes() const { return bytes_; }

 private:
  void Release();
  void RequireRange(size_t bytes, size_t offset) const;

  VulkanDevice* device_ = nullptr;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  void* mapped_ = nullptr;  // null when the host cannot see the memory
  size_t bytes_ = 0;
};

}  // namespace swan
