#include "gpu/device_buffer.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace swan {

namespace {

// A buffer and its own memory of a type with every flag in `want` (falling
// back to `fallback`); *mapped set when the memory is host-visible.
void MakeBuffer(VulkanDevice& device, size_t bytes, VkBufferUsageFlags usage, VkMemoryPropertyFlags want,
                VkMemoryPropertyFlags fallback, VkBuffer* buffer, VkDeviceMemory* memory, void** mapped) {
  auto create = VkInfo<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  create.size = bytes;
  create.usage = usage;
  create.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  CheckVulkan(vkCreateBuffer(device.device(), &create, nullptr, buffer), "creating a buffer");
  VkMemoryRequirements needs;
  vkGetBufferMemoryRequirements(device.device(), *buffer, &needs);
  int type = device.MemoryType(needs.memoryTypeBits, want);
  if (type < 0) type = device.MemoryType(needs.memoryTypeBits, fallback);
  if (type < 0) {
    vkDestroyBuffer(device.device(), *buffer, nullptr);
    throw std::runtime_error("Vulkan: no memory type for a buffer of " + std::to_string(bytes) + " bytes");
  }
  auto alloc = VkInfo<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  alloc.allocationSize = needs.size;
  alloc.memoryTypeIndex = uint32_t(type);
  const VkResult got = vkAllocateMemory(device.device(), &alloc, nullptr, memory);
  if (got != VK_SUCCESS) {
    vkDestroyBuffer(device.device(), *buffer, nullptr);
    if (got == VK_ERROR_OUT_OF_DEVICE_MEMORY || got == VK_ERROR_OUT_OF_HOST_MEMORY)
      throw std::runtime_error("out of memory on Vulkan device " + std::to_string(device.info().index) + " (" +
                               device.info().name + ") allocating " + std::to_string(bytes >> 20) +
                               " MiB; leave out --device to run on the CPU");
    CheckVulkan(got, "allocating device memory");
  }
  vkBindBufferMemory(device.device(), *buffer, *memory, 0);
  *mapped = nullptr;
  if (!(usage & VK_BUFFER_USAGE_STORAGE_BUFFER_BIT && device.stage_copies()) &&
      device.MemoryType(1u << type, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) == type)
    CheckVulkan(vkMapMemory(device.device(), *memory, 0, VK_WHOLE_SIZE, 0, mapped), "mapping device memory");
}

constexpr VkBufferUsageFlags kStorage =
    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
constexpr VkMemoryPropertyFlags kHostCoherent =
    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;

// A host-visible buffer for one copy to or from a device-local one.
struct Staging {
  VulkanDevice& device;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
  Staging(VulkanDevice& d, size_t bytes) : device(d) {
    MakeBuffer(d, bytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, kHostCoherent,
               kHostCoherent, &buffer, &memory, &mapped);
  }
  ~Staging() {
    vkDestroyBuffer(device.device(), buffer, nullptr);
    vkFreeMemory(device.device(), memory, nullptr);
  }
};

void Copy(VulkanDevice& device, VkBuffer from, size_t from_offset, VkBuffer to, size_t to_offset, size_t bytes) {
  device.RunOnce([&](VkCommandBuffer cb) {
    const VkBufferCopy region{from_offset, to_offset, bytes};
    vkCmdCopyBuffer(cb, from, to, 1, &region);
  });
}

}  // namespace

DeviceBuffer::DeviceBuffer(VulkanDevice& device, size_t bytes) : device_(&device) {
  bytes_ = bytes < 4 ? 4 : (bytes + 3) / 4 * 4;
  MakeBuffer(device, bytes_, kStorage, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | kHostCoherent,
             VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &buffer_, &memory_, &mapped_);
}

DeviceBuffer::~DeviceBuffer() { Release(); }

void DeviceBuffer::Release() {
  if (!device_) return;
  if (buffer_) vkDestroyBuffer(device_->device(), buffer_, nullptr);
  if (memory_) vkFreeMemory(device_->device(), memory_, nullptr);
  buffer_ = VK_NULL_HANDLE;
  memory_ = VK_NULL_HANDLE;
  mapped_ = nullptr;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    device_ = std::exchange(other.device_, nullptr);
    buffer_ = std::exchange(other.buffer_, VK_NULL_HANDLE);
    memory_ = std::exchange(other.memory_, VK_NULL_HANDLE);
    mapped_ = std::exchange(other.mapped_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::RequireRange(size_t bytes, size_t offset) const {
  if (!device_ || offset > bytes_ || bytes > bytes_ - offset)
    throw std::invalid_argument("device buffer: bytes [" + std::to_string(offset) + ", " +
                                std::to_string(offset + bytes) + ") of a buffer of " + std::to_string(bytes_));
}

void DeviceBuffer::Upload(const void* src, size_t bytes, size_t offset) {
  RequireRange(bytes, offset);
  if (bytes == 0) return;
  if (mapped_) {
    std::memcpy(static_cast<char*>(mapped_) + offset, src, bytes);
    return;
  }
  Staging staging(*device_, bytes);
  std::memcpy(staging.mapped, src, bytes);
  Copy(*device_, staging.buffer, 0, buffer_, offset, bytes);
}

void DeviceBuffer::Download(void* dst, size_t bytes, size_t offset) const {
  RequireRange(bytes, offset);
  if (bytes == 0) return;
  if (mapped_) {
    std::memcpy(dst, static_cast<const char*>(mapped_) + offset, bytes);
    return;
  }
  Staging staging(*device_, bytes);
  Copy(*device_, buffer_, offset, staging.buffer, 0, bytes);
  std::memcpy(dst, staging.mapped, bytes);
}

}  // namespace swan
