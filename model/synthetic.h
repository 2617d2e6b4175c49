// Random-weight models in the shapes of real ones, so that performance can
// be measured without downloading weights (`swan bench --synthetic NAME`).
// They run the Llama-family compute in those shapes: Qwen2.5's q/k/v biases
// and Gemma 3's GELU, QK-norm and extra norms are left out (each is well
// under 1% of the bytes and FLOPs of a decode step); the attention layout
// (GQA ratio, head_dim, Gemma 3's 5:1 local/global pattern with window 512,
// Mistral's 4096 window) is the real one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops/weight_type.h"
#include "model/config.h"
#include "model/model.h"

namespace swan {

std::vector<std::string> SyntheticShapeNames();  // "llama3.2-1b", ...

// Throws std::invalid_argument listing the known names.
ModelConfig SyntheticConfig(const std::string& name);

// Weights uniform with std 0.02 (norms 1), linear layers stored as
// `weight_type`, from `seed`.
// vulkan_device >= 0: the model runs on that Vulkan device (gpu/device_decoder.h).
std::unique_ptr<LanguageModel> LoadSyntheticModel(const std::string& name, WeightType weight_type, uint64_t seed = 1,
                                                  int vulkan_device = -1);

}  // namespace swan
