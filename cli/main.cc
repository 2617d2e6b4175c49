// swan: the command-line front end. Dispatches `swan COMMAND ...` to the
// commands listed in kCommands.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cli/command.h"

namespace swan::cli {
int RunBench(const std::vector<std::string>& args);
int RunCompare(const std::vector<std::string>& args);
int RunConvert(const std::vector<std::string>& args);
int RunGenerate(const std::vector<std::string>& args);
int RunInspect(const std::vector<std::string>& args);
int RunPerplexity(const std::vector<std::string>& args);
int RunRouteStats(const std::vector<std::string>& args);
int RunServe(const std::vector<std::string>& args);
int RunTokenize(const std::vector<std::string>& args);
int RunTokenizer(const std::vector<std::string>& args);
int RunTrain(const std::vector<std::string>& args);
}  // namespace swan::cli

namespace {

using swan::cli::Command;

const Command kCommands[] = {
    {"bench", "kernel and model speed (`swan bench attention`, `swan bench -m DIR`)",
     swan::cli::RunBench},
    {"compare", "what each attention plan costs and loses: one table, JSON, HTML report",
     swan::cli::RunCompare},
    {"convert", "a model directory with its weights stored as bf16 or f32", swan::cli::RunConvert},
    {"generate", "continue a prompt with a model under an attention plan", swan::cli::RunGenerate},
    {"inspect", "a model's attention plan per layer and its KV cache size", swan::cli::RunInspect},
    {"perplexity", "perplexity of a long text, with the loss by position in the window",
     swan::cli::RunPerplexity},
    {"route-stats", "how often each routed (Switch Attention) layer uses full attention: table, JSON, SVG",
     swan::cli::RunRouteStats},
    {"serve", "OpenAI-compatible HTTP server with batching and prompt caching", swan::cli::RunServe},
    {"tokenize", "text to token ids and back; corpora to token files", swan::cli::RunTokenize},
    {"tokenizer", "train a byte-level BPE tokenizer (`swan tokenizer train`)",
     swan::cli::RunTokenizer},
    {"train", "train a model under an attention plan; checkpoints, logs, export",
     swan::cli::RunTrain},
};

void PrintUsage(FILE* out) {
  std::fprintf(out,
               "swan: language models with hybrid sliding-window attention\n\n"
               "usage: swan COMMAND [ARGS...]\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-12s %s\n", c.name, c.summary);
  std::fprintf(out, "\n`swan COMMAND --help` describes each command.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    PrintUsage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const Command& c : kCommands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    try {
      return c.run(args);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "swan %s: error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "swan: unknown command '%s'\n\n", argv[1]);
  PrintUsage(stderr);
  return 2;
}
