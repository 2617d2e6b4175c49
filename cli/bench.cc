// `swan bench WHAT`: measurements a user can run. Each kind of benchmark
// lives in its own file; this one dispatches.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace swan::cli {

int RunBenchAttention(const std::vector<std::string>& args);

int RunBench(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf(
        "usage: swan bench attention [--n 1024,...] [--head-dims 64,128] [--window 1024]\n"
        "                            [--sinks 4] [--repeats R] [--json]\n"
        "  the attention kernel table: full causal vs sliding window (+ sinks) prefill,\n"
        "  decode over a full view and over a ring, against oneDNN's fp32 GEMM rate\n");
    return args.empty() ? 2 : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "attention") return RunBenchAttention(rest);
  throw std::invalid_argument("unknown benchmark '" + args[0] + "' (try: swan bench attention)");
}

}  // namespace swan::cli
