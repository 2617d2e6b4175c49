#include "cli/option_groups.h"

#include <stdexcept>
#include <vector>

#include "ops/weight_type.h"
#include "util/threads.h"

namespace swan::cli {

OptionSpec ModelOption(const std::string& more) {
  return ModelOptionFor("Hugging Face model directory (config.json, *.safetensors, tokenizer.json), or a GGUF file" +
                        more);
}

OptionSpec ModelOptionFor(const std::string& help) { return {{"-m"}, "DIR", help}; }

OptionSpec WeightsOption(const std::string& after) {
  return {{"--weights"},
          "TYPE",
          "hold the linear layers and the embedding table as " + WeightTypeList() +
              (after.empty() ? ", converted as they load (default: as stored; rows not a multiple of 32 values, 256 "
                               "for the K-quants, stay so)"
                             : after)};
}

OptionSpec DeviceOption() {
  return {{"--device"},
          "DEV",
          "cpu (default), or vulkan[:N]: the forward on Vulkan device N (default 0; swan --version lists them), "
          "a prompt in passes of --batch tokens, f32 or bf16 KV; every plan but linear layers (docs/gpu.md)"};
}

int VulkanDeviceOf(const std::string& device) {
  if (device == "cpu") return -1;
  if (device == "vulkan") return 0;
  if (device.rfind("vulkan:", 0) == 0 && device.size() > 7 &&
      device.find_first_not_of("0123456789", 7) == std::string::npos && device.size() < 12)
    return std::stoi(device.substr(7));
  throw std::invalid_argument("--device: '" + device + "' is not cpu, vulkan or vulkan:N");
}

void RequireDeviceKv(const Args& args, KvType type) {
  if (args.Has("--device") && VulkanDeviceOf(args.Get("--device", "cpu")) >= 0 && type != KvType::kF32 &&
      type != KvType::kBF16)
    throw std::invalid_argument(std::string("--device vulkan keeps an f32 or bf16 KV cache, not ") + KvTypeName(type) +
                                ": --kv f32 or bf16, or run on the CPU");
}

LoadOptions LoadOptionsFrom(const Args& args) {
  LoadOptions options;
  if (args.Has("--weights")) options.weights = ParseWeightType(args.Get("--weights", ""), "--weights");
  if (args.Has("--device")) options.vulkan_device = VulkanDeviceOf(args.Get("--device", "cpu"));
  return options;
}

OptionSpec KvOption(const std::string& default_type, bool decodes) {
  // The types KvTypeFromString accepts, the default first.
  std::vector<std::string> types = {default_type};
  for (const char* type : {"f32", "bf16", "q8_0"})
    if (type != default_type) types.push_back(type);
  std::string list;
  for (size_t i = 0; i < types.size(); ++i)
    list += (i == 0 ? "" : i + 1 == types.size() ? " or " : ", ") + types[i] + (i == 0 ? " (default)" : "");
  return {{"--kv"},
          "TYPE",
          "KV cache storage, " + list + " (q8_0: head dim a multiple of 32; a Vulkan device holds f32 or bf16)" +
              (decodes ? "; bf16 decode multiplies in bf16 where `swan --version` says so (queries, probabilities "
                         "rounded)"
                       : "")};
}

OptionSpec ThreadsOption() {
  return {{"-t", "--threads"},
          "N",
          "threads to compute with (default " + std::to_string(ThreadLimit()) +
              ": the cores swan may use, or OMP_NUM_THREADS); while other programs keep cores busy, each step "
              "(prefill, decode token, training step) runs on the ones they leave idle (SWAN_ADAPT_THREADS=0: "
              "always N); decode runs on swan's own spinning helper threads (SWAN_SPIN_TEAM=0: on OpenMP's)"};
}

void ApplyThreadsOption(const Args& args) {
  for (const char* name : {"-t", "--threads"}) {
    if (!args.Has(name)) continue;
    const long long n = args.GetInt(name, 0);
    if (n < 1 || n > 4096)
      throw std::invalid_argument(std::string(name) + " takes a number of threads from 1 up, got " +
                                  args.Get(name, ""));
    SetThreadLimit(int(n));
  }
}

OptionSpec PlanOption(const std::string& examples, const std::string& default_plan) {
  return {{"--attn"},
          "SPEC",
          "attention plan (default: " + default_plan + ")" + (examples.empty() ? "" : ", e.g. " + examples)};
}

OptionSpec PlanListOption(const std::string& more) {
  return {
      {"--attn"}, "LIST", "attention plans separated by ';' (plan specs contain commas), quoted for the shell" + more};
}

OptionSpec ContextOption(const std::string& default_more, const std::string& after) {
  return {{"-c", "--ctx"},
          "C",
          "the context: positions a sequence may reach (default: the model's max_position_embeddings" + default_more +
              ")" + after};
}

std::string ContextFlag(const Args& args) { return args.Has("-c") ? "-c" : "--ctx"; }

OptionSpec PrefillChunkOption(int default_tokens, const std::string& note) {
  return {{"--batch"},
          "B",
          "prefill chunk: tokens per forward step (default " + std::to_string(default_tokens) +
              (note.empty() ? "" : "; " + note) + ")"};
}

OptionSpec JsonOption(const std::string& what, const std::string& after) {
  return {{"--json"}, "", "print " + what + " as JSON" + after};
}

OptionSpec QuietOption() { return {{"--quiet"}, "", "no progress on stderr"}; }

}  // namespace swan::cli
