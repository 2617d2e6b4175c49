// `swan tokenizer train`: trains a byte-level BPE tokenizer on text files
// and writes a Hugging Face tokenizer.json.
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/input_files.h"
#include "cli/options.h"
#include "tokenizer/bpe_trainer.h"

namespace swan::cli {
namespace {

// The command's options, declared once: its parsing and --help come from them.
OptionSet Options() {
  OptionSet options(
      "usage: swan tokenizer train --vocab N --out DIR [--ext .py] [--special TOKENS]\n"
      "                            [--min-frequency F] [--pattern REGEX] FILES_OR_DIRS...\n");
  options.Add({{"--vocab"}, "N", "vocabulary size: 256 bytes + merges + special tokens (default 4096)"})
      .Add({{"--out"}, "DIR", "where tokenizer.json and tokenizer_config.json are written"})
      .Add({{"--ext"}, "SUFFIX", "in directories, read only files whose names end with SUFFIX"})
      .Add({{"--special"}, "LIST", "comma-separated special tokens (default <|endoftext|>, the EOS)"})
      .Add({{"--min-frequency"}, "F", "stop merging when no pair occurs F times (default 2)"})
      .Add({{"--pattern"}, "REGEX", "split regex (default: Llama 3's)"})
      .Text("Progress goes to stderr.\n");
  return options;
}

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == ',') {
      if (i > start) out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

int Train(const std::vector<std::string>& words) {
  const OptionSet flags = Options();
  const Args args = flags.Parse(words, /*positional_allowed=*/true);
  if (HelpAsked(args)) {
    std::printf("%s", flags.Help().c_str());
    return 0;
  }
  if (!args.Has("--out")) throw std::invalid_argument("--out DIR is required\n" + flags.Help());
  if (args.positional().empty()) throw std::invalid_argument("no input files\n" + flags.Help());
  BpeTrainerOptions options;
  options.vocab_size = static_cast<int>(args.GetInt("--vocab", 4096));
  options.min_frequency = args.GetInt("--min-frequency", 2);
  options.split_pattern = args.Get("--pattern", kDefaultSplitPattern);
  if (args.Has("--special")) options.special_tokens = SplitCommas(args.Get("--special", ""));
  const auto start = std::chrono::steady_clock::now();
  options.progress = [&](const std::string& line) {
    std::fprintf(stderr, "\r%s  [%.1f s]   ", line.c_str(), Since(start));
    std::fflush(stderr);
  };

  const std::vector<std::string> files = ExpandInputFiles(args.positional(), args.Get("--ext", ""));
  if (files.empty()) throw std::invalid_argument("no input files matched");
  BpeTrainer trainer(options);
  for (size_t i = 0; i < files.size(); ++i) {
    trainer.AddText(ReadWholeFile(files[i]));
    if (i % 64 == 0 || i + 1 == files.size())
      options.progress("counting: " + std::to_string(i + 1) + "/" + std::to_string(files.size()) + " files, " +
                       std::to_string(trainer.bytes_seen() >> 20) + " MiB, " +
                       std::to_string(trainer.distinct_pieces()) + " distinct pieces");
  }
  std::fprintf(stderr, "\n");
  const double counted = Since(start);
  const TrainedBpe bpe = trainer.Train();
  std::fprintf(stderr, "\n");
  WriteTokenizerDir(bpe, options, args.Get("--out", ""));
  std::printf(
      "trained %zu merges (vocabulary %zu) on %zu files, %.1f MB in %.1f s (counting %.1f s)"
      "; wrote %s/tokenizer.json\n",
      bpe.merges.size(), bpe.tokens.size() + bpe.special_tokens.size(), files.size(),
      static_cast<double>(trainer.bytes_seen()) / 1e6, Since(start), counted, args.Get("--out", "").c_str());
  return 0;
}

}  // namespace

int RunTokenizer(const std::vector<std::string>& words) {
  if (words.empty() || words[0] == "--help" || words[0] == "-h") {
    std::printf("usage: swan tokenizer train ...   (see `swan tokenizer train --help`)\n");
    return words.empty() ? 2 : 0;
  }
  if (words[0] == "train") return Train(std::vector<std::string>(words.begin() + 1, words.end()));
  throw std::invalid_argument("unknown subcommand '" + words[0] + "' (expected: train)");
}

}  // namespace swan::cli
