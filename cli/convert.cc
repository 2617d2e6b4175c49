// `swan convert -m DIR --out DIR2 --dtype bf16|f16|f32`: a model directory with
// its weights stored in another floating-point type (bf16 halves a
// float32 export: swan's own models ship that way), every other file
// copied, config.json's torch_dtype updated.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/option_groups.h"
#include "cli/options.h"
#include "model/gguf_export.h"
#include "model/safetensors.h"
#include "ops/weight_type.h"
#include "train/checkpoint.h"
#include "util/bf16.h"
#include "util/f16.h"

namespace swan::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The command's options, declared once: its parsing and --help come from them.
OptionSet Options() {
  OptionSet options(
      "usage: swan convert -m DIR --out DIR2 [--dtype bf16|f16|f32] [--force]\n"
      "       swan convert -m DIR --out FILE.gguf [--dtype TYPE] [--force]\n");
  options.Add(ModelOptionFor("the Hugging Face model directory to convert"))
      .Add({{"--out"}, "DIR2|FILE.gguf", "where the converted model goes: a directory, or a .gguf file"})
      .Add({{"--dtype"},
            "TYPE",
            "the weights' type (default bf16): bf16, f16 or f32 in DIR2; in FILE.gguf any of " + WeightTypeList()})
      .Add({{"--force"}, "", "overwrite DIR2 when it already holds a model, or FILE.gguf when it exists"})
      .Text(
          "Writes DIR's weights as one model.safetensors of the given type (default bf16;\n"
          "rounded to nearest even) into DIR2, with DIR's other files (config.json with its\n"
          "torch_dtype updated, tokenizer files, the attention plan). DIR2 must not be DIR;\n"
          "a DIR2 that already holds a model is refused unless --force.\n"
          "The block formats (the types above but f32, bf16 and f16) have no safetensors type:\n"
          "write a .gguf file, or load the model with --weights TYPE.\n"
          "FILE.gguf: llama.cpp's layout (tensor names, q/k row order of llama files, Gemma's\n"
          "norms as 1 + w, llama3 RoPE scaling as a rope_freqs tensor) for Llama, Mistral,\n"
          "Qwen2, Qwen3 and Gemma 3, matrices in the given type (rows not a multiple of 32 values, 256\n"
          "for the K-quants, and vectors, stay f32). A Llama with sliding-window layers (swan's\n"
          "hybrids) is written as llama.cpp's granite_swa, a window flag (and a RoPE flag, for\n"
          "NoPE layers) per layer; sink tokens have no place in it (a note says so), routed,\n"
          "per-head and linear layers are refused.\n"
          "Every swan command that takes -m reads it back. DIR's tokenizer.json goes into the\n"
          "file as llama.cpp's tokenizer keys (SentencePiece-style BPE as \"llama\" with\n"
          "scores, byte-level BPE as \"gpt2\" with merges and its pre-tokenizer's name), with\n"
          "the chat template of tokenizer_config.json; a tokenizer llama.cpp has no form for is\n"
          "refused.\n");
  return options;
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

int RunConvert(const std::vector<std::string>& words) {
  const OptionSet flags = Options();
  const Args args = flags.Parse(words);
  if (HelpAsked(args)) {
    std::printf("%s", flags.Help().c_str());
    return 0;
  }
  if (!args.Has("-m") || !args.Has("--out")) throw std::invalid_argument(flags.Help());
  const fs::path src = args.Get("-m", ""), dst = args.Get("--out", "");
  const std::string dtype = args.Get("--dtype", "bf16");
  if (dst.extension() == ".gguf") {
    if (fs::exists(dst) && !args.Has("--force"))
      throw std::invalid_argument(dst.string() + " exists; --force overwrites it");
    std::vector<std::string> notes;
    const std::string bytes = HfToGgufBytes(src.string(), ParseWeightType(dtype, "--dtype"), &notes);
    for (const std::string& note : notes) std::fprintf(stderr, "note: %s\n", note.c_str());
    std::ofstream out(dst, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + dst.string());
    std::printf("wrote %s: %.1f MiB, matrices as %s\n", dst.string().c_str(), double(bytes.size()) / (1 << 20),
                dtype.c_str());
    return 0;
  }
  const auto& types = AllWeightTypes();
  if (std::any_of(types.begin(), types.end(),
                  [&](WeightType t) { return IsBlockQuantized(t) && dtype == WeightTypeName(t); }))
    throw std::invalid_argument(
        "--dtype " + dtype +
        ": safetensors has no block types; write --out FILE.gguf, or load the model with --weights " + dtype);
  if (dtype != "bf16" && dtype != "f16" && dtype != "f32") throw std::invalid_argument("--dtype: bf16, f16 or f32");
  if (fs::exists(dst) && fs::exists(src) && fs::equivalent(src, dst))
    throw std::invalid_argument("--out must be another directory than -m");
  if (!args.Has("--force") && (fs::exists(dst / "config.json") || fs::exists(dst / "model.safetensors")))
    throw std::invalid_argument(dst.string() + " already holds a model; --force overwrites it");
  fs::create_directories(dst);

  const TensorStore store = TensorStore::OpenDirectory(src.string());
  const int64_t elem = dtype == "f32" ? 4 : 2;
  const char* stored = dtype == "bf16" ? "BF16" : dtype == "f16" ? "F16" : "F32";
  const std::vector<std::string> names = store.Names();
  std::vector<TensorHeader> headers;
  int64_t offset = 0;  // bytes of the weights
  for (const std::string& name : names) {
    const TensorInfo& t = store.Info(name);
    headers.push_back({name, stored, t.shape, size_t(t.numel() * elem)});
    offset += t.numel() * elem;
  }
  const std::string out = SafetensorsBytes(headers, [&](size_t i, std::string& bytes) {
    const std::vector<float> values = store.ReadF32(names[i], headers[i].shape);  // [numel]
    if (dtype == "f32") {
      bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
      return;
    }
    for (float v : values) {
      const uint16_t b = dtype == "f16" ? F32ToF16(v) : F32ToBF16(v);
      bytes.append(reinterpret_cast<const char*>(&b), 2);
    }
  });
  WriteFileAtomic((dst / "model.safetensors").string(), out);

  // Everything else but the weights, config.json with the new dtype.
  for (const fs::directory_entry& e : fs::directory_iterator(src)) {
    const std::string file = e.path().filename().string();
    if (!e.is_regular_file() || file.find(".safetensors") != std::string::npos) continue;
    std::string bytes = ReadAll(e.path());
    if (file == "config.json") {
      json config = json::parse(bytes, nullptr, false);
      if (config.is_discarded()) throw std::runtime_error(e.path().string() + ": not valid JSON");
      config["torch_dtype"] = dtype == "bf16" ? "bfloat16" : dtype == "f16" ? "float16" : "float32";
      bytes = config.dump(2) + "\n";
    }
    WriteFileAtomic((dst / file).string(), bytes);
  }
  std::printf("wrote %s: %zu tensors, %.1f MiB of %s weights\n", dst.string().c_str(), names.size(),
              double(offset) / (1 << 20), dtype.c_str());
  return 0;
}

}  // namespace swan::cli
