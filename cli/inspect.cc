// `swan inspect`: a model's configuration, its resolved attention plan per
// layer, and what the KV cache holds at a given context length.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/option_groups.h"
#include "cli/options.h"
#include "kv/kv_cache.h"
#include "model/config.h"
#include "model/gguf.h"
#include "model/gguf_weights.h"
#include "model/model.h"
#include "model/safetensors.h"

namespace swan::cli {

namespace {

// The command's options, declared once: its parsing and --help come from them.
OptionSet Options() {
  OptionSet options(
      "usage: swan inspect -m DIR [--attn SPEC] [-c CTX] [--batch B] [--kv TYPE]\n"
      "  Prints the model's configuration, the attention plan resolved for it (per layer:\n"
      "  kind, span, positional encoding) and the KV cache bytes per layer after CTX tokens\n"
      "  (default: max_position_embeddings), against full attention on every layer. DIR may\n"
      "  also be a GGUF file: then its matrices' types (each held in its own type) and\n"
      "  their bytes in the file and held.\n");
  options.Add(ModelOption())
      .Add(PlanOption())
      .Add({{"-c"}, "CTX", "the context the KV cache bytes are given at (default: max_position_embeddings)"})
      .Add(PrefillChunkOption(512, "the window rings leave room for it"))
      .Add(KvOption());
  return options;
}

std::string ToUpper(std::string s) {
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string Bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof(buf), u ? "%.1f %s" : "%.0f %s", b, units[u]);
  return buf;
}

// "Q4_K x44, Q5_0 x5; 4.6 MiB in the file, 4.7 MiB held": the file's
// matrices by type (a type swan holds in another would say "as"), and their bytes
// (block types as packed, in whole groups of 16 rows).
std::string HeldTypes(const GgufFile& file) {
  std::vector<std::pair<std::string, int>> counts;  // ["Q5_0", n] in first-seen order
  double file_bytes = 0, held_bytes = 0;
  for (const GgufTensor& t : file.tensors()) {
    if (t.ne.size() != 2) continue;
    const std::optional<WeightType> held = GgufHeldType(t);
    std::string key = GgmlTypeName(t.type);
    if (!held)
      key += " (not read)";
    else if (GgmlTypeName(t.type) != ToUpper(WeightTypeName(*held)))
      key += std::string(" as ") + WeightTypeName(*held);
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == key; });
    if (it == counts.end())
      counts.emplace_back(key, 1);
    else
      ++it->second;
    file_bytes += double(t.n_bytes);
    if (held)
      held_bytes += IsBlockQuantized(*held) ? double(PackedBytes(*held, t.ne[1], t.ne[0]))
                                            : double(t.ne[1]) * double(WeightRowBytes(*held, t.ne[0]));
  }
  std::string out;
  for (const auto& [key, n] : counts) out += (out.empty() ? "" : ", ") + key + " x" + std::to_string(n);
  return out + "; " + Bytes(file_bytes) + " in the file, " + Bytes(held_bytes) + " held";
}

}  // namespace

