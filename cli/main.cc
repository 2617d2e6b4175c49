// swan: the command-line front end. Dispatches `swan COMMAND ...` to the
// commands listed in kCommands.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cli/command.h"
#include "gpu/vulkan_device.h"
#include "ops/cpu_report.h"
#include "util/simd_target.h"
#include "util/threads.h"

namespace {

using swan::cli::Command;

const Command kCommands[] = {
    {"bench", "kernel and model speed (`swan bench attention`, `swan bench -m DIR`)", swan::cli::RunBench},
    {"compare", "what each attention plan costs and loses: one table, JSON, HTML report", swan::cli::RunCompare},
    {"convert", "a model's weights as another type (bf16, f16, f32; as GGUF also Q8_0, Q4_0, K-quants)",
     swan::cli::RunConvert},
    {"generate", "continue a prompt with a model under an attention plan", swan::cli::RunGenerate},
    {"heads", "retrieval heads (recall models, or text models on passkeys) and a per-head plan's full heads",
     swan::cli::RunHeads},
    {"inspect", "a model's attention plan per layer and its KV cache size", swan::cli::RunInspect},
    {"perplexity", "perplexity of a long text, with the loss by position in the window", swan::cli::RunPerplexity},
    {"route-stats", "how often each routed (Switch Attention) layer uses full attention: table, JSON, SVG",
     swan::cli::RunRouteStats},
    {"score", "log-probabilities and greedy predictions on token-id sequences you bring (JSONL)", swan::cli::RunScore},
    {"serve", "OpenAI-compatible HTTP server with batching and prompt caching", swan::cli::RunServe},
    {"tokenize", "text to token ids and back; corpora to token files", swan::cli::RunTokenize},
    {"tokenizer", "train a byte-level BPE tokenizer (`swan tokenizer train`)", swan::cli::RunTokenizer},
    {"train", "train a model under an attention plan; checkpoints, logs, export", swan::cli::RunTrain},
};

void PrintUsage(FILE* out) {
  std::fprintf(out,
               "swan: language models with hybrid sliding-window attention\n\n"
               "usage: swan COMMAND [ARGS...]\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-12s %s\n", c.name, c.summary);
  std::fprintf(out,
               "\n`swan COMMAND --help` describes each command; `swan --version` says which CPU\n"
               "paths run here (SIMD target, oneDNN ISA, bf16 products, threads).\n");
}

// OpenMP's idle threads spin GOMP_SPINCOUNT times before they sleep
// (libgomp: 300000 by default, read once when the library loads, before
// main). Those spins take the time slices that the thread everyone waits
// for needs on a busy machine, and a short spin is no slower when idle:
// swan-7m decode, 2 threads, Zen 3, 5 runs each: idle 1650-1770 tok/s at
// 300000, 1790-2030 at 10000, 2010-2040 at 3000, 1820-1930 at 1000; with a
// busy loop per core beside it 760-1290 at 300000, 740-1190 at 10000,
// 1030-1260 at 3000. So unless the user chose a policy, swan starts itself
// once more with GOMP_SPINCOUNT=3000.
void RestartWithShortOpenMpSpins(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  if (setenv("GOMP_SPINCOUNT", "3000", 1) != 0) return;
  execv("/proc/self/exe", argv);  // returns only if it failed: go on as we are
  unsetenv("GOMP_SPINCOUNT");
}

}  // namespace

int main(int argc, char** argv) {
  RestartWithShortOpenMpSpins(argv);
  try {
    swan::ApplySimdTargetCap();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "swan: %s\n", e.what());
    return 2;
  }
  swan::EnableAdaptiveThreads(true);
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    PrintUsage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version") || !std::strcmp(argv[1], "version")) {
    std::printf("swan (built %s)\n%s%s", __DATE__, swan::CpuReport().c_str(), swan::VulkanReport().c_str());
    return 0;
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
