// The machine's yardsticks: the rate of the matrix products swan runs on,
// measured in the same run as whatever is compared with them (absolute
// times drift on a shared machine; ratios hold).
#pragma once

#include <cstdint>
#include <string>

namespace swan {

// GFLOP/s of oneDNN's fp32 matmul on an m x k by k x n product (best of
// `repeats` runs after one warm-up).
double MeasureOneDnnGemmGflops(int64_t m, int64_t n, int64_t k, int repeats = 3);

// The bf16 yardstick: the product bf16 weights run on here, oneDNN's where
// this CPU has one and swan's own (ops/bf16_gemm.h) where it has not.
struct BF16GemmRate {
  double gflops = 0;
  bool onednn = false;  // which of the two was measured
};
BF16GemmRate MeasureBF16GemmGflops(int64_t m, int64_t n, int64_t k, int repeats = 3);

// "oneDNN bf16" or "swan bf16 (oneDNN bf16: not available on this CPU)",
// naming the ISA cap when one is set.
std::string BF16ProductName();

}  // namespace swan
