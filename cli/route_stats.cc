// `swan route-stats`: where a Switch Attention model (routed layers,
// docs/design.md §4) spends full attention: per-layer full ratios over a text, or
// on passkey items with the key inside or outside the window; as a table,
// JSON and an SVG heatmap (eval/route_stats.h).
#include "eval/recall_routes.h"
#include "eval/recall_suite.h"
#include "eval/route_stats.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/input_files.h"
#include "cli/option_groups.h"
#include "cli/options.h"
#include "eval/haystack.h"
#include "model/model.h"
#include "model/gguf_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace swan::cli {
namespace {

// The command's options, declared once: its parsing and --help come from them.
OptionSet Options() {
  OptionSet options(
      "usage: swan route-stats -m DIR -f FILE [-c CTX] [--limit N] [--json] [--svg OUT.svg] [options]\n"
      "       swan route-stats -m DIR --passkey [-f FILE] [-c LEN] [--depths D,..] [--samples N] [options]\n"
      "       swan route-stats -m DIR --recall [--samples N] [--seed S] [options]\n"
      "Runs a model whose plan routes layers (Switch Attention: a learned router sends each token\n"
      "to full attention or to the window) and reports how often each routed layer chooses full\n"
      "attention.\n");
  options.Add(ModelOptionFor("Hugging Face model directory with routers (trained with --attn routed:W)"))
      .Add(
          {{"-f"}, "FILE", "UTF-8 text; in --passkey mode the haystack's sentences (default: RULER's noise sentences)"})
      .Add({{"-c"},
            "CTX",
            "positions per window of the text, or the prompt length of a passkey item (default "
            "max_position_embeddings)"})
      .Add(PlanOption("routed:64 or full,layer3:routed:64; it must route some layer"))
      .Add({{"--limit"}, "N", "only the first N windows of the text, or N passkey items"})
      .Add({{"--passkey"},
            "",
            "passkey items instead of a text: compares the full ratio of the answer tokens whose key lies "
            "outside a layer's window with those whose key lies inside it, and with the haystack tokens"})
      .Add({{"--recall"},
            "",
            "a model trained on recall in token ids (DIR/recall.json): its task's held-out sequences, each "
            "layer's full share by token class (far and near queries, keys, values, answers, filler)"})
      .Add({{"--depths"}, "LIST", "passkey: key depths 0..1 (default 0,0.25,0.5,0.75,1)"})
      .Add({{"--samples"}, "N", "passkey: items per depth (default 2); recall: sequences (default 32)"})
      .Add({{"--seed"}, "S", "seed of the passkey items and of --route-ratio (default 1)"})
      .Add({{"--route-ratio"},
            "R",
            "ignore the routers and route each token to full attention with probability R (a seeded draw): runs "
            "on a model without routers, and shows the draw rather than anything learned"})
      .Add(PrefillChunkOption(512))
      .Add(KvOption())
      .Add({{"--no-bos"}, "", "do not start windows and items with the BOS token"})
      .Add(JsonOption("per-layer and per-token full ratios", " (and each layer's routes as a string of 0 and 1)"))
      .Add({{"--svg"},
            "OUT.svg",
            "write a heatmap: layers x tokens (binned to at most 1000 columns), colored by the share routed to "
            "full attention"})
      .Add(QuietOption())
      .Add(ThreadsOption())
      .Text(
          "Text mode cuts the text into consecutive windows of CTX positions as `swan perplexity`\n"
          "does (BOS, then CTX-1 text tokens), each run from an empty cache. Passkey mode counts as\n"
          "answer tokens the positions whose next token is part of the key being recalled (the end\n"
          "of the question and the key's digits but the last); the key is outside a layer's window\n"
          "when the window branch (W keys and the sinks) cannot see the key's first digit.\n");
  return options;
}

std::vector<double> ParseDepths(const std::string& list) {
  std::vector<double> depths;
  for (const std::string& item : SplitList(list, ',')) {
    size_t used = 0;
    double d = -1;
    try {
      d = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || d < 0 || d > 1)
      throw std::invalid_argument("--depths: '" + item + "' is not a depth between 0 and 1");
    depths.push_back(d);
  }
  if (depths.empty()) throw std::invalid_argument("--depths: no depth given");
  return depths;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

// --recall: a recall model's own task, routes by token class.
int RecallRouteStatsCommand(const Args& args) {
  if (!args.Has("-m")) throw std::invalid_argument("-m DIR is required");
  const std::string dir = args.Get("-m", "");
  std::unique_ptr<LanguageModel> model = LoadModel(dir);
  const AttentionPlan plan = model->ResolvePlan(args.Get("--attn", ""));
  RouteRunOptions run;
  run.kv.max_chunk = int32_t(args.GetInt("--batch", 512));
  if (run.kv.max_chunk <= 0) throw std::invalid_argument("--batch must be positive");
  run.kv.type = KvTypeFromString(args.Get("--kv", "f32"));
  run.seed = uint64_t(args.GetInt("--seed", 1));
  if (args.Has("--route-ratio")) run.forced_full_ratio = args.GetDouble("--route-ratio", 0);
  const int64_t samples = args.GetInt("--samples", 32);
  if (samples <= 0) throw std::invalid_argument("--samples must be positive");
  const RecallRouteStats stats =
      CollectRecallRoutes(*model, plan, LoadRecallTask(dir), samples, 0x5eed + run.seed, run);
  if (args.Has("--json")) {
    std::printf("%s\n", RecallRouteJson(stats).dump(2).c_str());
    return 0;
  }
  std::printf("model %s, plan %s, %lld held-out recall sequences\n\n%s", dir.c_str(),
              plan.spec.empty() ? "(model)" : plan.spec.c_str(), (long long)stats.sequences,
              RecallRouteTable(stats).c_str());
  return 0;
}

}  // namespace

int RunRouteStats(const std::vector<std::string>& words) {
  const OptionSet flags = Options();
  const Args args = flags.Parse(words);
  if (HelpAsked(args)) {
    std::printf("%s", flags.Help().c_str());
    return 0;
  }
  ApplyThreadsOption(args);
  if (args.Has("--recall")) return RecallRouteStatsCommand(args);
  const bool passkey = args.Has("--passkey");
  if (!args.Has("-m") || (!passkey && !args.Has("-f")))
    throw std::invalid_argument("-m DIR and -f FILE (or --passkey) are required\n" + flags.Help());
  if (!passkey && (args.Has("--depths") || args.Has("--samples")))
    throw std::invalid_argument("--depths and --samples belong to --passkey");
  const std::string dir = args.Get("-m", "");
  const bool json = args.Has("--json"), quiet = args.Has("--quiet");

  std::unique_ptr<LanguageModel> model = LoadModel(dir);
  const Tokenizer tokenizer = LoadModelTokenizer(dir);
  const AttentionPlan plan = model->ResolvePlan(args.Get("--attn", ""));
  const int64_t context = args.GetInt("-c", model->config().max_position_embeddings);
  if (context < 2) throw std::invalid_argument("-c must be at least 2");
  const long long limit = args.GetPositiveInt("--limit", 0);
  if (limit < 0) throw std::invalid_argument("--limit must be positive");
  const int32_t bos = args.Has("--no-bos")      ? -1
                      : tokenizer.bos_id() >= 0 ? tokenizer.bos_id()
                                                : model->config().bos_token_id;

  RouteRunOptions run;
  run.kv.max_chunk = int32_t(args.GetInt("--batch", 512));
  if (run.kv.max_chunk <= 0) throw std::invalid_argument("--batch must be positive");
  run.kv.type = KvTypeFromString(args.Get("--kv", "f32"));
  run.seed = uint64_t(args.GetInt("--seed", 1));
  if (args.Has("--route-ratio")) {
    run.forced_full_ratio = args.GetDouble("--route-ratio", 0);
    if (run.forced_full_ratio < 0 || run.forced_full_ratio > 1)
      throw std::invalid_argument("--route-ratio must be between 0 and 1");
  }
  if (!quiet)
    run.progress = [passkey](int64_t done, int64_t total) {
      std::fprintf(stderr, "\r[route-stats] %s %lld/%lld   ", passkey ? "item" : "window", (long long)done,
                   (long long)total);
      std::fflush(stderr);
    };
  const std::string source = run.forced_full_ratio >= 0
                                 ? "forced draw, full with probability " + args.Get("--route-ratio", "")
                                 : "learned routers";

  nlohmann::json j;
  std::string table, title;
  RouteHeatmap heatmap;
  if (passkey) {
    const PieceEncoder encoder(tokenizer);
    const Filler filler =
        args.Has("-f") ? TextFiller(encoder, ReadWholeFile(args.Get("-f", ""))) : NoiseFiller(encoder);
    PasskeyRouteOptions o;
    o.length = context;
    o.depths = ParseDepths(args.Get("--depths", "0,0.25,0.5,0.75,1"));
    o.samples = int32_t(args.GetInt("--samples", 2));
    if (o.samples < 1) throw std::invalid_argument("--samples must be at least 1");
    o.seed = run.seed;
    o.limit = limit;
    o.run = run;
    const PasskeyRouteStats s = CollectPasskeyRoutes(*model, plan, TaskContext{&encoder, &filler, bos}, o);
    if (!quiet) std::fprintf(stderr, "\n");
    j = PasskeyRouteJson(s);
    char head[400];
    std::snprintf(head, sizeof(head),
                  "model %s, plan %s (%s)\n%lld passkey items of %lld tokens; full-attention share of the "
                  "answer tokens by where their key lies\n\n",
                  dir.c_str(), plan.spec.c_str(), source.c_str(), (long long)s.items, (long long)s.length);
    table = head + PasskeyRouteTable(s);
    char acc[300];
    std::snprintf(acc, sizeof(acc),
                  "\nanswers (exact match, teacher forced): key inside the smallest window (%d): %lld/%lld, "
                  "outside it: %lld/%lld\n",
                  s.smallest_window, (long long)s.correct_inside, (long long)s.answers_inside,
                  (long long)s.correct_outside, (long long)s.answers_outside);
    table += acc;
    heatmap = PasskeyRouteHeatmap(s, "Routes on a passkey item: " + dir + ", " + plan.spec);
  } else {
    const std::vector<int32_t> tokens = [&] {
      EncodeOptions encode;
      encode.add_special_tokens = false;
      encode.parse_special = false;
      return tokenizer.Encode(ReadWholeFile(args.Get("-f", "")), encode);
    }();
    TextRouteOptions o;
    o.context = int32_t(context);
    o.bos_id = bos;
    o.max_windows = limit;
    o.run = run;
    const TextRouteStats s = CollectTextRoutes(*model, plan, tokens, o);
    if (!quiet) std::fprintf(stderr, "\n");
    j = TextRouteJson(s);
    const RouteCount all = s.Overall();
    char head[400];
    std::snprintf(head, sizeof(head), "model %s, plan %s (%s)\n%lld windows of up to %d positions, %lld tokens\n\n",
                  dir.c_str(), plan.spec.c_str(), source.c_str(), (long long)s.windows, s.context,
                  (long long)s.tokens());
    table = head + TextRouteTable(s);
    char tail[200];
    std::snprintf(tail, sizeof(tail), "\naverage: %.1f%% of the routed token-layer pairs use full attention\n",
                  100.0 * all.Ratio());
    table += tail;
    heatmap = TextRouteHeatmap(s, "Routes over the text: " + dir + ", " + plan.spec);
  }
  j["model"] = dir;
  j["plan"] = plan.spec;
  j["routes_from"] = source;
  if (args.Has("--svg")) {
    WriteText(args.Get("--svg", ""), RouteHeatmapSvg(heatmap));
    if (!json) table += "heatmap written to " + args.Get("--svg", "") + "\n";
  }
  if (json)
    std::printf("%s\n", j.dump(2).c_str());
  else
    std::printf("%s", table.c_str());
  return 0;
}

}  // namespace swan::cli
