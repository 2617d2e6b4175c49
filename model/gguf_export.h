// A Hugging Face directory as a GGUF file laid out as llama.cpp's converter
// lays it out: tensor names, q/k rows of "llama" files in interleaved RoPE
// order, Gemma 3's norm weights as 1 + w, hyperparameters and the
// tokenizer (tokenizer.json as llama.cpp's tokenizer.ggml.* keys) as
// metadata. LoadModel and LoadModelTokenizer read it back.
#pragma once

#include <string>
#include <vector>

#include "ops/weight_type.h"

namespace swan {

// The file's bytes, matrices as `type` (rows a block format cannot hold,
// and every 1-D tensor, stay F32). A Llama with window layers (swan's
// hybrids, NoPE layers included) is written as llama.cpp's granite_swa.
// Throws std::runtime_error for architectures, tensors and layers GGUF has
// no place for (swan's routers, per-head and linear layers); `notes`, if
// given, gets what the file leaves out (sink tokens).
std::string HfToGgufBytes(const std::string& dir, WeightType type, std::vector<std::string>* notes = nullptr);

}  // namespace swan