int RunInspect(const std::vector<std::string>& words) {
  const OptionSet flags = Options();
  const Args args = flags.Parse(words);
  if (HelpAsked(args)) {
    std::printf("%s", flags.Help().c_str());
    return 0;
  }
  if (!args.Has("-m")) throw std::invalid_argument("-m DIR is required\n" + flags.Help());
  const std::string dir = args.Get("-m", "");
  const ModelConfig c = ModelConfigOf(dir);
  // A model trained by swan stores its plan in config.json: its own plan
  // unless --attn says otherwise (as LanguageModel::ResolvePlan does).
  const std::string spec = args.Get("--attn", "");
  const bool own = spec.empty() || spec == "model";
  const AttentionPlan plan =
      ResolvePlan(own && !c.attention_plan.empty() ? c.attention_plan : spec, AttentionDefaultsFor(c));
  const int64_t ctx = args.GetInt("-c", c.max_position_embeddings > 0 ? c.max_position_embeddings : 4096);
  if (ctx <= 0) throw std::invalid_argument("-c must be positive");
  KvCacheOptions kv;
  kv.max_chunk = int32_t(args.GetInt("--batch", 512));
  if (kv.max_chunk <= 0) throw std::invalid_argument("--batch must be positive");
  kv.type = KvTypeFromString(args.Get("--kv", "f32"));

  std::printf("model       %s (%s)\n", dir.c_str(), c.architecture.c_str());
  std::printf("shape       %d layers, hidden %lld, intermediate %lld, %d heads / %d KV heads of %d, vocab %lld\n",
              c.n_layers, (long long)c.hidden_size, (long long)c.intermediate_size, c.n_heads, c.n_kv_heads, c.head_dim,
              (long long)c.vocab_size);
  std::printf("positions   max %lld, %s\n", (long long)c.max_position_embeddings, c.rope.ToString().c_str());
  int64_t params = 0;
  size_t n_tensors = 0;
  std::string held;   // GGUF: how its matrices' types are held
  std::string parts;  // GGUF cut by gguf-split: its files
  if (IsGgufFile(dir)) {
    const GgufFile file(dir);
    for (const GgufTensor& t : file.tensors()) params += t.numel();
    n_tensors = file.tensors().size();
    held = HeldTypes(file);
    if (file.paths().size() > 1)
      parts = std::to_string(file.paths().size()) + " parts of a split model, " + file.paths().front() + " .. " +
              file.paths().back();
  } else {
    const TensorStore store = TensorStore::OpenDirectory(dir);
    for (const std::string& name : store.Names()) params += store.Info(name).numel();
    n_tensors = store.Names().size();
  }
  std::printf("weights     %zu tensors, %lld parameters\n", n_tensors, (long long)params);
  if (!held.empty()) std::printf("matrices    %s\n", held.c_str());
  if (!parts.empty()) std::printf("files       %s\n", parts.c_str());
  std::printf("plan        %s\n\n", plan.spec.c_str());

  const KvShape shape{c.n_kv_heads, c.head_dim, LinearPhiDim(c)};
  int span_width = 22;  // the widest span text, for the column
  for (const LayerPlan& l : plan.layers) span_width = std::max(span_width, int(l.SpanText().size()));
  std::printf("layer  kind      %-*s  positions                 KV @ %lld tokens\n", span_width, "span",
              (long long)ctx);
  size_t total = 0, total_full = 0;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const LayerPlan& l = plan.layers[i];
    const size_t bytes = PlanLayerKvBytesAt(l, shape, kv, ctx);
    total += bytes;
    total_full += LayerKvBytesAt(Span{}, shape, kv, ctx);
    std::printf("%5zu  %-8s  %-*s  %-24s  %s\n", i, LayerKindName(l.kind), span_width, l.SpanText().c_str(),
                (l.rope.ToString() + (l.position_mode == PositionMode::kCache ? ", cache pos" : "")).c_str(),
                Bytes(double(bytes)).c_str());
  }
  std::printf("\nKV cache at %lld tokens (%s): %s; full attention on every layer: %s (%.1f%%)\n", (long long)ctx,
              KvTypeName(kv.type), Bytes(double(total)).c_str(), Bytes(double(total_full)).c_str(),
              100.0 * double(total) / double(total_full));
  if (plan.HasRoutedLayers())
    std::printf(
        "routed layers keep every token's keys (any later token may route to full attention):\n"
        "their KV memory is that of full attention; routing saves compute, not memory\n");
  if (plan.HasPerHeadLayers())
    std::printf("per-head layers keep every key of their full KV heads only, and a ring for the others\n");
  if (plan.HasLinearLayers())
    std::printf(
        "linear layers keep no keys: a state of KV heads x P x (head dim + 1) floats (P = %d), the same\n"
        "at any length\n",
        shape.linear_phi_dim);
  return 0;
}

}  // namespace swan::cli
