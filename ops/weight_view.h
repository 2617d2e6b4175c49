// A weight matrix as the kernels read it, whatever its element type.
#pragma once

#include <cstdint>

#include "ops/packed_blocks.h"
#include "ops/weight_type.h"

namespace swan {

// [n, k] in nn.Linear layout: f32, bf16 or f16 rows [n, k] row-major, or
// Q8_0 / Q4_0 blocks (k a multiple of 32) in the packed layout of
// ops/packed_blocks.h.
struct WeightView {
  const void* data = nullptr;  // f32/bf16/f16: [n, WeightRowBytes(type, k)]; blocks: [PackedBytes(type, n, k)]
  WeightType type = WeightType::kF32;
  int64_t n = 0;  // output features (rows)
  int64_t k = 0;  // input features (columns)

  PackedBlocks packed() const { return PackedBlocksAt(data, type, n, k); }  // block types only
};

// dst [count, w.k] float32: rows [row, row + count) of w.
void WeightRowsF32(const WeightView& w, float* dst, int64_t row, int64_t count);

}  // namespace swan
