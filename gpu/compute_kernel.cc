#include "gpu/compute_kernel.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace swan {

namespace {
// Descriptor sets per pool, and storage buffers a kernel may bind.
constexpr int kSetsPerPool = 256;
constexpr int kMaxBuffers = 8;
}  // namespace

ComputeKernel::ComputeKernel(VulkanDevice& device, SpirV code, int buffers, uint32_t push_bytes)
    : device_(device), buffers_(buffers), push_bytes_(push_bytes) {
  if (buffers < 1 || buffers > kMaxBuffers || code.size % 4 != 0 || code.size == 0)
    throw std::invalid_argument("compute kernel: " + std::to_string(buffers) + " buffers, " +
                                std::to_string(code.size) + " bytes of SPIR-V");
  if (uint32_t(buffers) > device.info().storage_buffers_per_stage)
    throw std::runtime_error("Vulkan device '" + device.info().name + "' binds " +
                             std::to_string(device.info().storage_buffers_per_stage) +
                             " storage buffers per shader and swan's need " + std::to_string(buffers) +
                             ": leave out --device to run on the CPU");
  std::vector<uint32_t> words(code.size / 4);  // [size / 4] aligned for the driver
  std::memcpy(words.data(), code.bytes, code.size);
  auto module = VkInfo<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  module.codeSize = code.size;
  module.pCode = words.data();
  CheckVulkan(vkCreateShaderModule(device.device(), &module, nullptr, &module_), "creating a shader module");
  std::vector<VkDescriptorSetLayoutBinding> bindings(static_cast<size_t>(buffers));
  for (int b = 0; b < buffers; ++b) {
    bindings[size_t(b)].binding = uint32_t(b);
    bindings[size_t(b)].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[size_t(b)].descriptorCount = 1;
    bindings[size_t(b)].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  auto set = VkInfo<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  set.bindingCount = uint32_t(buffers);
  set.pBindings = bindings.data();
  CheckVulkan(vkCreateDescriptorSetLayout(device.device(), &set, nullptr, &set_layout_), "creating a set layout");
  const VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  auto layout = VkInfo<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  layout.setLayoutCount = 1;
  layout.pSetLayouts = &set_layout_;
  layout.pushConstantRangeCount = push_bytes ? 1 : 0;
  layout.pPushConstantRanges = &push;
  CheckVulkan(vkCreatePipelineLayout(device.device(), &layout, nullptr, &layout_), "creating a pipeline layout");
  auto pipeline = VkInfo<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  pipeline.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pipeline.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipeline.stage.module = module_;
  pipeline.stage.pName = "main";
  pipeline.layout = layout_;
  CheckVulkan(vkCreateComputePipelines(device.device(), VK_NULL_HANDLE, 1, &pipeline, nullptr, &pipeline_),
              "creating a compute pipeline");
}

ComputeKernel::~ComputeKernel() {
  VkDevice d = device_.device();
  if (pipeline_) vkDestroyPipeline(d, pipeline_, nullptr);
  if (layout_) vkDestroyPipelineLayout(d, layout_, nullptr);
  if (set_layout_) vkDestroyDescriptorSetLayout(d, set_layout_, nullptr);
  if (module_) vkDestroyShaderModule(d, module_, nullptr);
}

CommandBatch::CommandBatch(VulkanDevice& device) : device_(device) {
  auto alloc = VkInfo<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  alloc.commandPool = device.command_pool();
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  CheckVulkan(vkAllocateCommandBuffers(device.device(), &alloc, &cb_), "allocating a command buffer");
  Begin();
}

CommandBatch::~CommandBatch() {
  vkFreeCommandBuffers(device_.device(), device_.command_pool(), 1, &cb_);
  for (VkDescriptorPool pool : pools_) vkDestroyDescriptorPool(device_.device(), pool, nullptr);
}

void CommandBatch::Begin() {
  auto begin = VkInfo<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  CheckVulkan(vkBeginCommandBuffer(cb_, &begin), "beginning a command buffer");
}

VkDescriptorSet CommandBatch::NewSet(const ComputeKernel& kernel) {
  if (pools_.empty() || sets_in_last_pool_ == kSetsPerPool) {
    const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * kMaxBuffers};
    auto create = VkInfo<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
    create.maxSets = kSetsPerPool;
    create.poolSizeCount = 1;
    create.pPoolSizes = &size;
    VkDescriptorPool pool;
    CheckVulkan(vkCreateDescriptorPool(device_.device(), &create, nullptr, &pool), "creating a descriptor pool");
    pools_.push_back(pool);
    sets_in_last_pool_ = 0;
  }
  const VkDescriptorSetLayout layout = kernel.set_layout();
  auto alloc = VkInfo<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
  alloc.descriptorPool = pools_.back();
  alloc.descriptorSetCount = 1;
  alloc.pSetLayouts = &layout;
  VkDescriptorSet set;
  CheckVulkan(vkAllocateDescriptorSets(device_.device(), &alloc, &set), "allocating a descriptor set");
  ++sets_in_last_pool_;
  return set;
}

