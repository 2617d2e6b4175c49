#include "gpu/device_ops.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "gpu/shaders/Add.h"
#include "gpu/shaders/AttendBF16.h"
#include "gpu/shaders/AttendF32.h"
#include "gpu/shaders/AttendMerge.h"
#include "gpu/shaders/GatedGeluTanh.h"
#include "gpu/shaders/GatedSilu.h"
#include "gpu/shaders/MatVecBF16.h"
#include "gpu/shaders/MatVecF16.h"
#include "gpu/shaders/MatVecF32.h"
#include "gpu/shaders/MatVecQ4_0.h"
#include "gpu/shaders/MatVecQ4_1.h"
#include "gpu/shaders/MatVecQ4_K.h"
#include "gpu/shaders/MatVecQ5_0.h"
#include "gpu/shaders/MatVecQ5_1.h"
#include "gpu/shaders/MatVecQ5_K.h"
#include "gpu/shaders/MatVecQ6_K.h"
#include "gpu/shaders/MatVecQ8_0.h"
#include "gpu/shaders/RmsNorm.h"
#include "gpu/shaders/Rope.h"
#include "gpu/shaders/StoreKvBF16.h"
#include "gpu/shaders/StoreKvF32.h"

namespace swan {

namespace {

// The least grid size in each dimension every Vulkan device accepts.
constexpr int64_t kMaxGroups = 65535;

struct MatVecPush {
  uint32_t n, k, row_bytes, m;
};
// Input rows one matvec.comp workgroup takes (its TILE).
constexpr int64_t kMatVecTile = 4;
struct RmsNormPush {
  uint32_t dim;
  float eps, one;
};
struct AttendPush {
  uint32_t n_rows, row_stride, n_heads, n_kv_heads, head_dim;
  int32_t window, sinks;
  int32_t block_offset;  // -1: a sliding window
  float scale;
  uint32_t stored_heads;  // the KV heads the rows hold, bit h for head h; 0: every head
  uint32_t has_routes;
  uint32_t sink_queries;  // 0, or values from a query to its rotation for sinks out of the window
  uint32_t n_splits;
  uint32_t first_q;
  uint32_t n_q;
};
struct AttendMergePush {
  uint32_t n_heads, head_dim, n_splits, has_sink_logits, first_q, group, stored_heads;
};
struct StoreKvPush {
  uint32_t count, n_kv_heads, head_dim, from_row, to_slot, stored_heads, n_stored;
};

// The shaders' mask of a store's KV heads (stored_heads.glsl): 0 for every
// head; else heads below 32, ascending, each once.
uint32_t StoredHeadsMask(const std::vector<int32_t>& kv_heads, int64_t n_kv_heads) {
  uint32_t mask = 0;
  for (size_t i = 0; i < kv_heads.size(); ++i) {
    const int32_t h = kv_heads[i];
    if (h < 0 || h >= n_kv_heads || h >= 32 || (i > 0 && h <= kv_heads[i - 1]))
      throw std::invalid_argument("device KV store: KV head " + std::to_string(h) + " of " +
                                  std::to_string(n_kv_heads) + " (a store names heads below 32, ascending)");
    mask |= 1u << h;
  }
  return mask;
}
struct RopePush {
  uint32_t n_tokens, n_heads, head_dim, table_row;
};
struct CountPush {
  uint32_t n;
};
struct AddPush {
  uint32_t n;
  float scale;
  uint32_t period;
};

// A grid of 64-invocation workgroups over n items: x up to 65535, the rest in y.
std::array<uint32_t, 2> ItemGrid(int64_t n) {
  const int64_t groups = (n + 63) / 64, gx = groups < kMaxGroups ? groups : kMaxGroups;
  if (groups > kMaxGroups * kMaxGroups) throw std::invalid_argument("device kernel: " + std::to_string(n) + " items");
  return {uint32_t(gx), uint32_t((groups + gx - 1) / gx)};
}

SpirV MatVecCode(WeightType type) {
  switch (type) {
    case WeightType::kF32: return spirv::kMatVecF32;
    case WeightType::kBF16: return spirv::kMatVecBF16;
    case WeightType::kF16: return spirv::kMatVecF16;
    case WeightType::kQ8_0: return spirv::kMatVecQ8_0;
    case WeightType::kQ4_0: return spirv::kMatVecQ4_0;
    case WeightType::kQ4_1: return spirv::kMatVecQ4_1;
    case WeightType::kQ5_0: return spirv::kMatVecQ5_0;
    case WeightType::kQ5_1: return spirv::kMatVecQ5_1;
    case WeightType::kQ4_K: return spirv::kMatVecQ4_K;
    case WeightType::kQ5_K: return spirv::kMatVecQ5_K;
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
  return Built(k, MatVecCode(type), 3, uint32_t(sizeof(MatVecPush)));
}

const ComputeKernel& DeviceKernels::Built(std::unique_ptr<ComputeKernel>& slot, SpirV code, int buffers,
                                          uint32_t push_bytes) {
  if (!slot) slot = std::make_unique<ComputeKernel>(device_, code, buffers, push_bytes);
  return *slot;
}

const ComputeKernel& DeviceKernels::RmsNorm() {
  return Built(rms_norm_, spirv::kRmsNorm, 3, uint32_t(sizeof(RmsNormPush)));
}

const ComputeKernel& DeviceKernels::Attend(KvType type) {
  if (type != KvType::kF32 && type != KvType::kBF16)
    throw std::invalid_argument("Vulkan attention reads f32 and bf16 KV caches (not q8_0 yet)");
  const bool bf16 = type == KvType::kBF16;
  return Built(attend_[bf16], bf16 ? spirv::kAttendBF16 : spirv::kAttendF32, 7, uint32_t(sizeof(AttendPush)));
}

const ComputeKernel& DeviceKernels::AttendMerge() {
  return Built(attend_merge_, spirv::kAttendMerge, 3, uint32_t(sizeof(AttendMergePush)));
}

const ComputeKernel& DeviceKernels::Rope() { return Built(rope_, spirv::kRope, 2, uint32_t(sizeof(RopePush))); }

const ComputeKernel& DeviceKernels::Gated(bool gelu_tanh) {
  return Built(gated_[gelu_tanh], gelu_tanh ? spirv::kGatedGeluTanh : spirv::kGatedSilu, 3,
               uint32_t(sizeof(CountPush)));
}

const ComputeKernel& DeviceKernels::Add() { return Built(add_, spirv::kAdd, 2, uint32_t(sizeof(AddPush))); }

const ComputeKernel& DeviceKernels::StoreKv(KvType type) {
  if (type != KvType::kF32 && type != KvType::kBF16)
    throw std::invalid_argument("Vulkan KV stores hold f32 and bf16 (not q8_0 yet)");
  const bool bf16 = type == KvType::kBF16;
  return Built(store_kv_[bf16], bf16 ? spirv::kStoreKvBF16 : spirv::kStoreKvF32, 2, uint32_t(sizeof(StoreKvPush)));
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
  if (m < 1 || m > kMaxGroups * kMatVecTile)
    throw std::invalid_argument("matvec: " + std::to_string(m) + " input rows");
  RequireBytes(x, m * w.k * 4, "matvec input");
  RequireBytes(y, m * w.n * 4, "matvec output");
  const MatVecPush push{uint32_t(w.n), uint32_t(w.k), uint32_t(WeightRowBytes(w.type, w.k)), uint32_t(m)};
  const int64_t gx = w.n < kMaxGroups ? w.n : kMaxGroups, gy = (w.n + gx - 1) / gx;
  batch.Dispatch(kernels.MatVec(w.type), {&w.rows, &x, &y}, &push, uint32_t(gx), uint32_t(gy),
                 uint32_t((m + kMatVecTile - 1) / kMatVecTile));
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

void RecordAttend(CommandBatch& batch, DeviceKernels& kernels, const DeviceAttention& a, const DeviceBuffer& q,
                  const DeviceBuffer& k, const DeviceBuffer& v, const DeviceBuffer& kv_pos, const DeviceBuffer& q_pos,
                  const DeviceBuffer* sink_logits, DeviceBuffer& scratch, DeviceBuffer& out) {
  const AttentionShape& s = a.shape;
  ValidateSpan(a.span);
  if (s.n_heads < 1 || s.n_kv_heads < 1 || s.n_heads % s.n_kv_heads != 0 || s.head_dim < 1 || a.n_q < 1 ||
      a.n_q > kMaxGroups || a.n_rows < 1 || s.n_heads > kMaxGroups || s.head_dim > kMaxAttendHeadDim ||
      AttendSplits(a.n_rows) > kMaxGroups)
    throw std::invalid_argument("device attention: " + std::to_string(a.n_q) + " queries of " +
                                std::to_string(s.n_heads) + " heads over " + std::to_string(a.n_rows) + " rows of " +
                                std::to_string(s.n_kv_heads) + " KV heads of " + std::to_string(s.head_dim));
  const uint32_t stored_heads = StoredHeadsMask(a.kv_heads, s.n_kv_heads);
  const int64_t n_stored = a.kv_heads.empty() ? s.n_kv_heads : int64_t(a.kv_heads.size());
  const int64_t row_width = n_stored * s.head_dim;
  const int64_t stride = a.row_stride ? a.row_stride : row_width;
  if (stride < row_width || (a.type == KvType::kBF16 && stride % 2 != 0))
    throw std::invalid_argument("device attention: a row stride of " + std::to_string(stride) + " values");
  const int64_t q_rows = a.q_rows ? a.q_rows : a.first_q + a.n_q;
  if (a.first_q < 0 || a.first_q + a.n_q > q_rows)
    throw std::invalid_argument("device attention: query rows " + std::to_string(a.first_q) + " + " +
                                std::to_string(a.n_q) + " of " + std::to_string(q_rows));
  const int64_t q_values = q_rows * s.n_heads * s.head_dim;
  if (a.cache_positions && (a.span.window == 0 || a.span.sinks == 0 || a.span.blocks))
    throw std::invalid_argument("device attention: cache positions need a sliding window with sinks, got " +
                                a.span.ToString());
  RequireBytes(q, q_values * (a.cache_positions ? 2 : 1) * 4, "attention queries");
  RequireBytes(k, KvBytes(a.type, (a.n_rows - 1) * stride + row_width), "attention keys");
  RequireBytes(v, KvBytes(a.type, (a.n_rows - 1) * stride + row_width), "attention values");
  RequireBytes(kv_pos, a.n_rows * 4, "attention key positions");
  RequireBytes(q_pos, q_rows * 4, "attention query positions");
  if (sink_logits) RequireBytes(*sink_logits, int64_t(s.n_heads) * 4, "attention sink logits");
  RequireBytes(scratch, AttendScratchFloats(a) * 4, "attention partials");
  RequireBytes(out, q_values * 4, "attention output");
  if (a.route_logits) RequireBytes(*a.route_logits, q_rows * 4, "attention route logits");
  const float scale = a.scale != 0.0f ? a.scale : 1.0f / std::sqrt(float(s.head_dim));
  const AttendPush push{uint32_t(a.n_rows),
                        uint32_t(stride),
                        uint32_t(s.n_heads),
                        uint32_t(s.n_kv_heads),
                        uint32_t(s.head_dim),
                        a.span.window,
                        a.span.sinks,
                        a.span.blocks ? a.span.offset : -1,
                        scale,
                        stored_heads,
                        a.route_logits ? 1u : 0u,
                        a.cache_positions ? uint32_t(q_values) : 0u,
                        uint32_t(AttendSplits(a.n_rows)),
                        uint32_t(a.first_q),
                        uint32_t(a.n_q)};
  // Bindings left unread (no routes, no sink logits) are given the queries.
  batch.Dispatch(kernels.Attend(a.type), {&q, &k, &v, &kv_pos, &q_pos, &scratch, a.route_logits ? a.route_logits : &q},
                 &push, uint32_t(n_stored), uint32_t(AttendSplits(a.n_rows)),
                 uint32_t((a.n_q + kAttendQueryTile - 1) / kAttendQueryTile));
  const int64_t group = s.n_heads / s.n_kv_heads;
  const AttendMergePush merge{uint32_t(s.n_heads),   uint32_t(s.head_dim), uint32_t(AttendSplits(a.n_rows)),
                              sink_logits ? 1u : 0u, uint32_t(a.first_q),  uint32_t(group),
                              stored_heads};
  batch.Dispatch(kernels.AttendMerge(), {&scratch, sink_logits ? sink_logits : &q, &out}, &merge,
                 uint32_t(n_stored * group), uint32_t(a.n_q));
}

void RecordRope(CommandBatch& batch, DeviceKernels& kernels, DeviceBuffer& x, const DeviceBuffer& cos_sin,
                int64_t n_tokens, int64_t n_heads, int64_t head_dim, int64_t table_row) {
  if (n_tokens < 1 || n_heads < 1 || head_dim < 2 || head_dim % 2 != 0 || table_row < 0)
    throw std::invalid_argument("device rope: " + std::to_string(n_tokens) + " tokens of " + std::to_string(n_heads) +
                                " heads of " + std::to_string(head_dim));
  RequireBytes(x, n_tokens * n_heads * head_dim * 4, "rope values");
  RequireBytes(cos_sin, (table_row + n_tokens) * head_dim * 4, "rope cosines and sines");
  const RopePush push{uint32_t(n_tokens), uint32_t(n_heads), uint32_t(head_dim), uint32_t(table_row)};
  const std::array<uint32_t, 2> grid = ItemGrid(n_tokens * n_heads * head_dim / 2);
  batch.Dispatch(kernels.Rope(), {&x, &cos_sin}, &push, grid[0], grid[1]);
}

void RecordGated(CommandBatch& batch, DeviceKernels& kernels, const DeviceBuffer& gate, const DeviceBuffer& up,
                 DeviceBuffer& out, int64_t n, bool gelu_tanh) {
  if (n < 1) throw std::invalid_argument("device gate: " + std::to_string(n) + " values");
  RequireBytes(gate, n * 4, "gate");
  RequireBytes(up, n * 4, "up");
  RequireBytes(out, n * 4, "gated output");
  const CountPush push{uint32_t(n)};
  const std::array<uint32_t, 2> grid = ItemGrid(n);
  batch.Dispatch(kernels.Gated(gelu_tanh), {&gate, &up, &out}, &push, grid[0], grid[1]);
}

void RecordAdd(CommandBatch& batch, DeviceKernels& kernels, const DeviceBuffer& x, DeviceBuffer& y, int64_t n,
               float scale, int64_t period) {
  if (period == 0) period = n;
  if (n < 1 || period < 1 || n % period != 0)
    throw std::invalid_argument("device add: " + std::to_string(n) + " values, repeating " + std::to_string(period));
  RequireBytes(x, period * 4, "added values");
  RequireBytes(y, n * 4, "stream");
  const AddPush push{uint32_t(n), scale, uint32_t(period)};
  const std::array<uint32_t, 2> grid = ItemGrid(n);
  batch.Dispatch(kernels.Add(), {&x, &y}, &push, grid[0], grid[1]);
}

void RecordStoreKv(CommandBatch& batch, DeviceKernels& kernels, KvType type, const DeviceBuffer& x, DeviceBuffer& out,
                   int64_t count, int64_t n_kv_heads, int64_t head_dim, int64_t from_row, int64_t to_slot,
                   const std::vector<int32_t>& kv_heads) {
  if (count < 1 || n_kv_heads < 1 || head_dim < 2 || head_dim % 2 != 0 || from_row < 0 || to_slot < 0)
    throw std::invalid_argument("device KV store: " + std::to_string(count) + " rows of " + std::to_string(n_kv_heads) +
                                " heads of " + std::to_string(head_dim) + " from row " + std::to_string(from_row) +
                                " to slot " + std::to_string(to_slot));
  const uint32_t mask = StoredHeadsMask(kv_heads, n_kv_heads);
  const int64_t n_stored = kv_heads.empty() ? n_kv_heads : int64_t(kv_heads.size());
  RequireBytes(x, (from_row + count) * n_kv_heads * head_dim * 4, "keys or values to store");
  RequireBytes(out, KvBytes(type, (to_slot + count) * n_stored * head_dim), "KV store");
  const StoreKvPush push{uint32_t(count),    uint32_t(n_kv_heads), uint32_t(head_dim),
                         uint32_t(from_row), uint32_t(to_slot),    mask,
                         uint32_t(n_stored)};
  const int64_t words = count * n_stored * head_dim / (type == KvType::kBF16 ? 2 : 1);
  const std::array<uint32_t, 2> grid = ItemGrid(words);
  batch.Dispatch(kernels.StoreKv(type), {&x, &out}, &push, grid[0], grid[1]);
}

}  // namespace swan
