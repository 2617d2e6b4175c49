// `swan train recall`: recall tasks in token-id space (train/recall_data.h)
// written as token files with labels (tokenizer/token_labels.h), ready for
// `swan train --data DIR/train.bin` (its held-out twin train.val.bin is
// found by name): training and held-out sequences from disjoint seeds.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/options.h"
#include "train/recall_data.h"

namespace swan::cli {
namespace {

// The command's options, declared once: its parsing and --help come from them.
OptionSet Options() {
  OptionSet options("usage: swan train recall --out DIR [options]\n");
  options.Add({{"--out"}, "DIR", "the directory written (see below)"})
      .Add({{"--task"},
            "T",
            "mqar (key-value pairs, queried later; default), needle (a marker and value tokens, asked for at the "
            "end) or copy (a random span repeated: dense induction, a warm-up)"})
      .Add({{"--context"}, "T", "tokens per sequence (default 512)"})
      .Add({{"--pairs"}, "P", "mqar: distinct key-value pairs per sequence (default 32)"})
      .Add({{"--queries"}, "Q", "mqar: pairs asked again, each answer weighted 1 (default = pairs)"})
      .Add({{"--needle-tokens"}, "M", "needle: value tokens (default 3)"})
      .Add({{"--bins"}, "SPEC", "key->query distance mix, LO-HI[:SHARE],... (default 2-T, uniform)"})
      .Add({{"--pairs-first"},
            "",
            "mqar: all pairs right after the prefix, then the queries at random places (Zoology's layout; "
            "distances follow, --bins unused)"})
      .Add({{"--keys"},
            "K",
            "key tokens (default 128); the vocabulary is 4 markers + K + V + F ids (512 with the defaults)"})
      .Add({{"--values"}, "V", "value tokens (default 128)"})
      .Add({{"--filler"}, "F", "filler tokens (default 252)"})
      .Add({{"--filler-weight"}, "W", "loss weight of the other tokens (default 0: answers only)"})
      .Add({{"--copy-share"}, "F", "this share of the sequences are copy sequences instead (default 0)"})
      .Add({{"--sequences"}, "N", "training sequences (default 20000)"})
      .Add({{"--val-sequences"}, "N", "held-out sequences (default 256)"})
      .Add({{"--seed"}, "S", "training seed; held-out sequences use another (default 1)"})
      .Text(
          "writes DIR/train.bin and DIR/train.val.bin with their .labels, and DIR/recall.json\n"
          "(the options, the seeds, the chance level of a guess)\n");
  return options;
}

}  // namespace

int RunTrainRecall(const std::vector<std::string>& words) {
  const OptionSet flags = Options();
  const Args args = flags.Parse(words);
  if (words.empty() || HelpAsked(args)) {
    std::printf("%s", flags.Help().c_str());
    return words.empty() ? 2 : 0;
  }
  if (!args.Has("--out")) throw std::invalid_argument("--out DIR is required\n" + flags.Help());
  RecallOptions o;
  o.task = ParseRecallTask(args.Get("--task", "mqar"));
  o.context = int32_t(args.GetInt("--context", 512));
  o.pairs = int32_t(args.GetInt("--pairs", 32));
  o.queries = int32_t(args.GetInt("--queries", o.pairs));
  o.needle_tokens = int32_t(args.GetInt("--needle-tokens", 3));
  o.keys = int32_t(args.GetInt("--keys", 128));
  o.values = int32_t(args.GetInt("--values", 128));
  o.filler = int32_t(args.GetInt("--filler", 252));
  o.filler_weight = float(args.GetDouble("--filler-weight", 0.0));
  o.copy_share = args.GetDouble("--copy-share", 0.0);
  o.seed = uint64_t(args.GetInt("--seed", 1));
  o.pairs_first = args.Has("--pairs-first");
  o.bins = ParseDistanceBins(args.Get("--bins", "2-" + std::to_string(o.context)));
  ValidateRecallOptions(o);
  const int64_t sequences = args.GetInt("--sequences", 20000);
  const int64_t val_sequences = args.GetInt("--val-sequences", 256);
  if (sequences < 1 || val_sequences < 1)
    throw std::invalid_argument("--sequences and --val-sequences must be positive");

  const std::string dir = args.Get("--out", "");
  std::filesystem::create_directories(dir);
  const std::string train = (std::filesystem::path(dir) / "train.bin").string();
  const std::string val = (std::filesystem::path(dir) / "train.val.bin").string();
  WriteRecallFiles(train, o, sequences);
  RecallOptions held_out = o;
  held_out.seed = o.seed + 1000000007ull;  // a seed of its own: no training sequence reappears
  held_out.copy_share = 0;                 // evaluation is the task itself
  WriteRecallFiles(val, held_out, val_sequences);

  const double chance = std::pow(1.0 / o.values, o.task == RecallTask::kNeedle ? o.needle_tokens : 1);
  nlohmann::json j = RecallTaskJson(o);
  j["val_seed"] = held_out.seed;
  j["sequences"] = sequences;
  j["val_sequences"] = val_sequences;
  j["chance"] = chance;
  std::ofstream((std::filesystem::path(dir) / "recall.json").string()) << j.dump(2) << "\n";
  std::printf(
      "wrote %lld training and %lld held-out %s sequences of %d tokens (vocab %d, chance "
      "%.3g) to %s\n",
      (long long)sequences, (long long)val_sequences, j["task"].get<std::string>().c_str(), o.context,
      RecallVocabSize(o), chance, dir.c_str());
  return 0;
}

}  // namespace swan::cli
