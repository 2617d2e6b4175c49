// A linear layer's weight and the product that picks the right kernel:
//   y [m, out] = x [m, in] · wᵀ,   w [out, in] (nn.Linear layout)
// Decode-sized m (<= kGemvMaxRows) goes to the memory-bound Highway GEMV,
// which reads the weights once; larger m (prefill, training) goes to
// oneDNN's GEMM, in float32 or, for bf16 weights, in bf16 with float32
// accumulation (swan's own bf16 product where oneDNN has none).
#pragma once

#include <cstdint>
#include <vector>

#include "ops/gemv.h"

namespace swan {

constexpr int64_t kGemvMaxRows = 8;

class LinearWeight {
 public:
  LinearWeight() = default;
  // Takes a float32 [out, in] matrix; stored as `type` (bf16 rounds).
  LinearWeight(std::vector<float> w, int64_t out, int64_t in, KvType type = KvType::kF32);
  // Takes bf16 bits [out, in] as they are.
  LinearWeight(std::vector<uint16_t> w, int64_t out, int64_t in);

  WeightView view() const;
  int64_t out() const { return out_; }
  int64_t in() const { return in_; }
  KvType type() const { return type_; }
  size_t Bytes() const { return f32_.size() * 4 + bf16_.size() * 2; }
  const float* f32() const { return f32_.data(); }         // [out, in] or null
  const uint16_t* bf16() const { return bf16_.data(); }    // [out, in] or null

 private:
  std::vector<float> f32_;      // [out, in] when type_ == kF32
  std::vector<uint16_t> bf16_;  // [out, in] when type_ == kBF16
  int64_t out_ = 0, in_ = 0;
  KvType type_ = KvType::kF32;
};

// y = x · wᵀ, or y += x · wᵀ with accumulate.   y [m, out], x [m, in]
void Linear(float* y, const float* x, int64_t m, const LinearWeight& w, bool accumulate = false);

// Time and FLOPs spent in Linear since the last reset, counted only while
// enabled (benchmarks use it to report the matrix products' share).
struct LinearStats {
  double seconds = 0;
  double flops = 0;
  double bf16_flops = 0;  // the part of `flops` with bf16 weights
};
void EnableLinearStats(bool on);
LinearStats TakeLinearStats();  // returns and resets

}  // namespace swan
