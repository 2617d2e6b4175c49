// One swan subcommand: `swan NAME ARGS...`. Each command lives in its own
// file in cli/ and is listed once in the table in cli/main.cc.
#pragma once

#include <string>
#include <vector>

namespace swan::cli {

struct Command {
  const char* name;     // first word after `swan`, e.g. "bench"
  const char* summary;  // one line for `swan --help`
  // Runs the command on the words after its name; returns the exit code.
  // Throws std::exception with a user-facing message on bad input.
  int (*run)(const std::vector<std::string>& args);
};

// The commands' entry points, one per file (cli/NAME.cc).
int RunBench(const std::vector<std::string>& args);
int RunCompare(const std::vector<std::string>& args);
int RunConvert(const std::vector<std::string>& args);
int RunGenerate(const std::vector<std::string>& args);
int RunHeads(const std::vector<std::string>& args);
int RunInspect(const std::vector<std::string>& args);
int RunPerplexity(const std::vector<std::string>& args);
int RunRouteStats(const std::vector<std::string>& args);
int RunScore(const std::vector<std::string>& args);
int RunServe(const std::vector<std::string>& args);
int RunTokenize(const std::vector<std::string>& args);
int RunTokenizer(const std::vector<std::string>& args);
int RunTrain(const std::vector<std::string>& args);

}  // namespace swan::cli
