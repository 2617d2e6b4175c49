// A GGUF file as a model swan runs: its metadata as a ModelConfig, and its
// tensors under the Hugging Face names the families read (token_embd ->
// model.embed_tokens, blk.N.attn_q -> model.layers.N.self_attn.q_proj, ...),
// in their own types (F32, F16 and BF16 used in place; Q8_0, Q4_0, Q4_1,
// Q5_0, Q5_1, Q4_K, Q5_K and Q6_K packed into a copy of about the same size
// for the integer kernels, the mapped pages then let go; Q3_K as Q6_K of the
// same values, 1.9x its bytes).
// Undone on the way in, as llama.cpp's converter did them on the way out:
// the q/k row permutation of "llama" files (interleaved RoPE pairs back to
// halves) and the +1 of Gemma 3's norm weights.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "model/config.h"
#include "model/gguf.h"
#include "model/gguf_config.h"
#include "model/weight_source.h"

namespace swan {

class GgufWeights : public WeightSource {
 public:
  GgufWeights(const GgufFile& file, const ModelConfig& config);
  bool Has(const std::string& name) const override;
  std::vector<float> F32(const std::string& name, const std::vector<int64_t>& shape) const override;
  LinearWeight Linear(const std::string& name, int64_t out, int64_t in) const override;
  WeightType LinearType(const std::string& name) const override;
  void Evict(const std::string& name) const override;
  // Throws when the file holds tensors the model did not read.
  void RequireAllUsed() const;

 private:
  // The GGUF tensor for an HF name, its shape checked ([out, in] is
  // ne = {in, out}); throws naming both when it is missing.
  const GgufTensor& Find(const std::string& hf_name, const std::vector<int64_t>& shape) const;

  const GgufFile& file_;
  ModelConfig config_;
  mutable std::set<std::string> read_;  // GGUF names read
};

// llama.cpp's "llama" files hold each q/k head's rows as interleaved RoPE
// pairs (2i, 2i + 1) where Hugging Face rotates halves (i, i + head_dim/2):
// the file's row `gguf_row` is Hugging Face's row LlamaQkHfRow(gguf_row).
int64_t LlamaQkHfRow(int64_t gguf_row, int64_t head_dim);

// The type swan holds a GGUF matrix in (its own: swan computes in every
// type it reads); nullopt for a type it does not read.
std::optional<WeightType> GgufHeldType(const GgufTensor& t);

// The GGUF name of an HF tensor name ("" for names GGUF files do not have).
std::string GgufTensorName(const std::string& hf_name, const std::string& architecture);

}  // namespace swan
