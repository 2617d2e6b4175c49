// float32 -> bfloat16, vectorized (Highway, runtime dispatch): the bits of
// util/bf16.h's F32ToBF16 on every input (round to nearest even, NaN stays
// NaN, signed zeros and denormals kept), on every CPU.
#pragma once

#include <cstdint>

namespace swan {

// dst[i] = F32ToBF16(src[i]).   dst, src [n]
void RoundToBF16(uint16_t* dst, const float* src, int64_t n);

// dst[i] = F32ToBF16(F16ToF32(src[i])): float16 bits to bfloat16 bits in one
// pass (F16C promotes on AVX2 and AVX-512).   dst, src [n]
void F16ToBF16(uint16_t* dst, const uint16_t* src, int64_t n);

}  // namespace swan
