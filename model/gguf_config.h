// A GGUF file's metadata as the hyperparameters of the Hugging Face model
// it came from (the keys llama.cpp's converter writes).
#pragma once

#include <string>

#include "model/config.h"
#include "model/gguf.h"

namespace swan {

// general.architecture llama (Llama, Mistral), qwen2, qwen3, gemma3 or
// granite_swa (a Llama with window layers and perhaps NoPE ones, as swan
// writes its hybrids; the NoPE layers become the config's attention plan) as
// the HF architecture and hyperparameters, with the tensors that are
// hyperparameters: rope_freqs (RoPE factors), granite_swa's attn_sinks
// (learned sink logits, which must be none). Throws std::runtime_error for
// other architectures and missing or unsupported metadata, naming the file.
ModelConfig GgufModelConfig(const GgufFile& file);

// Whether llama.cpp's architecture `arch` is Llama's network with q/k rows
// in its interleaved RoPE order (llama, and granite_swa as swan writes it).
inline bool LlamaRowOrder(const std::string& arch) { return arch == "llama" || arch == "granite_swa"; }

// The sink logit swan writes into granite_swa files, which require one per
// head and layer: none (its exp against any score is 0). Sink logits at or
// below kNoSinkLogitBelow read back as none; others are refused.
constexpr float kNoSinkLogit = -1e30f;
constexpr float kNoSinkLogitBelow = -1e4f;

}  // namespace swan
