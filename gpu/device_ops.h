// The operations a model's forward runs on a Vulkan device, recorded into
// a CommandBatch: each checks its buffers' sizes and picks its shader.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "gpu/compute_kernel.h"
#include "gpu/device_buffer.h"
#include "gpu/vulkan_device.h"
#include "ops/weight_type.h"

namespace swan {

// The shaders of gpu/shaders as one device's kernels, each built on first
// use (a pipeline takes milliseconds to build).
class DeviceKernels {
 public:
  explicit DeviceKernels(VulkanDevice& device) : device_(device) {}
  VulkanDevice& device() { return device_; }
  const ComputeKernel& MatVec(WeightType type);
  const ComputeKernel& RmsNorm();

 private:
  VulkanDevice& device_;
  std::array<std::unique_ptr<ComputeKernel>, 16> matvec_;  // by WeightType
  std::unique_ptr<ComputeKernel> rms_norm_;
};

// Whether the weights of `type` have a matrix-vector shader yet.
bool HasDeviceMatVec(WeightType type);

// A weight matrix on the device: w [n, k] as GGUF holds its rows, each
// WeightRowBytes(type, k) bytes.
struct DeviceMatrix {
  WeightType type = WeightType::kF32;
  int64_t n = 0, k = 0;
  DeviceBuffer rows;  // [n, WeightRowBytes(type, k)]
};
DeviceMatrix UploadMatrix(VulkanDevice& device, WeightType type, const void* rows, int64_t n, int64_t k);

// y [m, n] = x [m, k] · wᵀ, all float32 but w.
void RecordMatVec(CommandBatch& batch, DeviceKernels& kernels, const DeviceMatrix& w, const DeviceBuffer& x,
                  DeviceBuffer& y, int64_t m);

// out [rows, dim] = x / sqrt(mean(x²) + eps) · (weight + 1 if add_one else
// weight); weight [dim].
void RecordRmsNorm(CommandBatch& batch, DeviceKernels& kernels, const DeviceBuffer& x, const DeviceBuffer& weight,
                   DeviceBuffer& out, int64_t rows, int64_t dim, float eps, bool add_one);

}  // namespace swan
