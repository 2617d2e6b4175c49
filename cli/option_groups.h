// The options several commands share, each declared here once (names,
// value name, help), with the code that reads them. A command adds them to
// its OptionSet (cli/options.h) beside its own; a parameter only adds what
// differs between commands (a default, a note).
#pragma once

#include <string>

#include "cli/args.h"
#include "cli/options.h"
#include "model/model.h"

namespace swan::cli {

// -m DIR: "Hugging Face model directory (config.json, *.safetensors,
// tokenizer.json), or a GGUF file", then `more`.
OptionSpec ModelOption(const std::string& more = "");
// -m DIR for a command that takes a model of a kind, described by `help`.
OptionSpec ModelOptionFor(const std::string& help);

// --weights TYPE: the type the linear layers and the embedding table are
// held in, listing every type ParseWeightType accepts (ops/weight_type.h),
// then `after` (by default: converted as they load, default as stored).
OptionSpec WeightsOption(const std::string& after = "");
// LoadOptions from --weights; as stored when absent. Throws
// std::invalid_argument for an unknown type.
LoadOptions LoadOptionsFrom(const Args& args);
// --device cpu|vulkan[:N], read by LoadOptionsFrom.
OptionSpec DeviceOption();
// -1 for "cpu", N for "vulkan:N" ("vulkan": 0); throws std::invalid_argument
// naming --device for anything else.
int VulkanDeviceOf(const std::string& device);
// Throws std::invalid_argument when --device names a Vulkan device and the
// KV type is neither f32 nor bf16 (what the device's cache holds).
void RequireDeviceKv(const Args& args, KvType type);

// --kv TYPE: the KV cache storage, `default_type` when absent; `decodes`
// adds what a bf16 cache does to decode.
OptionSpec KvOption(const std::string& default_type = "f32", bool decodes = false);

// -t N / --threads N: the threads a command computes with (llama.cpp's
// spelling), with this machine's default in the help.
OptionSpec ThreadsOption();
// Applies the option when given (swan's thread limit, util/threads.h);
// throws on a value that is not a positive whole number.
void ApplyThreadsOption(const Args& args);

// --attn SPEC: one attention plan, by default `default_plan`; `examples`
// follow "e.g." when given.
OptionSpec PlanOption(const std::string& examples = "", const std::string& default_plan = "the model's own");
// --attn LIST: plans separated by ';' (read with SplitPlanList), then `more`.
OptionSpec PlanListOption(const std::string& more);

// -c C / --ctx C: the positions a sequence may reach (default: the model's
// max_position_embeddings, then `default_more`), then `after`. ContextFlag
// says which spelling was given, to read its value.
OptionSpec ContextOption(const std::string& default_more = "", const std::string& after = "");
std::string ContextFlag(const Args& args);

// --batch B: the prefill chunk, `default_tokens` when absent; `note` is
// added to the default in parentheses.
OptionSpec PrefillChunkOption(int default_tokens, const std::string& note = "");

// --json: print `what` as JSON, then `after`.
OptionSpec JsonOption(const std::string& what, const std::string& after = "");
// --quiet: no progress on stderr.
OptionSpec QuietOption();

}  // namespace swan::cli
