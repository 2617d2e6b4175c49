// The one decoder (model/decoder_spec.h: Llama, Mistral, Qwen2, Qwen3,
// Gemma 3) run on a Vulkan device: the same family spec, tensor table and
// attention plan as the CPU's model/decoder.cc, executed by gpu/'s kernels.
// Weights are uploaded once, in their type (block rows in the file's
// layout); each session's KV cache (f32 or bf16) lives in device memory
// with the CPU cache's slots and positions (window layers a ring of sinks
// + window - 1 + max_chunk slots, the others every position); the sampler
// stays on the host, which reads back only the logits.
//
// A step runs the linear layers once over all its tokens (a prefill chunk
// of up to max_chunk, or one token of each sequence a server decodes),
// and attention per sequence over its own cache. Every plan kind but
// linear layers, which are refused with a message that says so, as are
// q8_0 KV caches. Routed layers keep every key; a per-head layer its
// full heads, its window heads in a ring.
#pragma once

#include <memory>
#include <string>

#include "model/config.h"
#include "model/model.h"

namespace swan {

class WeightSource;

// A model of config's family whose forward runs on Vulkan device
// `device_index` (swan --version lists them). Throws std::runtime_error
// with one line naming what is missing when there is no such device.
std::unique_ptr<LanguageModel> BuildDeviceDecoder(const WeightSource& weights, const ModelConfig& config,
                                                  const std::string& origin, int device_index);

}  // namespace swan
