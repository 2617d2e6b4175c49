// Rotary position embeddings (RoPE), Hugging Face `rotate_half` convention:
// within each head the pairs are (x[i], x[i + head_dim/2]) for
// i < head_dim/2, rotated by angle pos * inv_freq[i].
//
// The frequencies follow transformers' modeling_rope_utils: plain
// (`base`), linear (positions divided by `factor`), YaRN and llama3 scaling;
// or each frequency divided by a factor of its own, as llama.cpp applies the
// rope_freqs tensor of a GGUF file (Llama 3.1 and later).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace swan {

struct RopeScaling {
  enum class Kind { kNone, kLinear, kYarn, kLlama3, kFrequencyFactors };
  Kind kind = Kind::kNone;
  double factor = 1.0;
  // YaRN and llama3: the context the model was trained with.
  int64_t original_max_position_embeddings = 0;
  // YaRN.
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  double attention_factor = 0.0;  // 0 = 0.1 * ln(factor) + 1
  // llama3.
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  // kFrequencyFactors: inv_freq[i] is divided by frequency_factors[i].
  std::vector<double> frequency_factors;  // [head_dim / 2]

  std::string ToString() const;  // "none", "linear x4", "yarn x8 (orig 4096)", ...
};

// Positional encoding of one layer.
struct RopeSettings {
  bool enabled = true;  // false = NoPE: q and k are used as projected
  double base = 10000.0;
  RopeScaling scaling;

  std::string ToString() const;  // "rope 10000", "rope 1e+06 yarn x8", "nope"
};

// Precomputed frequencies of one RoPE setting for one head size.
class Rope {
 public:
  Rope(const RopeSettings& settings, int32_t head_dim);

  // Rotates in place x [n_tokens, n_heads, head_dim], token t at pos[t].
  void Apply(float* x, const int32_t* pos, int64_t n_tokens, int32_t n_heads) const;
  // Rotates a layer's queries q [n_tokens, q_heads, head_dim] and keys
  // k [n_tokens, k_heads, head_dim] alike, each token's sines taken once.
  void Apply(float* q, int32_t q_heads, float* k, int32_t k_heads, const int32_t* pos, int64_t n_tokens) const;

  // The cosines and sines Apply rotates by, out [n_tokens, 2, head_dim / 2]
  // (a token's cosines, then its sines): what a device's kernel reads.
  void CosSin(const int32_t* pos, int64_t n_tokens, float* out) const;

  const std::vector<double>& inv_freq() const { return inv_freq_; }  // [head_dim / 2]
  double attention_factor() const { return attention_factor_; }

 private:
  // cos_sin [2, head_dim / 2] of position pos.
  void TokenCosSin(int32_t pos, float* cos_sin) const;

  bool enabled_;
  int32_t head_dim_;
  std::vector<double> inv_freq_;   // [head_dim / 2]
  double attention_factor_ = 1.0;  // multiplies cos and sin (YaRN)
};

// What each frequency of `settings` is divided by against plain RoPE of
// its base: linear and llama3 scaling as llama.cpp's rope_freqs tensor
// holds them (1 where a frequency is kept, `factor` where it is divided).
// [head_dim / 2]
std::vector<double> FrequencyFactors(const RopeSettings& settings, int32_t head_dim);

}  // namespace swan
