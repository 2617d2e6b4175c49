// The machine's yardstick: oneDNN's fp32 matrix product rate, measured in
// the same run as whatever is compared with it (absolute times drift on a
// shared machine; ratios hold).
#pragma once

#include <cstdint>

namespace swan {

// GFLOP/s of oneDNN's fp32 matmul on an m x k by k x n product (best of
// `repeats` runs after one warm-up).
double MeasureOneDnnGemmGflops(int64_t m, int64_t n, int64_t k, int repeats = 3);
// The same with bf16 inputs and fp32 output.
double MeasureOneDnnGemmGflopsBF16(int64_t m, int64_t n, int64_t k, int repeats = 3);

}  // namespace swan
