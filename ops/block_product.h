// Products with Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and K-quant (Q4_K, Q5_K, Q6_K) weights in
// integers, as llama.cpp computes them: each input row is quantized per 32 values to int8 with a float scale
// (QuantizeInput), each block's 32 products are summed exactly in int32 by
// 8-bit dot-product instructions, and the sum is scaled once by the
// weight's and the input's scales. One kernel serves decode (m = 1) and
// prefill (m in the hundreds): the weights are in the packed layout of
// ops/packed_blocks.h, whose groups of 16 rows give 16 output columns per
// vector with no horizontal sums.
//
// Kernels, chosen at run time (BestBlockKernel): AVX-512 VNNI (vpdpbusd:
// 64 byte products per instruction; AMD Zen 4 and later, Intel Ice Lake and
// later), AVX2 (vpmaddubsw + vpmaddwd; every x86 CPU swan supports), and
// plain C++ (other CPUs, and the tests' reference for the others).
// Highway 1.0.3 has no 8-bit dot products, so the x86 kernels are written
// with intrinsics in functions compiled for their ISA.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/packed_blocks.h"

namespace swan {

// Input rows quantized per 32 values: d = max |x| / 127 and q = x / d
// rounded to nearest even, so x ≈ d · q with q in [-127, 127].
struct QuantizedInput {
  const int8_t* q = nullptr;         // [m, k]
  const float* d = nullptr;          // [m, k / 32] the scales
  const int32_t* sum = nullptr;      // [m, k / 32] each block's sum of q
  const int32_t* sum_low = nullptr;  // [m, k / 32] the sum of each block's first 16 q (Q6_K's offset)
};

enum class BlockKernel { kScalar, kAvx2, kAvx512Vnni };
const char* BlockKernelName(BlockKernel kernel);
// The kernels this CPU can run, plain C++ first.
std::vector<BlockKernel> BlockKernelsHere();
// The best of them that SWAN_SIMD_TARGET allows (AVX2: not the AVX-512
// one), as Highway's dispatch is capped.
BlockKernel BestBlockKernel();

// q [m, k], d and sum [m, k / 32] of x [m, k]; k a multiple of 32.
void QuantizeInput(int8_t* q, float* d, int32_t* sum, const float* x, int64_t m, int64_t k);

// sum_low [m, k / 32]: the sum of each block's first 16 values of q [m, k].
void SumLowHalves(int32_t* sum_low, const int8_t* q, int64_t m, int64_t k);

// y [m, w.n] = x [m, w.k] · wᵀ (or += with accumulate), x quantized here
// (buffers kept by the calling thread). OpenMP over groups of 16 columns.
void BlockProduct(float* y, const float* x, const PackedBlocks& w, int64_t m, bool accumulate = false);
// Several products of one input (q, k and v; gate and up): x quantized
// once, and all their groups of 16 columns shared among the threads in one
// parallel region. Every w.k must be the same.
struct BlockOutput {
  float* y = nullptr;  // [m, w.n]
  PackedBlocks w;
};
void BlockProducts(const float* x, int64_t m, const BlockOutput* outs, int64_t count, bool accumulate = false);
// The same from an input already quantized, with a chosen kernel (tests).
void BlockProductWith(BlockKernel kernel, float* y, const QuantizedInput& x, const PackedBlocks& w, int64_t m,
                      bool accumulate = false);

}  // namespace swan
