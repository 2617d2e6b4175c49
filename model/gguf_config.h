// A GGUF file's metadata as the hyperparameters of the Hugging Face model
// it came from (the keys llama.cpp's converter writes).
#pragma once

#include "model/config.h"
#include "model/gguf.h"

namespace swan {

// general.architecture llama (Llama, Mistral), qwen2 or gemma3 as the HF
// architecture and hyperparameters. Throws std::runtime_error for other
// architectures and missing or unsupported metadata, naming the file.
ModelConfig GgufModelConfig(const GgufFile& file);

}  // namespace swan
