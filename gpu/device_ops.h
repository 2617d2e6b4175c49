// The operations a model's forward runs on a Vulkan device, recorded into
// a CommandBatch: each checks its buffers' sizes and picks its shader.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "gpu/compute_kernel.h"
#include "gpu/device_buffer.h"
#include "attention/attention.h"
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
  const ComputeKernel& Attend(KvType type);
  const ComputeKernel& AttendMerge();
  const ComputeKernel& Rope();
  const ComputeKernel& Gated(bool gelu_tanh);
  const ComputeKernel& Add();
  const ComputeKernel& StoreKv(KvType type);

 private:
  const ComputeKernel& Built(std::unique_ptr<ComputeKernel>& slot, SpirV code, int buffers, uint32_t push_bytes);

  VulkanDevice& device_;
  std::array<std::unique_ptr<ComputeKernel>, 16> matvec_;   // by WeightType
  std::array<std::unique_ptr<ComputeKernel>, 2> attend_;    // f32, bf16 KV
  std::array<std::unique_ptr<ComputeKernel>, 2> gated_;     // SiLU, GELU-tanh
  std::array<std::unique_ptr<ComputeKernel>, 2> store_kv_;  // f32, bf16 KV
  std::unique_ptr<ComputeKernel> rms_norm_, rope_, add_, attend_merge_;
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

// Attention as attention/attention.h's Attend, for f32 and bf16 KV: the
// shape of one call.
struct DeviceAttention {
  AttentionShape shape;
  int64_t n_q = 0;         // query rows: [first_q, first_q + n_q) of q's
  int64_t n_rows = 0;      // key rows (cache slots)
  int64_t row_stride = 0;  // values between key rows; 0 = n_kv_heads * head_dim
  KvType type = KvType::kF32;
  Span span;
  float scale = 0.0f;  // logit scale; 0 = 1/sqrt(head_dim)
  // The KV heads k and v's rows hold, ascending and below 32 (a per-head
  // layer's store of its full heads or of its window heads); empty: every
  // head. Only their query heads are attended and written.
  std::vector<int32_t> kv_heads;
  // Query rows whose route_logits [q_rows] are above 0 see every key
  // despite `span` (a routed layer: the router's w·xn + b).
  const DeviceBuffer* route_logits = nullptr;
  // StreamingLLM positions (pos:cache; a sliding window with sinks): q
  // holds [2, q_rows, n_heads, head_dim], the second the queries rotated to
  // min(q, sinks + window - 1), which score the sinks out of the window.
  bool cache_positions = false;
  // One sequence's rows of a batched step: its first query row, and the
  // rows q, q_pos, route_logits and out hold (0: first_q + n_q).
  int64_t first_q = 0, q_rows = 0;
};
// Key rows per split of attend.comp (a workgroup's share of the keys), the
// largest head_dim it takes, and its splits of n_rows keys.
constexpr int64_t kAttendSplit = 128, kMaxAttendHeadDim = 256;
// Query rows per workgroup of attend.comp: they read the split's keys once.
constexpr int64_t kAttendQueryTile = 4;
inline int64_t AttendSplits(int64_t n_rows) { return (n_rows + kAttendSplit - 1) / kAttendSplit; }
// Floats of RecordAttend's scratch: [n_q, n_heads, splits, head_dim + 2].
inline int64_t AttendScratchFloats(const DeviceAttention& a) {
  return a.n_q * a.shape.n_heads * AttendSplits(a.n_rows) * (a.shape.head_dim + 2);
}
// out rows [first_q, first_q + n_q) of [q_rows, n_heads, head_dim] from
// those of q [q_rows, n_heads, head_dim] and q_pos [q_rows] (int32), k and
// v [n_rows, row_stride], kv_pos [n_rows] (int32), learned
// sink logits [n_heads] or null, and AttendScratchFloats(a) floats of
// scratch: split over the keys (attend.comp), then merged
// (attend_merge.comp).
void RecordAttend(CommandBatch& batch, DeviceKernels& kernels, const DeviceAttention& a, const DeviceBuffer& q,
                  const DeviceBuffer& k, const DeviceBuffer& v, const DeviceBuffer& kv_pos, const DeviceBuffer& q_pos,
                  const DeviceBuffer* sink_logits, DeviceBuffer& scratch, DeviceBuffer& out);

// Rotates x [n_tokens, n_heads, head_dim] in place by rows [table_row,
// table_row + n_tokens) of cos_sin [rows, 2, head_dim / 2] (ops/rope.h's
// Rope::CosSin).
void RecordRope(CommandBatch& batch, DeviceKernels& kernels, DeviceBuffer& x, const DeviceBuffer& cos_sin,
                int64_t n_tokens, int64_t n_heads, int64_t head_dim, int64_t table_row = 0);

// out [n] = silu(gate) * up, or gelu_tanh(gate) * up.
void RecordGated(CommandBatch& batch, DeviceKernels& kernels, const DeviceBuffer& gate, const DeviceBuffer& up,
                 DeviceBuffer& out, int64_t n, bool gelu_tanh);

// Rows [to_slot, to_slot + count) of a KV store out [slots, n_stored,
// head_dim] of `type` (f32, or bf16 rounded as util/bf16.h's F32ToBF16)
// from rows [from_row, from_row + count) of x [n, n_kv_heads, head_dim] at
// the store's kv_heads (ascending, below 32; empty: every head).
void RecordStoreKv(CommandBatch& batch, DeviceKernels& kernels, KvType type, const DeviceBuffer& x, DeviceBuffer& out,
                   int64_t count, int64_t n_kv_heads, int64_t head_dim, int64_t from_row, int64_t to_slot,
                   const std::vector<int32_t>& kv_heads = {});

// y [n] += scale x [i mod period] (period 0: n; it divides n): a bias
// [period] added to each row of y.
void RecordAdd(CommandBatch& batch, DeviceKernels& kernels, const DeviceBuffer& x, DeviceBuffer& y, int64_t n,
               float scale = 1.0f, int64_t period = 0);

}  // namespace swan
