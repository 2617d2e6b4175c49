#include "gpu/vulkan_device.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <stdexcept>

#include "util/sanitizers.h"

namespace swan {

void CheckVulkan(VkResult result, const char* what) {
  if (result != VK_SUCCESS)
    throw std::runtime_error(std::string("Vulkan: ") + what + " failed (VkResult " + std::to_string(int(result)) + ")");
}

namespace {

bool ValidationWanted() {
  const char* v = std::getenv("SWAN_VULKAN_VALIDATION");
  return v && std::strcmp(v, "1") == 0;
}

bool HasLayer(const char* name) {
  uint32_t count = 0;
  vkEnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vkEnumerateInstanceLayerProperties(&count, layers.data());
  for (const VkLayerProperties& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

#ifdef SWAN_UNDER_ASAN
// Every shared object loaded now (the Vulkan drivers among them, which the
// loader opens in vkCreateInstance) marked never to be unmapped. Mesa's
// llvmpipe (22.3, LLVM 15) keeps a one-time allocation of its device
// enumeration in its own globals; once the loader closed the driver at
// exit, LeakSanitizer no longer saw those globals and reported the block as
// a leak (on an AMD Zen 3; not on a Zen 5). Mapped, it stays reachable.
int KeepMapped(struct dl_phdr_info* info, size_t, void*) {
  if (info->dlpi_name && info->dlpi_name[0] != '\0') dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  return 0;
}
void KeepDriversMappedUnderSanitizers() { dl_iterate_phdr(KeepMapped, nullptr); }
#else
void KeepDriversMappedUnderSanitizers() {}
#endif

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

// A Vulkan 1.1 instance, with the validation layer and debug messages when
// `validation`.
VkResult MakeInstance(bool validation, VkInstance* instance) {
  auto app = VkInfo<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = "swan";
  app.apiVersion = VK_API_VERSION_1_1;
  auto create = VkInfo<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  create.pApplicationInfo = &app;
  const char* layers[] = {kValidationLayer};
  const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
  if (validation) {
    create.enabledLayerCount = 1;
    create.ppEnabledLayerNames = layers;
    create.enabledExtensionCount = 1;
    create.ppEnabledExtensionNames = extensions;
  }
  const VkResult made = vkCreateInstance(&create, nullptr, instance);
  KeepDriversMappedUnderSanitizers();
  return made;
}

// The first queue family that runs compute; -1 if none.
int ComputeFamily(VkPhysicalDevice physical) {
  uint32_t count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, families.data());
  for (uint32_t i = 0; i < count; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return int(i);
  return -1;
}

const char* KindName(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    default: return "other";
  }
}

VulkanDeviceInfo Describe(VkPhysicalDevice physical, int index) {
  auto subgroup = VkInfo<VkPhysicalDeviceSubgroupProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
  auto props = VkInfo<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  props.pNext = &subgroup;
  vkGetPhysicalDeviceProperties2(physical, &props);
  auto f16i8 =
      VkInfo<VkPhysicalDeviceShaderFloat16Int8Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES);
  auto s16 = VkInfo<VkPhysicalDevice16BitStorageFeatures>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES);
  auto s8 = VkInfo<VkPhysicalDevice8BitStorageFeatures>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES);
  s16.pNext = &f16i8;
  // The 1.2 structures are filled only where the device has Vulkan 1.2.
  if (props.properties.apiVersion >= VK_API_VERSION_1_2) f16i8.pNext = &s8;
  auto features = VkInfo<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  features.pNext = &s16;
  vkGetPhysicalDeviceFeatures2(physical, &features);
  VkPhysicalDeviceMemoryProperties memory;
  vkGetPhysicalDeviceMemoryProperties(physical, &memory);
  VulkanDeviceInfo info;
  info.index = index;
  info.name = props.properties.deviceName;
  info.kind = KindName(props.properties.deviceType);
  info.api_version = props.properties.apiVersion;
  info.subgroup_size = subgroup.subgroupSize;
  for (uint32_t h = 0; h < memory.memoryHeapCount; ++h)
    if (memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      info.memory_bytes = std::max<uint64_t>(info.memory_bytes, memory.memoryHeaps[h].size);
  info.float16 = f16i8.shaderFloat16;
  info.int8 = f16i8.shaderInt8;
  info.storage16 = s16.storageBuffer16BitAccess;
  info.storage8 = s8.storageBuffer8BitAccess;
  info.storage_buffers_per_stage = props.properties.limits.maxPerStageDescriptorStorageBuffers;
  return info;
}

// The physical devices that have a compute queue.
std::vector<VkPhysicalDevice> ComputeDevices(VkInstance instance) {
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> all(count), usable;
  vkEnumeratePhysicalDevices(instance, &count, all.data());
  for (VkPhysicalDevice p : all)
    if (ComputeFamily(p) >= 0) usable.push_back(p);
  return usable;
}

}  // namespace

std::vector<VulkanDeviceInfo> ListVulkanDevices(std::string* reason) {
  VkInstance instance = VK_NULL_HANDLE;
  const VkResult made = MakeInstance(false, &instance);
  if (made != VK_SUCCESS) {
    if (reason)
      *reason = made == VK_ERROR_INCOMPATIBLE_DRIVER
                    ? "no Vulkan driver is installed (Debian: mesa-vulkan-drivers)"
                    : "the Vulkan loader found no usable driver (VkResult " + std::to_string(int(made)) + ")";
    return {};
  }
  std::vector<VulkanDeviceInfo> devices;
  const std::vector<VkPhysicalDevice> physical = ComputeDevices(instance);
  for (size_t i = 0; i < physical.size(); ++i) devices.push_back(Describe(physical[i], int(i)));
  vkDestroyInstance(instance, nullptr);
  if (devices.empty() && reason) *reason = "the Vulkan driver reports no device with a compute queue";
  return devices;
}

