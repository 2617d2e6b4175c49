// `swan heads`: retrieval heads of a model trained on recall in token ids
// (eval/retrieval_heads.h): per layer and head, how much of a query's
// attention falls on the fact its answer needs.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/threads_option.h"
#include "eval/recall_suite.h"
#include "eval/retrieval_heads.h"

namespace swan::cli {
namespace {

const char kUsage[] =
    "usage: swan heads -m DIR [--attn SPEC] [--samples N] [--seed S] [--far D] [--json] [--svg "
    "OUT.svg]\n"
    "  -m DIR        a model trained on recall in token ids (DIR/recall.json holds its task)\n"
    "  --attn SPEC   attention plan (default: the model's own)\n"
    "  --samples N   held-out sequences of the task (default 16)\n"
    "  --seed S      their seed (default 1; training used others)\n"
    "  --far D       also average over the answers whose key is D or more tokens back\n"
    "                (default: a quarter of the task's context)\n"
    "  --json        print every head's mass as JSON\n"
    "  --svg FILE    a layers x heads heatmap of the mass on the answer's value position\n"
    "For each answer, every head's attention weight (float64, from the query that predicts\n"
    "it) on the value position after the answer's key, where an induction head looks, and on\n"
    "the key itself, averaged over the answers.\n";

}  // namespace

int RunHeads(const std::vector<std::string>& words) {
  const Args args(words, {"--json", "--help", "-h"});
  if (words.empty() || args.Has("--help") || args.Has("-h")) {
    std::printf("%s%s", kUsage, ThreadsHelp().c_str());
    return words.empty() ? 2 : 0;
  }
  args.RejectUnknown(
      {"-m", "--attn", "--samples", "--seed", "--far", "--json", "--svg", "-t", "--threads"});
  ApplyThreadsOption(args);
  if (!args.Has("-m")) throw std::invalid_argument("-m DIR is required\n" + std::string(kUsage));
  const std::string dir = args.Get("-m", "");
  const RecallOptions task = LoadRecallTask(dir);
  const int64_t samples = args.GetInt("--samples", 16);
  if (samples <= 0) throw std::invalid_argument("--samples must be positive");
  const int64_t far = args.GetInt("--far", task.context / 4);
  auto model = LoadAnalysisModel(dir, args.Get("--attn", ""));
  const RetrievalHeads heads =
      TraceRetrievalHeads(*model, task, samples, 0x5eed + uint64_t(args.GetInt("--seed", 1)), far);
  if (args.Has("--svg")) {
    std::ofstream out(args.Get("--svg", ""));
    out << RetrievalHeadsSvg(heads, "retrieval heads: " + dir);
    if (!out) throw std::runtime_error("cannot write " + args.Get("--svg", ""));
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
