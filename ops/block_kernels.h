// The kernels behind BlockProduct (ops/block_product.h), one per ISA, each
// in a file of its own compiled for that ISA by function attributes. Not
// for use elsewhere: BlockProduct checks sizes and picks the kernel.
#pragma once

#include <cstdint>

#include "ops/block_product.h"

namespace swan::block_kernels {

// One product: y [m, w.n] (+)= x · wᵀ.
struct BlockJob {
  PackedBlocks w;
  QuantizedInput x;
  int64_t m = 0;
  float* y = nullptr;  // [m, w.n]
  bool accumulate = false;
};

// Output columns of groups [g_begin, g_end) for every input row.
void GroupsScalar(const BlockJob& job, int64_t g_begin, int64_t g_end);
#if defined(__x86_64__)
void GroupsAvx2(const BlockJob& job, int64_t g_begin, int64_t g_end);
void GroupsAvx512Vnni(const BlockJob& job, int64_t g_begin, int64_t g_end);
// QuantizeInput's rows with AVX2 (the same values as the scalar loop).
void QuantizeRowsAvx2(int8_t* q, float* d, int32_t* sum, const float* x, int64_t m, int64_t k);
#endif

// Writes a group's [rows, 16] results into y's columns below n.
inline void StoreGroup(const BlockJob& job, int64_t g, int64_t row, int64_t rows, const float* tile /*[rows, 16]*/) {
  const int64_t col = g * kPackedRows;
  const int64_t cols = job.w.n - col < kPackedRows ? job.w.n - col : kPackedRows;
  for (int64_t r = 0; r < rows; ++r) {
    float* dst = job.y + (row + r) * job.w.n + col;
    const float* src = tile + r * kPackedRows;
    if (job.accumulate)
      for (int64_t c = 0; c < cols; ++c) dst[c] += src[c];
    else
      for (int64_t c = 0; c < cols; ++c) dst[c] = src[c];
  }
}

}  // namespace swan::block_kernels
