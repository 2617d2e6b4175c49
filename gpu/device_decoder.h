// The one decoder (model/decoder_spec.h: Llama, Mistral, Qwen2, Qwen3,
// Gemma 3) run on a Vulkan device: the same family spec, tensor table and
// attention plan as the CPU's model/decoder.cc, executed by gpu/'s kernels.
// Weights are uploaded once; each session's KV cache lives in device
// memory with the CPU cache's slots and positions (window layers a ring
// of sinks + window slots, full layers every position); the sampler stays
// on the host, which reads back only the logits.
//
// Tokens run one at a time (a prefill is a run of decode steps). Plans:
// full, window, window + sinks, static hybrids, per-layer overrides,
// NoPE and per-layer RoPE; routed, per-head and linear layers and
// `pos:cache` are refused with a message that says so, as are q8_0 KV
// caches. Weights stay in their type on the device (block rows in the
// file's layout), but for the block types without a shader yet (Q5_K,
// Q4_1, Q5_0, Q5_1), held there as float32.
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
