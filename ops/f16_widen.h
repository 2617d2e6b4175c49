// float16 and bfloat16 -> float32, vectorized (Highway, runtime dispatch;
// F16C on AVX2 and AVX-512): util/f16.h's F16ToF32 and util/bf16.h's
// BF16ToF32 on every input, on every CPU. Linear widens 16-bit weights with
// them a block at a time for products of many rows where the CPU has no
// bf16 products.
#pragma once

#include <cstdint>

namespace swan {

// dst[i] = F16ToF32(src[i]).   dst, src [n]
void WidenF16(float* dst, const uint16_t* src, int64_t n);
// dst[i] = BF16ToF32(src[i]) (exact).   dst, src [n]
void WidenBF16(float* dst, const uint16_t* src, int64_t n);

}  // namespace swan
