#include "cli/threads_option.h"

#include <stdexcept>

#include "util/threads.h"

namespace swan::cli {

std::string ThreadsHelp(bool short_flag) {
  return std::string(short_flag ? "  -t, --threads N  " : "  --threads N      ") + "threads to compute with (default " +
         std::to_string(ThreadLimit()) +
         ": the cores swan may use,\n"
         "                   or OMP_NUM_THREADS); while other programs keep cores busy, each\n"
         "                   step (prefill, decode token, training step) runs on the ones they\n"
         "                   leave idle (SWAN_ADAPT_THREADS=0: always N); decode runs on swan's own\n"
         "                   spinning helper threads (SWAN_SPIN_TEAM=0: on OpenMP's)\n";
}

void ApplyThreadsOption(const Args& args) {
  for (const char* name : {"-t", "--threads"}) {
    if (!args.Has(name)) continue;
    const long long n = args.GetInt(name, 0);
    if (n < 1 || n > 4096)
      throw std::invalid_argument(std::string(name) + " takes a number of threads from 1 up, got " +
                                  args.Get(name, ""));
    SetThreadLimit(int(n));
  }
}

}  // namespace swan::cli
