// `swan heads`: retrieval heads of a model trained on recall in token ids,
// or of a text model on passkey items (eval/retrieval_heads.h): per layer
// and head, how much of a query's attention falls on the fact its answer
// needs; and the KV heads a per-head plan keeps full.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/option_groups.h"
#include "cli/options.h"
#include "eval/passkey_source.h"
#include "eval/recall_suite.h"
#include "eval/retrieval_heads.h"

namespace swan::cli {
namespace {

// The command's options, declared once: its parsing and --help come from them.
OptionSet Options() {
  OptionSet options(
      "usage: swan heads -m DIR [--attn SPEC] [--samples N] [--seed S] [--far D] [--json] [--svg "
      "OUT.svg]\n"
      "                  [--select SHARE --out HEADS.json] [-c LENGTH] [-t N]\n");
  options
      .Add(ModelOptionFor(
          "a model trained on recall in token ids (DIR/recall.json holds its task), or a text model (Llama "
          "family, Hugging Face directory): then the items are passkeys in noise at spread depths, LENGTH tokens "
          "long (-c)"))
      .Add(PlanOption())
      .Add({{"--samples"}, "N", "held-out sequences of the task (default 16)"})
      .Add({{"--seed"}, "S", "their seed (default 1; training used others)"})
      .Add({{"--far"},
            "D",
            "also average over the answers whose key is D or more tokens back (default: a quarter of the task's "
            "context)"})
      .Add(JsonOption("every head's mass"))
      .Add({{"--svg"}, "FILE", "a layers x heads heatmap of the mass on the answer's value position"})
      .Add({{"--select"},
            "SHARE",
            "choose a per-head plan's full KV heads: each KV head scores the largest mass on the value among its "
            "query heads (far answers, when any), and the best SHARE of the model's KV heads (0 < SHARE <= 1, "
            "rounded up) stay full"})
      .Add({{"--out"},
            "FILE",
            "where --select writes them; run the model with --attn 'full,window:W,sinks:S,heads:FILE' (the others "
            "keep a window)"})
      .Add({{"-c"}, "LENGTH", "text models: tokens per passkey item (default 1024 or the model's context)"})
      .Add(ThreadsOption())
      .Text(
          "For each answer, every head's attention weight (float64, from the query that predicts\n"
          "it) on the value position after the answer's key, where an induction head looks, and on\n"
          "the key itself, averaged over the answers.\n");
  return options;
}

// Retrieval heads of a text model: passkey items at depths spread over
// [0.1, 0.9], in noise, of -c tokens.
RetrievalHeads PasskeyHeads(TrainModel& model, const std::string& dir, const Args& args, int64_t samples,
                            uint64_t seed) {
  const PasskeySource source(dir);
  const int64_t length = args.GetInt("-c", source.default_length());
  std::vector<TaskItem> items;  // [samples]
  for (int64_t i = 0; i < samples; ++i) {
    const double depth = samples > 1 ? 0.1 + 0.8 * double(i) / double(samples - 1) : 0.5;
    items.push_back(source.Make(length, depth, seed + uint64_t(i)));
  }
  return TraceNeedleHeads(model, items, args.GetInt("--far", length / 4));
}

}  // namespace

int RunHeads(const std::vector<std::string>& words) {
  const OptionSet flags = Options();
  const Args args = flags.Parse(words);
  if (words.empty() || HelpAsked(args)) {
    std::printf("%s", flags.Help().c_str());
    return words.empty() ? 2 : 0;
  }
  if (args.Has("--select") != args.Has("--out"))
    throw std::invalid_argument("--select SHARE and --out FILE go together");
  const double share = args.Has("--select") ? args.GetDouble("--select", 0) : 0;
  if (args.Has("--select") && !(share > 0 && share <= 1))
    throw std::invalid_argument("--select takes a share of the KV heads in (0, 1], got " + args.Get("--select", ""));
  ApplyThreadsOption(args);
  if (!args.Has("-m")) throw std::invalid_argument("-m DIR is required\n" + flags.Help());
  const std::string dir = args.Get("-m", "");
  const int64_t samples = args.GetInt("--samples", 16);
  if (samples <= 0) throw std::invalid_argument("--samples must be positive");
  const uint64_t seed = 0x5eed + uint64_t(args.GetInt("--seed", 1));
  auto model = LoadAnalysisModel(dir, args.Get("--attn", ""));
  RetrievalHeads heads;
  if (HasRecallTask(dir)) {
    const RecallOptions task = LoadRecallTask(dir);
    heads = TraceRetrievalHeads(*model, task, samples, seed, args.GetInt("--far", task.context / 4));
  } else {
    heads = PasskeyHeads(*model, dir, args, samples, seed);
  }
  if (args.Has("--svg")) {
    std::ofstream out(args.Get("--svg", ""));
    out << RetrievalHeadsSvg(heads, "retrieval heads: " + dir);
    if (!out) throw std::runtime_error("cannot write " + args.Get("--svg", ""));
  }
  if (args.Has("--select")) {
    const HeadSelection selection = SelectFullHeads(heads, share);
    const std::string path = args.Get("--out", "");
    std::ofstream out(path);
    out << HeadSelectionJson(selection, dir).dump(2) << "\n";
    if (!out) throw std::runtime_error("cannot write " + path);
    std::printf("kept %lld of %d KV heads full (share %.3g):", (long long)selection.n_full(),
                heads.layers * heads.kv_heads, share);
    for (size_t l = 0; l < selection.full_heads.size(); ++l)
      for (const int32_t h : selection.full_heads[l])
        std::printf(" layer %zu KV head %d (%.3f)", l, h, selection.scores[l][size_t(h)]);
    std::printf("\nwrote %s; use it with --attn 'full,window:W,heads:%s'\n", path.c_str(), path.c_str());
  }
  if (args.Has("--json")) {
    std::printf("%s\n", RetrievalHeadsJson(heads).dump(2).c_str());
    return 0;
  }
  std::printf("model %s, %lld held-out sequences\n%s", dir.c_str(), (long long)samples,
              RetrievalHeadsTable(heads).c_str());
  return 0;
}

}  // namespace swan::cli
