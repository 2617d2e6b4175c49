// float16 -> float32, vectorized (Highway, runtime dispatch; F16C on AVX2
// and AVX-512): util/f16.h's F16ToF32 on every input, on every CPU. Linear
// widens f16 weights with it a block at a time for products of many rows.
#pragma once

#include <cstdint>

namespace swan {

// dst[i] = F16ToF32(src[i]).   dst, src [n]
void WidenF16(float* dst, const uint16_t* src, int64_t n);

}  // namespace swan
