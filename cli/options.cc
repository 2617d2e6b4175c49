#include "cli/options.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace swan::cli {
namespace {

constexpr size_t kLineWidth = 92;  // help lines are wrapped to this
constexpr size_t kMaxLabel = 20;   // a longer label pushes its help along its line

// "-t, --threads N"
std::string Label(const OptionSpec& spec) {
  std::string label;
  for (const std::string& name : spec.names) label += (label.empty() ? "" : ", ") + name;
  return spec.value_name.empty() ? label : label + " " + spec.value_name;
}

// The option's lines: its label, then its help from column `column`,
// wrapped at kLineWidth; '\n' in the help starts a new line.
std::string FormatOption(const OptionSpec& spec, size_t column) {
  std::string line = "  " + Label(spec);
  line += line.size() + 2 <= column ? std::string(column - line.size(), ' ') : "  ";
  std::string out;
  bool line_has_words = false;
  std::istringstream paragraphs(spec.help);
  std::string paragraph;
  while (std::getline(paragraphs, paragraph)) {
    if (line_has_words) {
      out += line + "\n";
      line = std::string(column, ' ');
      line_has_words = false;
    }
    std::istringstream words(paragraph);
    std::string word;
    while (words >> word) {
      if (line_has_words && line.size() + 1 + word.size() > kLineWidth) {
        out += line + "\n";
        line = std::string(column, ' ');
        line_has_words = false;
      }
      line += (line_has_words ? " " : "") + word;
      line_has_words = true;
    }
  }
  line.erase(line.find_last_not_of(' ') + 1);
  return out + line + "\n";
}

}  // namespace

OptionSet::OptionSet(std::string usage) : usage_(std::move(usage)) {}

OptionSet& OptionSet::Add(const OptionSpec& spec) {
  if (spec.names.empty()) throw std::logic_error("an option without a name");
  for (const std::string& name : spec.names) {
    const bool taken =
        name == "--help" || name == "-h" || std::any_of(options_.begin(), options_.end(), [&](const OptionSpec& o) {
          return std::find(o.names.begin(), o.names.end(), name) != o.names.end();
        });
    if (taken) throw std::logic_error("option " + name + " is declared twice");
  }
  items_.push_back(Item{int(options_.size()), ""});
  options_.push_back(spec);
  return *this;
}

OptionSet& OptionSet::Add(const std::vector<OptionSpec>& specs) {
  for (const OptionSpec& spec : specs) Add(spec);
  return *this;
}

OptionSet& OptionSet::Text(const std::string& text) {
  items_.push_back(Item{-1, text});
  return *this;
}

Args OptionSet::Parse(const std::vector<std::string>& words, bool positional_allowed) const {
  std::set<std::string> known = {"--help", "-h"}, boolean = {"--help", "-h"};
  for (const OptionSpec& spec : options_)
    for (const std::string& name : spec.names) {
      known.insert(name);
      if (spec.value_name.empty()) boolean.insert(name);
    }
  Args args(words, boolean);
  if (!HelpAsked(args)) args.RejectUnknown(known, positional_allowed);
  return args;
}

std::string OptionSet::Help() const {
  size_t label_width = 0;
  for (const OptionSpec& spec : options_) label_width = std::max(label_width, Label(spec).size());
  const size_t column = 2 + std::min(label_width, kMaxLabel) + 2;
  std::string out = usage_;
  for (const Item& item : items_)
    out += item.option >= 0 ? FormatOption(options_[size_t(item.option)], column) : item.text;
  return out;
}

bool HelpAsked(const Args& args) { return args.Has("--help") || args.Has("-h"); }

}  // namespace swan::cli
