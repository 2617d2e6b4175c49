// Picking the next token from logits: temperature, top-k, top-p (nucleus)
// and min-p filtering, in that order (as transformers' logits processors
// apply them), then a draw from a seeded generator. Temperature 0 = argmax.
#pragma once

#include <cstdint>
#include <random>

namespace swan {

struct SamplerOptions {
  double temperature = 1.0;  // 0 = greedy
  int32_t top_k = 0;         // keep the k most likely tokens; 0 = off
  double top_p = 1.0;        // keep the smallest set with probability >= p; 1 = off
  double min_p = 0.0;        // drop tokens below min_p * (top probability); 0 = off
  uint64_t seed = 0;
};

class Sampler {
 public:
  // Throws std::invalid_argument for out-of-range options.
  explicit Sampler(const SamplerOptions& options);

  // logits [vocab]
  int32_t Sample(const float* logits, int64_t vocab);

 private:
  SamplerOptions options_;
  std::mt19937_64 rng_;
};

int32_t Argmax(const float* logits, int64_t vocab);

}  // namespace swan
