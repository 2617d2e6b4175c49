// `swan perplexity`: perplexity of a model over a long text, with the loss
// by position inside the evaluation window (eval/perplexity.h).
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/input_files.h"
#include "cli/option_groups.h"
#include "cli/options.h"
#include "eval/perplexity.h"
#include "model/model.h"
#include "model/gguf_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace swan::cli {
namespace {

// The command's options, declared once: its parsing and --help come from them.
OptionSet Options() {
  OptionSet options(
      "usage: swan perplexity -m DIR -f FILE [-c CTX] [--attn SPEC] [--batch B]\n"
      "                       [--bucket B] [--limit W] [--kv TYPE] [--weights TYPE] [--no-bos]\n"
      "                       [--json] [--quiet] [--device DEV] [-t N]\n");
  options.Add(ModelOption(" with a tokenizer in its metadata"))
      .Add({{"-f"}, "FILE", "UTF-8 text, encoded with the model's tokenizer (no special tokens added)"})
      .Add({{"-c"}, "CTX", "positions per evaluation window (default: max_position_embeddings)"})
      .Add(PlanOption("full, swa:64, swa:64,sinks:4, hybrid:3:1,window:64"))
      .Add(PrefillChunkOption(512))
      .Add({{"--bucket"}, "B", "positions per bucket of the loss-by-position table (default CTX/16)"})
      .Add({{"--limit"}, "W", "score only the first W windows (a quick run)"})
      .Add(KvOption())
      .Add(WeightsOption())
      .Add(DeviceOption())
      .Add({{"--no-bos"}, "", "do not start windows with the BOS token"})
      .Add(JsonOption("the figures"))
      .Add(QuietOption())
      .Add(ThreadsOption())
      .Text(
          "Method: the text's tokens are cut into consecutive, non-overlapping windows of CTX\n"
          "positions, each run from an empty KV cache. A window is BOS followed by the next\n"
          "CTX-1 text tokens, and every text token is scored exactly once, predicted from the\n"
          "tokens before it in its window (with --no-bos or a tokenizer without BOS, a window\n"
          "starts with the last token of the previous one, and the first text token is not\n"
          "scored). A token predicted at window position p counts in the bucket of p: the first\n"
          "buckets pay for the short context at the start of every window, and under a window\n"
          "plan the buckets past the window show what it loses. Bits per byte divide the total\n"
          "loss in bits by the UTF-8 bytes of the scored text, so models with different\n"
          "tokenizers compare.\n");
  return options;
}

}  // namespace

int RunPerplexity(const std::vector<std::string>& words) {
  const OptionSet flags = Options();
  const Args args = flags.Parse(words);
  if (HelpAsked(args)) {
    std::printf("%s", flags.Help().c_str());
    return 0;
  }
  ApplyThreadsOption(args);
  if (!args.Has("-m") || !args.Has("-f"))
    throw std::invalid_argument("-m DIR and -f FILE are required\n" + flags.Help());
  const std::string dir = args.Get("-m", "");
  const bool json = args.Has("--json");
  const bool quiet = args.Has("--quiet");

  std::unique_ptr<LanguageModel> model = LoadModel(dir, LoadOptionsFrom(args));
  const Tokenizer tokenizer = LoadModelTokenizer(dir);
  const std::string text = ReadWholeFile(args.Get("-f", ""));
  EncodeOptions encode;
  encode.add_special_tokens = false;
  encode.parse_special = false;
  const std::vector<int32_t> tokens = tokenizer.Encode(text, encode);

  PerplexityOptions options;
  options.context = int32_t(args.GetInt("-c", model->config().max_position_embeddings));
  if (options.context < 2) throw std::invalid_argument("-c must be at least 2");
  options.bucket_width = int32_t(args.GetPositiveInt("--bucket", 0));
  if (options.bucket_width < 0) throw std::invalid_argument("--bucket must be positive");
  options.max_windows = args.GetPositiveInt("--limit", 0);
  options.kv.max_chunk = int32_t(args.GetInt("--batch", 512));
  if (options.kv.max_chunk <= 0) throw std::invalid_argument("--batch must be positive");
  options.kv.type = KvTypeFromString(args.Get("--kv", "f32"));
  RequireDeviceKv(args, options.kv.type);
  if (!args.Has("--no-bos"))
    options.bos_id = tokenizer.bos_id() >= 0 ? tokenizer.bos_id() : model->config().bos_token_id;
  if (!quiet)
    options.progress = [](const PerplexityProgress& p) {
      std::fprintf(stderr, "\r[perplexity] window %lld/%lld | %lld tokens | ppl %.3f | %.0f tok/s   ",
                   (long long)p.windows_done, (long long)p.windows_total, (long long)p.tokens_scored,
                   std::exp(p.nll_sum / double(std::max<int64_t>(1, p.tokens_scored))),
                   double(p.tokens_scored) / std::max(1e-9, p.seconds));
      std::fflush(stderr);
    };
  const AttentionPlan plan = model->ResolvePlan(args.Get("--attn", ""));
  const PerplexityResult r = EvaluatePerplexity(*model, plan, tokens, options);
  if (!quiet) std::fprintf(stderr, "\n");

  const std::span<const int32_t> scored(tokens.data() + r.text_begin, size_t(r.text_end - r.text_begin));
  const size_t bytes = tokenizer.DecodeRaw(scored, /*skip_special=*/false).size();
  const double bits_per_byte = bytes ? r.nll_sum / std::log(2.0) / double(bytes) : 0.0;

  if (json) {
    nlohmann::json j;
    j["model"] = dir;
    j["plan"] = plan.spec;
    j["context"] = r.context;
    j["windows"] = r.windows;
    j["tokens_scored"] = r.tokens_scored;
    j["bytes_scored"] = bytes;
    j["mean_nll"] = r.MeanNll();
    j["perplexity"] = r.Perplexity();
    j["bits_per_byte"] = bits_per_byte;
    j["seconds"] = r.seconds;
    j["buckets"] = nlohmann::json::array();
    for (const PositionBucket& b : r.buckets)
      j["buckets"].push_back({{"begin", b.begin},
                              {"end", b.end},
                              {"tokens", b.count},
                              {"mean_nll", b.MeanNll()},
                              {"perplexity", b.Perplexity()}});
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("model %s, plan %s\n", dir.c_str(), plan.spec.empty() ? "(model)" : plan.spec.c_str());
  std::printf("%lld windows of %d positions, %lld tokens scored (%zu bytes), %.1f s\n", (long long)r.windows, r.context,
              (long long)r.tokens_scored, bytes, r.seconds);
  std::printf("perplexity %.4f   mean loss %.4f nats/token   %.4f bits/byte\n\n", r.Perplexity(), r.MeanNll(),
              bits_per_byte);
  std::printf("%-13s %8s %10s %10s\n", "positions", "tokens", "loss", "ppl");
  for (const PositionBucket& b : r.buckets) {
    if (b.count == 0) continue;
    char range[32];
    std::snprintf(range, sizeof(range), "%d-%d", b.begin, b.end - 1);
    std::printf("%-13s %8lld %10.4f %10.3f\n", range, (long long)b.count, b.MeanNll(), b.Perplexity());
  }
  return 0;
}

}  // namespace swan::cli
