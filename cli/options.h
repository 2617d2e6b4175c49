// A command's options, each declared once: its names, the name of its
// value and its help. From that one declaration come the command's parsing
// (which flags take a value and which take none), its `--help` text and its
// unknown-flag errors. The options several commands share are declared in
// cli/option_groups.h.
#pragma once

#include <string>
#include <vector>

#include "cli/args.h"

namespace swan::cli {

struct OptionSpec {
  std::vector<std::string> names;  // e.g. {"-t", "--threads"}
  std::string value_name;          // e.g. "N"; empty: a boolean flag, which takes no value
  std::string help;                // one paragraph, wrapped by OptionSet::Help ('\n' breaks a line)
};

// A command's usage line(s), then its options and any paragraphs between
// and after them, in the order added. `--help` and `-h` are always known.
class OptionSet {
 public:
  // `usage`: the usage line(s), and any paragraph before the options, each
  // line ending in '\n'.
  explicit OptionSet(std::string usage);

  // Appends options; throws std::logic_error for a name declared twice.
  OptionSet& Add(const OptionSpec& spec);
  OptionSet& Add(const std::vector<OptionSpec>& specs);
  // Appends text as it is (a heading, a paragraph), lines ending in '\n'.
  OptionSet& Text(const std::string& text);

  // The words parsed with the declared options: a boolean flag takes no
  // value, a value flag needs one. Unless help is asked for, throws
  // "unknown flag X (see --help)" for an undeclared flag, and refuses
  // positional words unless `positional_allowed`.
  Args Parse(const std::vector<std::string>& words, bool positional_allowed = false) const;

  // The usage, then every option in aligned columns with its help wrapped.
  std::string Help() const;

  const std::vector<OptionSpec>& options() const { return options_; }

 private:
  struct Item {
    int option = -1;   // index into options_, or -1 for text
    std::string text;  // when not an option
  };
  std::string usage_;
  std::vector<OptionSpec> options_;
  std::vector<Item> items_;
};

// Whether the words asked for help (--help or -h).
bool HelpAsked(const Args& args);

}  // namespace swan::cli
