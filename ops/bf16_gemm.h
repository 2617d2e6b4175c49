// swan's own bf16 matrix product, for CPUs where oneDNN has none (oneDNN
// 2.6 has bf16 matmul only from AVX-512 up, so AVX2 machines need this):
//
//   C [m, n] (+)= op(A) · op(B),   A and B bf16 (raw bits), C float32
//
// with the shapes and layouts of ops/gemm.h's GemmBF16 (trans_a: A stored
// [k, m]; trans_b: B stored [n, k]). Blocks of A and B are packed into
// float32 panels (each bf16 promoted once, when packed), then a register-
// blocked FMA kernel (Highway, runtime dispatch) accumulates in float32:
// the same arithmetic oneDNN's bf16 path does, so results agree with it to
// float32 rounding. OpenMP threads share each packed block of B.
#pragma once

#include <cstdint>

#include "ops/gemm.h"

namespace swan {

// Throws std::invalid_argument on non-positive sizes or null pointers.
// Called by GemmBF16 when oneDNN lacks bf16; callable directly (tests and
// benchmarks compare it with oneDNN on machines that have both).
void GemmBF16Swan(float* c, const uint16_t* a, const uint16_t* b, const GemmShape& shape, bool accumulate);

}  // namespace swan
