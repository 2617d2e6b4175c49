// swan's own matrix products, for CPUs where oneDNN has none in bf16
// (oneDNN 2.6 has bf16 matmul only from AVX-512 up, so AVX2 machines need
// this), in float32 where a product must not depend on the thread count
// (ops/gemm.h's SetThreadInvariantProducts), and float32 by f16 or bf16
// weights below AVX-512:
//
//   C [m, ldc] (+)= op(A) · op(B),   A and B bf16 (raw bits) or float32, or A
//                                     float32 and B f16 or bf16; C float32
//
// with the shapes and layouts of ops/gemm.h's Gemm (trans_a: A stored
// [k, m]; trans_b: B stored [n, k]). Blocks of A and B are packed into
// float32 panels (each bf16 promoted once, when packed), then a register-
// blocked FMA kernel (Highway, runtime dispatch) accumulates in float32:
// the same arithmetic oneDNN's bf16 path does, so results agree with it to
// float32 rounding. OpenMP threads share each packed block of A, pack
// their own panels of B, and split the rows and columns of C, never k:
// every element is summed in the same order on any number of threads.
#pragma once

#include <cstdint>

#include "ops/gemm.h"

namespace swan {

// Throws std::invalid_argument on non-positive sizes, null pointers or
// ldc in (0, n).
// Called by GemmBF16 when oneDNN lacks bf16; callable directly (tests and
// benchmarks compare it with oneDNN on machines that have both).
void GemmBF16Swan(float* c, const uint16_t* a, const uint16_t* b, const GemmShape& shape, bool accumulate);
void GemmF32Swan(float* c, const float* a, const float* b, const GemmShape& shape, bool accumulate);

// A in float32, B in f16 or bf16 (raw bits, ops/gemm.h's HalfFormat), each
// B value widened once as its block is packed: the float32 product's
// arithmetic on B's float32 values, so it gives GemmF32Swan's bits on a
// widened copy of B.
void GemmF32ByHalfSwan(float* c, const float* a, const uint16_t* b, HalfFormat b_format, const GemmShape& shape,
                       bool accumulate);

}  // namespace swan
