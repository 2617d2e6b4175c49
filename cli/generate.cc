// `swan generate`: text continuation from a model directory under any
// attention plan.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/input_files.h"
#include "cli/option_groups.h"
#include "cli/options.h"
#include "eval/recall_suite.h"
#include "model/model.h"
#include "model/sampler.h"
#include "model/gguf_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "util/memory.h"
#include "util/threads.h"

namespace swan::cli {
namespace {

// The command's options, declared once: its parsing and --help come from them.
OptionSet Options() {
  OptionSet options(
      "usage: swan generate -m DIR (-p TEXT | -f FILE | --ids 1,2,3) [-n N] [--attn SPEC]\n"
      "                     [--temp T] [--top-k K] [--top-p P] [--min-p M] [--seed S]\n"
      "                     [--batch B] [--kv TYPE] [--weights TYPE] [-c|--ctx C]\n"
      "                     [--ignore-eos] [--device DEV] [-t N]\n");
  options.Add(ModelOption(" (its tokenizer read from its metadata)"))
      .Add({{"-p"}, "TEXT", "prompt, encoded with the model's tokenizer (BOS added as the tokenizer says)"})
      .Add({{"-f"}, "FILE", "prompt read from a UTF-8 file (as -p)"})
      .Add({{"--ids"},
            "LIST",
            "prompt as token ids instead of text; the output is ids too (a recall model's ids by name, e.g. "
            "<bos>,f0,f1,f2,k3,v5,k3)"})
      .Add({{"-n"}, "N", "new tokens to generate (default 64); stops early at EOS"})
      .Add(PlanOption(
          "full, swa:256, swa:256,sinks:4, hybrid:3:1,window:512, ...,layer0:full, ...,nope:full, "
          "...,layer1:heads:0+2 (per-head), ...,heads:FILE.json, ...,staggered (block windows), linear, linear:W (a "
          "linearized model's; "
          "docs/plans.md)"))
      .Add({{"--temp"}, "T", "temperature, 0 = greedy (default: generation_config.json when it samples, else 0)"})
      .Add(
          {{"--top-k"}, "K", "sampling filter: keep the K most likely tokens (default off, or generation_config.json)"})
      .Add({{"--top-p"},
            "P",
            "sampling filter: keep the smallest set of tokens with probability >= P (default off, or "
            "generation_config.json)"})
      .Add({{"--min-p"},
            "M",
            "sampling filter: drop the tokens below M times the top probability (default off, or "
            "generation_config.json)"})
      .Add({{"--seed"}, "S", "random seed (default 0)"})
      .Add(PrefillChunkOption(512))
      .Add(KvOption("f32", /*decodes=*/true))
      .Add(DeviceOption())
      .Add(WeightsOption())
      .Add(ContextOption(", else 1048576; more is allowed, with a warning",
                         ". A longer prompt is refused; generation stops when it is full. Memory is taken only as "
                         "tokens arrive; window layers hold a ring"))
      .Add({{"--ignore-eos"}, "", "keep generating after an end-of-sequence token"})
      .Add(ThreadsOption())
      .Text("Statistics go to stderr.\n");
  return options;
}

// --ids: numbers, or for a recall model (DIR/recall.json) also the names
// of its ids ("<bos>,f0,f1,f2,k3,v5,k3").
std::vector<int32_t> ParseIds(const Args& args, const RecallOptions* recall, int64_t vocab) {
  std::vector<int32_t> ids;
  for (const std::string& item : SplitList(args.Get("--ids", ""), ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (!item.empty() && *end == '\0') {
      if (v < 0 || v > INT32_MAX) throw std::invalid_argument("--ids: bad token id " + item);
      ids.push_back(int32_t(v));
      continue;
    }
    int32_t named = -1;
    for (int32_t id = 0; recall && id < vocab && named < 0; ++id)
      if (RecallTokenName(*recall, id) == item) named = id;
    if (named < 0)
      throw std::invalid_argument("--ids: '" + item + "' is neither a token id nor " +
                                  (recall ? "a name of this recall model's ids" : "a number"));
    ids.push_back(named);
  }
  if (ids.empty()) throw std::invalid_argument("--ids needs at least one id");
  return ids;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

int RunGenerate(const std::vector<std::string>& words) {
  const OptionSet flags = Options();
  const Args args = flags.Parse(words);
  if (HelpAsked(args)) {
    std::printf("%s", flags.Help().c_str());
    return 0;
  }
  ApplyThreadsOption(args);
  if (!args.Has("-m")) throw std::invalid_argument("-m DIR is required\n" + flags.Help());
  if (int(args.Has("-p")) + int(args.Has("-f")) + int(args.Has("--ids")) != 1)
    throw std::invalid_argument("give exactly one of -p TEXT, -f FILE and --ids LIST\n" + flags.Help());
  const std::string dir = args.Get("-m", "");
  const int64_t n_new = args.GetInt("-n", 64);
  if (n_new < 0) throw std::invalid_argument("-n must be >= 0");

  const auto t_load = std::chrono::steady_clock::now();
  std::unique_ptr<LanguageModel> model = LoadModel(dir, LoadOptionsFrom(args));
  const ModelConfig& config = model->config();
  const bool text_mode = args.Has("-p") || args.Has("-f");
  // A recall model's ids print by name (k17, v203).
  const std::optional<RecallOptions> recall =
      HasRecallTask(dir) ? std::optional<RecallOptions>(LoadRecallTask(dir)) : std::nullopt;
  auto id_text = [&](int32_t id) { return recall ? RecallTokenName(*recall, id) : std::to_string(id); };
  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<int32_t> prompt;
  if (text_mode) {
    tokenizer = std::make_unique<Tokenizer>(LoadModelTokenizer(dir));
    prompt = tokenizer->Encode(args.Has("-f") ? ReadWholeFile(args.Get("-f", "")) : args.Get("-p", ""));
    if (prompt.empty()) throw std::invalid_argument("the prompt encodes to no tokens");
  } else {
    prompt = ParseIds(args, recall ? &*recall : nullptr, config.vocab_size);
  }
  for (int32_t id : prompt)
    if (id >= config.vocab_size)
      throw std::invalid_argument("prompt token " + std::to_string(id) + " is outside the vocabulary (" +
                                  std::to_string(config.vocab_size) + ")");

  SamplerOptions sampling;
  const GenerationDefaults& gen = config.generation;
  sampling.temperature = args.GetDouble("--temp", gen.do_sample ? gen.temperature : 0.0);
  sampling.top_k = int32_t(args.GetInt("--top-k", gen.do_sample ? gen.top_k : 0));
  sampling.top_p = args.GetDouble("--top-p", gen.do_sample ? gen.top_p : 1.0);
  sampling.min_p = args.GetDouble("--min-p", gen.do_sample ? gen.min_p : 0.0);
  sampling.seed = uint64_t(args.GetInt("--seed", 0));
  Sampler sampler(sampling);

  KvCacheOptions kv;
  kv.max_chunk = int32_t(args.GetInt("--batch", 512));
  if (kv.max_chunk <= 0) throw std::invalid_argument("--batch must be positive");
  kv.type = KvTypeFromString(args.Get("--kv", "f32"));
  RequireDeviceKv(args, kv.type);
  // The context: the model's trained length unless --ctx / -c says more
  // (allowed, with a warning, like llama.cpp) or less.
  const int64_t trained = config.max_position_embeddings;
  const bool ctx_given = args.Has("--ctx") || args.Has("-c");
  const int64_t ctx = args.GetInt(ContextFlag(args), trained > 0 ? trained : int64_t(1) << 20);
  if (ctx <= 0) throw std::invalid_argument("--ctx must be positive");
  if (ctx_given && trained > 0 && ctx > trained)
    std::fprintf(stderr, "warning: a context of %lld positions is past the %lld the model was trained on\n",
                 (long long)ctx, (long long)trained);
  if (int64_t(prompt.size()) > ctx)
    throw std::invalid_argument("the prompt is " + std::to_string(prompt.size()) +
                                " tokens, longer than the context of " + std::to_string(ctx) + " positions (--ctx)");
  kv.max_context = ctx;
  const AttentionPlan plan = model->ResolvePlan(args.Get("--attn", ""));
  auto session = model->NewSession(plan, kv);
  const double load_s = Seconds(t_load);

  const int64_t vocab = config.vocab_size;
  std::vector<float> logits(static_cast<size_t>(vocab));  // [vocab] of the last token
  std::vector<int32_t> pos(prompt.size());
  std::iota(pos.begin(), pos.end(), 0);
  ThreadsForNextStep();
  const auto t_prefill = std::chrono::steady_clock::now();
  model->Forward(logits.data(), Batch{prompt.data(), pos.data(), int64_t(prompt.size()), false}, *session);
  const double prefill_s = Seconds(t_prefill);

  // Text is printed as the difference between decodes of the whole sequence,
  // so pieces that depend on their neighbours (leading spaces, UTF-8 split
  // over byte tokens) come out right.
  std::vector<int32_t> all = prompt;
  std::string printed;
  if (text_mode) {
    printed = tokenizer->DecodeRaw(all, /*skip_special=*/true);
    std::fputs(printed.c_str(), stdout);
  } else {
    for (size_t i = 0; i < prompt.size(); ++i) std::printf("%s%s", i ? "," : "", id_text(prompt[i]).c_str());
    std::printf(" |");
  }
  std::fflush(stdout);

  const auto t_decode = std::chrono::steady_clock::now();
  int64_t generated = 0;
  const bool ignore_eos = args.Has("--ignore-eos");
  for (int64_t i = 0; i < n_new; ++i) {
    const int32_t next = sampler.Sample(logits.data(), vocab);
    all.push_back(next);
    ++generated;
    if (text_mode) {
      const std::string text = tokenizer->DecodeRaw(all, /*skip_special=*/true);
      if (text.size() > printed.size() && text.compare(0, printed.size(), printed) == 0) {
        std::fputs(text.c_str() + printed.size(), stdout);
        printed = text;
      }
    } else {
      std::printf(" %s", id_text(next).c_str());
    }
    std::fflush(stdout);
    const bool eos =
        std::find(config.eos_token_ids.begin(), config.eos_token_ids.end(), next) != config.eos_token_ids.end();
    if ((eos && !ignore_eos) || i + 1 == n_new) break;
    if (int64_t(all.size()) >= ctx) {
      std::fprintf(stderr, "\n[stopped: the context of %lld positions is full (--ctx)]", (long long)ctx);
      break;
    }
    const int32_t p = int32_t(all.size()) - 1;
    ThreadsForNextStep();  // the cores of -t that other programs leave idle
    model->Forward(logits.data(), Batch{&next, &p, 1, false}, *session);
  }
  const double decode_s = Seconds(t_decode);
  std::printf("\n");
  std::fflush(stdout);  // before the statistics on stderr
  std::fprintf(stderr,
               "[plan %s] load %.2f s | prefill %zu tokens %.3f s (%.1f tok/s) | decode %lld tokens "
               "%.3f s (%.1f tok/s) | KV cache %.1f KiB | peak RSS %.1f MiB\n",
               plan.spec.c_str(), load_s, prompt.size(), prefill_s, double(prompt.size()) / prefill_s,
               (long long)generated, decode_s, generated > 0 ? double(generated) / decode_s : 0.0,
               double(model->CacheBytes(*session)) / 1024.0, double(PeakResidentBytes()) / (1 << 20));
  return 0;
}

}  // namespace swan::cli
