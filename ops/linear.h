// A linear layer's weight and the product that picks the right kernel:
//   y [m, out] = x [m, in] · wᵀ,   w [out, in] (nn.Linear layout)
// Decode-sized m (<= kGemvMaxRows) goes to the memory-bound Highway GEMV,
// which reads the weights once (f16 and bf16 promoted in registers); larger
// m (prefill, training) goes to a GEMM: oneDNN's float32 one for float32
// weights; for f16 and bf16 weights oneDNN's bf16 one where the CPU has
// bf16 hardware, else float32: oneDNN's on weights widened a block of rows
// at a time (AVX-512), or below AVX-512 swan's own, which widens each
// weight as it packs it (ops/bf16_gemm.h). Block-quantized weights (Q8_0,
// Q4_*, Q5_*, Q6_K), packed as they load (ops/packed_blocks.h), go to
// BlockProduct for every m: integer products against the input quantized
// per block, as llama.cpp does.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

#include "ops/gemv.h"

namespace swan {

constexpr int64_t kGemvMaxRows = 8;

class LinearWeight {
 public:
  LinearWeight() = default;
  // Takes a float32 [out, in] matrix; stored as `type` (bf16 and f16
  // round, block types quantize; `in` a multiple of their block, 32 or 256).
  LinearWeight(std::vector<float> w, int64_t out, int64_t in, WeightType type = WeightType::kF32);
  // Takes bf16 (or, with kF16, f16) bits [out, in] as they are.
  LinearWeight(std::vector<uint16_t> w, int64_t out, int64_t in, WeightType type = WeightType::kBF16);
  // Takes rows of any type [out, WeightRowBytes(type, in)] (block types
  // then packed).
  static LinearWeight FromBytes(std::vector<uint8_t> blocks, int64_t out, int64_t in, WeightType type);
  // Uses `data` [out, WeightRowBytes(type, in)] in place (a mapped
  // checkpoint's tensor), alive as long as `owner` is; no copy. Block-type
  // rows are packed into a copy of about that size (ops/packed_blocks.h)
  // and `data` is not kept: the caller may let the mapping's pages go, as
  // the packing goes with done_with (PackBlockRows).
  static LinearWeight Borrow(std::shared_ptr<const void> owner, const void* data, WeightType type, int64_t out,
                             int64_t in, const SourceDone& done_with = {});
  // A copy of rows [out, WeightRowBytes(type, in)] in another order: row r
  // is rows' row order[r] (in turn when order is null). Block types packed.
  static LinearWeight Reordered(const void* rows, WeightType type, int64_t out, int64_t in, const int64_t* order,
                                const SourceDone& done_with = {});
  // w [out, in] float32 (a mapped tensor, say) quantized to a block type
  // straight into the packed layout: one allocation, the weight's own.
  static LinearWeight Quantized(const float* w, int64_t out, int64_t in, WeightType type);
  // The same from float32 rows made on demand (ops/packed_blocks.h's
  // FloatRows: a file's rows of another format dequantized 16 at a time).
  static LinearWeight QuantizedFrom(int64_t out, int64_t in, WeightType type, const FloatRows& rows_of);
  // A block type's rows in the file's layout made on demand (BlockRowsOf:
  // rows of another format converted 16 at a time), packed.
  static LinearWeight PackedFrom(int64_t out, int64_t in, WeightType type, const BlockRowsOf& rows_of);

  WeightView view() const;
  int64_t out() const { return out_; }
  int64_t in() const { return in_; }
  WeightType type() const { return type_; }
  size_t Bytes() const;  // what view().data holds
  // [out, in], or null when the weight is of another type
  const float* f32() const { return type_ == WeightType::kF32 ? static_cast<const float*>(data_) : nullptr; }
  const uint16_t* bf16() const { return type_ == WeightType::kBF16 ? static_cast<const uint16_t*>(data_) : nullptr; }
  // [out, in] as float32, whatever the stored type (a copy).
  std::vector<float> ToF32() const;

 private:
  // A packed matrix of `type` [out, in] that `fill` writes into its
  // PackedBytes(type, out, in) bytes.
  static LinearWeight OwningPacked(int64_t out, int64_t in, WeightType type, const std::function<void(uint8_t*)>& fill);

  std::shared_ptr<const void> owner_;  // keeps data_ alive: its own vector, or a file mapping
  const void* data_ = nullptr;         // view().data: rows, or packed blocks
  int64_t out_ = 0, in_ = 0;
  WeightType type_ = WeightType::kF32;
};

// out[t] = table[ids[t]] as float32 for each token t, whatever the
// table's type.   out [n_tokens, table.k], table [table.n, table.k]
// Throws std::out_of_range for an id outside [0, table.n).
void Embed(float* out, const WeightView& table, const int32_t* ids, int64_t n_tokens);

// y = x · wᵀ, or y += x · wᵀ with accumulate.   y [m, out], x [m, in]
void Linear(float* y, const float* x, int64_t m, const LinearWeight& w, bool accumulate = false);

// y_i = x · w_iᵀ for several weights of one input (q, k and v of a normed
// row; gate and up): with block-format weights one BlockProducts (x
// quantized once, one parallel region for all), with float weights at
// decode sizes one Gemvs (one region for all), else one Linear each.
struct LinearOutput {
  float* y;  // [m, w->out()]
  const LinearWeight* w;
};
void LinearSameInput(const float* x, int64_t m, std::initializer_list<LinearOutput> outs);

// Time and FLOPs spent in Linear since the last reset, counted only while
// enabled (benchmarks use it to report the matrix products' share).
struct LinearStats {
  double seconds = 0;
  double flops = 0;
  double bf16_flops = 0;  // the part of `flops` with bf16 weights
};
void EnableLinearStats(bool on);
LinearStats TakeLinearStats();  // returns and resets

}  // namespace swan
