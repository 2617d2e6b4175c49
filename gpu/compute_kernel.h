// A compute shader ready to run (pipeline, its layout of storage buffers
// and push constants), and a batch of dispatches submitted at once.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "gpu/device_buffer.h"
#include "gpu/spirv.h"
#include "gpu/vulkan_device.h"

namespace swan {

class ComputeKernel {
 public:
  // A shader whose storage buffers are bindings 0 .. buffers - 1 of set 0,
  // with push_bytes of push constants.
  ComputeKernel(VulkanDevice& device, SpirV code, int buffers, uint32_t push_bytes);
  ~ComputeKernel();
  ComputeKernel(const ComputeKernel&) = delete;
  ComputeKernel& operator=(const ComputeKernel&) = delete;

  int buffers() const { return buffers_; }
  uint32_t push_bytes() const { return push_bytes_; }
  VkPipeline pipeline() const { return pipeline_; }
  VkPipelineLayout layout() const { return layout_; }
  VkDescriptorSetLayout set_layout() const { return set_layout_; }

 private:
  VulkanDevice& device_;
  int buffers_;
  uint32_t push_bytes_;
  VkShaderModule module_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
};

// Dispatches recorded into one command buffer, each after a barrier on the
// ones before (a kernel reads what the last one wrote), run by Run().
class CommandBatch {
 public:
  explicit CommandBatch(VulkanDevice& device);
  ~CommandBatch();
  CommandBatch(const CommandBatch&) = delete;
  CommandBatch& operator=(const CommandBatch&) = delete;

  // groups: the grid of workgroups; push: kernel.push_bytes() bytes.
  void Dispatch(const ComputeKernel& kernel, std::initializer_list<const DeviceBuffer*> buffers, const void* push,
                uint32_t groups_x, uint32_t groups_y = 1, uint32_t groups_z = 1);
  // Copies bytes [from_offset, + bytes) of `from` to `to` at to_offset,
  // after the dispatches before it and before those after it.
  void Copy(const DeviceBuffer& from, size_t from_offset, DeviceBuffer& to, size_t to_offset, size_t bytes);
  // Submits what was recorded and waits for it; the batch is then empty.
  void Run();
  int dispatches() const { return dispatches_; }

 private:
  VkDescriptorSet NewSet(const ComputeKernel& kernel);
  void Begin();

  VulkanDevice& device_;
  VkCommandBuffer cb_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> pools_;  // the last has room; all reset by Run()
  int sets_in_last_pool_ = 0;
  int dispatches_ = 0;
};

}  // namespace swan
