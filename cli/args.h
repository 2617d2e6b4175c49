// A small command-line parser for swan's subcommands: `--name value`,
// `--name=value`, `-x value`, boolean `--flag`, and positional words.
// Unknown flags are errors, so a typo never passes silently.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace swan::cli {

class Args {
 public:
  // `bool_flags` lists the flags that take no value (e.g. "--json").
  Args(const std::vector<std::string>& words, const std::set<std::string>& bool_flags);

  bool Has(const std::string& name) const;
  std::string Get(const std::string& name, const std::string& fallback) const;
  long long GetInt(const std::string& name, long long fallback) const;
  // An integer flag that, when given, must be >= 1 (0 is an error, never a
  // hidden "default"); `fallback` when absent.
  long long GetPositiveInt(const std::string& name, long long fallback) const;
  double GetDouble(const std::string& name, double fallback) const;
  // Comma-separated integers, e.g. "--n 1024,2048".
  std::vector<long long> GetIntList(const std::string& name, const std::vector<long long>& fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }
  // The words as given, joined by spaces (for provenance in reports).
  std::string CommandLine() const;
  // Throws if a flag was given that is not in `known` (value or boolean),
  // or a positional word to a command that takes none (a stray word is a
  // typo or a missing flag, never silently dropped).
  void RejectUnknown(const std::set<std::string>& known, bool positional_allowed = false) const;

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
  std::vector<std::string> words_;
};

// The non-empty items of `list` separated by `sep`, blanks trimmed.
std::vector<std::string> SplitList(const std::string& list, char sep);

// Attention plans given as one argument: specs contain commas, so plans are
// separated by ';' ("full;swa:64,sinks:4;hybrid:3:1"). Throws when empty.
std::vector<std::string> SplitPlanList(const std::string& list);

}  // namespace swan::cli
