#include "gpu/device_ops.h"

#include <stdexcept>
#include <string>

#include "gpu/shaders/MatVecBF16.h"
#include "gpu/shaders/MatVecF16.h"
#include "gpu/shaders/MatVecF32.h"
#include "gpu/shaders/MatVecQ4_0.h"
#include "gpu/shaders/MatVecQ4_K.h"
#include "gpu/shaders/MatVecQ6_K.h"
#include "gpu/shaders/MatVecQ8_0.h"
#include "gpu/shaders/RmsNorm.h"

namespace swan {

namespace {

// The least grid size in each dimension every Vulkan device accepts.
constexpr int64_t kMaxGroups = 65535;

struct MatVecPush {
  uint32_t n, k, row_bytes;
};
struct RmsNormPush {
  uint32_t dim;
  float eps, one;
};

SpirV MatVecCode(WeightType type) {
  switch (type) {
    case WeightType::kF32: return spirv::kMatVecF32;
    case WeightType::kBF16: return spirv::kMatVecBF16;
    case WeightType::kF16: return spirv::kMatVecF16;
    case WeightType::kQ8_0: return spirv::kMatVecQ8_0;
    case WeightType::kQ4_0: return spirv::kMatVecQ4_0;
    case WeightType::kQ4_K: return spirv::kMatVecQ4_K;
    case WeightType::kQ6_K: return spirv::kMatVecQ6_K;
    default: return {};
  }
}

void RequireBytes(const DeviceBuffer& b, int64_t bytes, const char* what) {
  if (int64_t(b.bytes()) < bytes)
    throw std::invalid_argument(std::string(what) + ": a buffer of " + std::to_string(b.bytes()) + " bytes for " +
                                std::to_string(bytes));
}

}  // namespace

bool HasDeviceMatVec(WeightType type) { return MatVecCode(type).bytes != nullptr; }

const ComputeKernel& DeviceKernels::MatVec(WeightType type) {
  if (!HasDeviceMatVec(type))
    throw std::invalid_argument(std::string("no Vulkan matrix-vector kernel for ") + WeightTypeName(type) +
                                " weights yet");
  std::unique_ptr<ComputeKernel>& k = matvec_[size_t(type)];
  if (!k) k = std::make_unique<ComputeKernel>(device_, MatVecCode(type), 3, uint32_t(sizeof(MatVecPush)));
  return *k;
}

const ComputeKernel& DeviceKernels::RmsNorm() {
  if (!rms_norm_) rms_norm_ = std::make_unique<ComputeKernel>(device_, spirv::kRmsNorm, 3, uint32_t(sizeof(RmsNormPush)));
  return *rms_norm_;
}

DeviceMatrix UploadMatrix(VulkanDevice& device, WeightType type, const void* rows, int64_t n, int64_t k) {
  if (n < 1 || k < 1 || !RowFits(type, k))
    throw std::invalid_argument(std::string("device matrix: ") + WeightTypeName(type) + " [" + std::to_string(n) +
                                ", " + std::to_string(k) + "]");
  const int64_t bytes = n * int64_t(WeightRowBytes(type, k));
  // The shaders address bytes with 32-bit integers.
  if (bytes > (int64_t(1) << 32) - 4)
    throw std::invalid_argument("device matrix: " + std::to_string(bytes >> 20) +
                                " MiB in one matrix; the Vulkan kernels address at most 4 GiB");
  DeviceMatrix m{type, n, k, DeviceBuffer(device, size_t(bytes))};
  m.rows.Upload(rows, size_t(bytes));
  return m;
}

void RecordMatVec(CommandBatch& batch, DeviceKernels& kernels, const DeviceMatrix& w, const DeviceBuffer& x,
                  DeviceBuffer& y, int64_t m) {
  if (m < 1 || m > kMaxGroups) throw std::invalid_argument("matvec: " + std::to_string(m) + " input rows");
  RequireBytes(x, m * w.k * 4, "matvec input");
  RequireBytes(y, m * w.n * 4, "matvec output");
  const MatVecPush push{uint32_t(w.n), uint32_t(w.k), uint32_t(WeightRowBytes(w.type, w.k))};
  const int64_t gx = w.n < kMaxGroups ? w.n : kMaxGroups, gy = (w.n + gx - 1) / gx;
  batch.Dispatch(kernels.MatVec(w.type), {&w.rows, &x, &y}, &push, uint32_t(gx), uint32_t(gy), uint32_t(m));
}

void RecordRmsNorm(CommandBatch& batch, DeviceKernels& kernels, const DeviceBuffer& x, const DeviceBuffer& weight,
                   DeviceBuffer& out, int64_t rows, int64_t dim, float eps, bool add_one) {
  if (rows < 1 || rows > kMaxGroups || dim < 1)
    throw std::invalid_argument("rms norm: " + std::to_string(rows) + " rows of " + std::to_string(dim));
  RequireBytes(x, rows * dim * 4, "rms norm input");
  RequireBytes(weight, dim * 4, "rms norm weight");
  RequireBytes(out, rows * dim * 4, "rms norm output");
  const RmsNormPush push{uint32_t(dim), eps, add_one ? 1.0f : 0.0f};
  batch.Dispatch(kernels.RmsNorm(), {&x, &weight, &out}, &push, uint32_t(rows));
}

}  // namespace swan
