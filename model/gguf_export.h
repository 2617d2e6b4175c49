// A Hugging Face directory as a GGUF file laid out as llama.cpp's converter
// lays it out: tensor names, q/k rows of "llama" files in interleaved RoPE
// order, Gemma 3's norm weights as 1 + w, hyperparameters and the
// tokenizer (tokenizer.json as llama.cpp's tokenizer.ggml.* keys) as
// metadata. LoadModel and LoadModelTokenizer read it back.
#pragma once

#include <string>

#include "ops/weight_type.h"

namespace swan {

// The file's bytes, matrices as `type` (rows a block format cannot hold,
// and every 1-D tensor, stay F32). Throws std::runtime_error for
// architectures or tensors GGUF has no place for (swan's routers).
std::string HfToGgufBytes(const std::string& dir, WeightType type);

}  // namespace swan