void CommandBatch::Dispatch(const ComputeKernel& kernel, std::initializer_list<const DeviceBuffer*> buffers,
                            const void* push, uint32_t groups_x, uint32_t groups_y, uint32_t groups_z) {
  if (int(buffers.size()) != kernel.buffers())
    throw std::invalid_argument("dispatch: " + std::to_string(buffers.size()) + " buffers for a kernel of " +
                                std::to_string(kernel.buffers()));
  if (groups_x == 0 || groups_y == 0 || groups_z == 0) return;  // nothing to do
  const VkDescriptorSet set = NewSet(kernel);
  VkDescriptorBufferInfo infos[kMaxBuffers];
  VkWriteDescriptorSet writes[kMaxBuffers];
  int b = 0;
  for (const DeviceBuffer* buffer : buffers) {
    infos[b] = {buffer->handle(), 0, VK_WHOLE_SIZE};
    writes[b] = VkInfo<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
    writes[b].dstSet = set;
    writes[b].dstBinding = uint32_t(b);
    writes[b].descriptorCount = 1;
    writes[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[b].pBufferInfo = &infos[b];
    ++b;
  }
  vkUpdateDescriptorSets(device_.device(), uint32_t(b), writes, 0, nullptr);
  vkCmdBindPipeline(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, kernel.pipeline());
  vkCmdBindDescriptorSets(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, kernel.layout(), 0, 1, &set, 0, nullptr);
  if (kernel.push_bytes())
    vkCmdPushConstants(cb_, kernel.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, kernel.push_bytes(), push);
  vkCmdDispatch(cb_, groups_x, groups_y, groups_z);
  auto barrier = VkInfo<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask =
      VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT;
  vkCmdPipelineBarrier(
      cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
      &barrier, 0, nullptr, 0, nullptr);
  ++dispatches_;
}

void CommandBatch::Copy(const DeviceBuffer& from, size_t from_offset, DeviceBuffer& to, size_t to_offset,
                        size_t bytes) {
  if (from_offset > from.bytes() || bytes > from.bytes() - from_offset || to_offset > to.bytes() ||
      bytes > to.bytes() - to_offset)
    throw std::invalid_argument("device copy of " + std::to_string(bytes) + " bytes out of its buffers");
  if (bytes == 0) return;
  const VkBufferCopy region{from_offset, to_offset, bytes};
  vkCmdCopyBuffer(cb_, from.handle(), to.handle(), 1, &region);
  auto barrier = VkInfo<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                          VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(cb_, VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier, 0,
                       nullptr, 0, nullptr);
  ++dispatches_;
}

void CommandBatch::Run() {
  CheckVulkan(vkEndCommandBuffer(cb_), "ending a command buffer");
  auto submit = VkInfo<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cb_;
  VkResult done = vkQueueSubmit(device_.queue(), 1, &submit, VK_NULL_HANDLE);
  if (done == VK_SUCCESS) done = vkQueueWaitIdle(device_.queue());
  vkResetCommandBuffer(cb_, 0);
  for (VkDescriptorPool pool : pools_) vkResetDescriptorPool(device_.device(), pool, 0);
  if (!pools_.empty()) {
    for (size_t i = 1; i < pools_.size(); ++i) vkDestroyDescriptorPool(device_.device(), pools_[i], nullptr);
    pools_.resize(1);
  }
  sets_in_last_pool_ = 0;
  dispatches_ = 0;
  Begin();
  if (done == VK_ERROR_DEVICE_LOST)
    throw std::runtime_error("Vulkan device " + std::to_string(device_.info().index) + " (" + device_.info().name +
                             ") was lost while running kernels");
  CheckVulkan(done, "running a batch of kernels");
}

}  // namespace swan