std::string VulkanReport() {
  std::string reason;
  const std::vector<VulkanDeviceInfo> devices = ListVulkanDevices(&reason);
  if (devices.empty()) return "Vulkan devices: none (" + reason + ")\n";
  std::string out = "Vulkan devices:\n";
  char line[512];
  for (const VulkanDeviceInfo& d : devices) {
    std::snprintf(line, sizeof(line), "  vulkan:%d  %s, %s, Vulkan %u.%u, subgroup %u, %.1f GiB%s%s\n", d.index,
                  d.name.c_str(), d.kind.c_str(), VK_API_VERSION_MAJOR(d.api_version),
                  VK_API_VERSION_MINOR(d.api_version), d.subgroup_size, double(d.memory_bytes) / (1 << 30),
                  d.float16 ? ", float16" : "", d.int8 ? ", int8" : "");
    out += line;
  }
  return out;
}

VulkanDevice::VulkanDevice(int index) {
  const bool validation = ValidationWanted();
  const char* staging = std::getenv("SWAN_VULKAN_STAGING");
  stage_copies_ = staging && std::strcmp(staging, "1") == 0;
  if (validation && !HasLayer(kValidationLayer))
    throw std::runtime_error(
        "SWAN_VULKAN_VALIDATION=1 but the validation layer is not installed (Debian: vulkan-validationlayers)");
  CheckVulkan(MakeInstance(validation, &instance_), "creating an instance (is a Vulkan driver installed?)");
  try {
    if (validation) {
      auto create = VkInfo<VkDebugUtilsMessengerCreateInfoEXT>(VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
      create.messageSeverity =
          VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
      create.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
      create.pfnUserCallback = &VulkanDevice::OnValidation;
      create.pUserData = this;
      auto make = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
      if (!make) throw std::runtime_error("Vulkan: no vkCreateDebugUtilsMessengerEXT with the validation layer");
      CheckVulkan(make(instance_, &create, nullptr, &messenger_), "creating the validation messenger");
    }
    const std::vector<VkPhysicalDevice> physical = ComputeDevices(instance_);
    if (physical.empty())
      throw std::runtime_error(
          "no Vulkan device with a compute queue (swan --version lists them); leave out "
          "--device to run on the CPU");
    if (index < 0 || size_t(index) >= physical.size())
      throw std::runtime_error("no Vulkan device " + std::to_string(index) + ": there " +
                               (physical.size() == 1 ? "is 1" : "are " + std::to_string(physical.size())) +
                               " (swan --version lists them)");
    physical_ = physical[size_t(index)];
    info_ = Describe(physical_, index);
    vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
    queue_family_ = uint32_t(ComputeFamily(physical_));
    const float priority = 1.0f;
    auto queue = VkInfo<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
    queue.queueFamilyIndex = queue_family_;
    queue.queueCount = 1;
    queue.pQueuePriorities = &priority;
    auto create = VkInfo<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
    create.queueCreateInfoCount = 1;
    create.pQueueCreateInfos = &queue;
    CheckVulkan(vkCreateDevice(physical_, &create, nullptr, &device_), "creating the logical device");
    vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
    auto pool = VkInfo<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool.queueFamilyIndex = queue_family_;
    CheckVulkan(vkCreateCommandPool(device_, &pool, nullptr, &pool_), "creating a command pool");
  } catch (...) {
    Release();
    throw;
  }
}

VulkanDevice::~VulkanDevice() { Release(); }

void VulkanDevice::Release() {
  if (pool_) vkDestroyCommandPool(device_, pool_, nullptr);
  if (device_) vkDestroyDevice(device_, nullptr);
  if (messenger_) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
  }
  if (instance_) vkDestroyInstance(instance_, nullptr);
  pool_ = VK_NULL_HANDLE;
  device_ = VK_NULL_HANDLE;
  messenger_ = VK_NULL_HANDLE;
  instance_ = VK_NULL_HANDLE;
}

int VulkanDevice::MemoryType(uint32_t type_bits, VkMemoryPropertyFlags want) const {
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
    if ((type_bits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & want) == want) return int(i);
  return -1;
}

VkCommandBuffer VulkanDevice::BeginOnce() {
  auto alloc = VkInfo<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  alloc.commandPool = pool_;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  VkCommandBuffer cb;
  CheckVulkan(vkAllocateCommandBuffers(device_, &alloc, &cb), "allocating a command buffer");
  auto begin = VkInfo<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  CheckVulkan(vkBeginCommandBuffer(cb, &begin), "beginning a command buffer");
  return cb;
}

void VulkanDevice::SubmitOnce(VkCommandBuffer cb) {
  CheckVulkan(vkEndCommandBuffer(cb), "ending a command buffer");
  auto submit = VkInfo<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cb;
  const VkResult sent = vkQueueSubmit(queue_, 1, &submit, VK_NULL_HANDLE);
  const VkResult done = sent == VK_SUCCESS ? vkQueueWaitIdle(queue_) : sent;
  vkFreeCommandBuffers(device_, pool_, 1, &cb);
  CheckVulkan(done, "running a command buffer");
}

VKAPI_ATTR VkBool32 VKAPI_CALL VulkanDevice::OnValidation(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                          VkDebugUtilsMessageTypeFlagsEXT,
                                                          const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                          void* self) {
  static_cast<VulkanDevice*>(self)->validation_messages_ += 1;
  std::fprintf(stderr, "Vulkan validation (%s): %s\n",
               severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning",
               data && data->pMessage ? data->pMessage : "");
  return VK_FALSE;
}

}  // namespace swan
