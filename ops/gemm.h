// General matrix products through oneDNN (2.6 API), float32 or bfloat16
// inputs with float32 output; every other matrix product in swan calls these.
//
//   C [m, n] (+)= op(A) · op(B)
//   op(A) = A [m, k], or A stored as [k, m] when trans_a
//   op(B) = B [k, n], or B stored as [n, k] when trans_b
// All matrices row-major and dense. A linear layer y = x · wᵀ (w [out, in],
// the nn.Linear layout) needs three of these: the forward (trans_b), the
// input gradient dx = dy · w (no transposes) and the weight gradient
// dw += dyᵀ · x (trans_a, accumulate).
//
// Primitives are built once per shape and cached. Every call adds its
// floating-point operations to a process-wide counter so that a training
// run can report the rate its matrix products reached. Where oneDNN has no
// bf16 product (below AVX-512), GemmBF16 runs swan's own (ops/bf16_gemm.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace swan {

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false;
  bool trans_b = false;
  int64_t ldc = 0;  // C's row stride, >= n (columns of a wider matrix); 0 = n
};

// Throws std::invalid_argument on non-positive sizes or ldc in (0, n).
void Gemm(float* c, const float* a, const float* b, const GemmShape& shape, bool accumulate);
// The same with A and B in bfloat16 (raw bits); C stays float32.
void GemmBF16(float* c, const uint16_t* a, const uint16_t* b, const GemmShape& shape, bool accumulate);

// C [m, n] (+)= A · op(B) with A in float32 and B in f16 or bf16 (raw
// bits), always swan's own product (ops/bf16_gemm.h): each B value is
// widened once, as its block is packed.
enum class HalfFormat { kBF16, kF16 };
void GemmF32ByHalf(float* c, const float* a, const uint16_t* b, HalfFormat b_format, const GemmShape& shape,
                   bool accumulate);

// On (swan serve --deterministic): every product sums each element in one
// order whatever the number of threads that run it, so that an answer does
// not depend on how busy the machine is. oneDNN's products do so wherever
// it has AVX-512; below that, Gemm then runs swan's own float32 product
// (ops/bf16_gemm.h), at about oneDNN's rate there (docs/serving.md).
void SetThreadInvariantProducts(bool on);

// Whether oneDNN multiplies bf16 in hardware on this CPU: AVX-512 BF16 or
// AMX (asked once; false below them or under a DNNL_MAX_CPU_ISA cap below
// them). Which path GemmBF16 takes (else swan's own), and whether Linear
// multiplies 16-bit weights in bf16 (else widened to float32).
bool OneDnnHasBF16Matmul();

// Whether oneDNN runs AVX-512 code here (not under a DNNL_MAX_CPU_ISA cap
// below it): below it, swan's own products beat its float32 one on f16 and
// bf16 weights (docs/performance.md).
bool OneDnnHasAvx512();

// dst[i] = bf16(src[i]), rounded to nearest even exactly like util/bf16.h's
// F32ToBF16 (ops/bf16_round.h), timed in the counters.   dst, src [n]
void ConvertToBF16(uint16_t* dst, const float* src, int64_t n);

// Floating-point operations and seconds spent in Gemm and GemmBF16 since
// the last reset, and seconds spent in ConvertToBF16.
struct GemmCounters {
  double flops = 0;
  double seconds = 0;
  double convert_seconds = 0;
};
GemmCounters GetGemmCounters();
void ResetGemmCounters();

// How many oneDNN primitives (one per product shape) are kept now; the
// least recently used go past a fixed cap, so memory stays bounded
// whatever shapes come.
size_t CachedGemmPrimitives();

}  // namespace swan
