// `swan bench WHAT`: measurements a user can run. Each kind of benchmark
// lives in its own file; this one dispatches.
#include <cstdio>
#include <string>
#include <vector>

namespace swan::cli {

int RunBenchAttention(const std::vector<std::string>& args);
int RunBenchModel(const std::vector<std::string>& args);

int RunBench(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf(
        "usage: swan bench attention [options]     the attention kernel table: full causal vs\n"
        "                                          sliding window (+ sinks) prefill, decode over\n"
        "                                          a full view and a ring, against oneDNN's GEMM\n"
        "       swan bench (-m DIR | --synthetic NAME) [options]\n"
        "                                          prefill and decode tokens/s of a model per\n"
        "                                          attention plan and depth, with the decode\n"
        "                                          roofline and KV MiB\n"
        "`swan bench attention --help` and `swan bench -m DIR --help` list the options.\n");
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "attention") return RunBenchAttention({args.begin() + 1, args.end()});
  return RunBenchModel(args);
}

}  // namespace swan::cli
