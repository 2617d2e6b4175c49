#include "cli/options.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/option_groups.h"
#include "ops/weight_type.h"

namespace swan::cli {

namespace {

// A command's own options beside shared groups.
OptionSet Example() {
  OptionSet options("usage: swan example -m DIR [options]\n");
  options.Add(ModelOption())
      .Add({{"-n"}, "N", "how many"})
      .Add({{"--json"}, "", "print JSON"})
      .Add(WeightsOption())
      .Add(KvOption())
      .Add(ThreadsOption())
      .Add(ContextOption())
      .Add({{"--a-rather-long-option-name"}, "VALUE", "its help starts on the label's line"})
      .Text("A closing paragraph.\n");
  return options;
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// "-t, --threads N" as the help shows it.
std::string Label(const OptionSpec& spec) {
  std::string label;
  for (const std::string& name : spec.names) label += (label.empty() ? "" : ", ") + name;
  return spec.value_name.empty() ? label : label + " " + spec.value_name;
}

// The labels of the option lines of a help text ("  -t, --threads N  threads ...").
std::vector<std::string> OptionLabels(const std::string& help) {
  std::vector<std::string> labels;
  size_t start = 0;
  while (start < help.size()) {
    size_t end = help.find('\n', start);
    if (end == std::string::npos) end = help.size();
    const std::string line = help.substr(start, end - start);
    if (line.rfind("  -", 0) == 0) labels.push_back(line.substr(2, line.find("  ", 2) - 2));
    start = end + 1;
  }
  return labels;
}

// The words of a text: runs of letters, digits and '_'.
std::set<std::string> Words(const std::string& text) {
  std::set<std::string> words;
  std::string word;
  for (char c : text + " ") {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      word += c;
    } else if (!word.empty()) {
      words.insert(word);
      word.clear();
    }
  }
  return words;
}

TEST(options, BooleanFlagTakesNoValue) {
  const Args args = Example().Parse({"--json", "word", "-n", "3"}, /*positional_allowed=*/true);
  EXPECT_TRUE(args.Has("--json"));
  EXPECT_EQ(args.GetInt("-n", 0), 3);
  ASSERT_EQ(args.positional().size(), 1u);
  EXPECT_EQ(args.positional()[0], "word");
}

TEST(options, ValueFlagNeedsItsValue) {
  EXPECT_EQ(ErrorOf([] { Example().Parse({"--json", "-n"}); }), "flag -n needs a value");
  EXPECT_EQ(ErrorOf([] { Example().Parse({"--weights"}); }), "flag --weights needs a value");
  EXPECT_EQ(Example().Parse({"-n", "--json"}).Get("-n", ""), "--json");  // the next word is the value
}

TEST(options, UnknownFlagIsRefused) {
  EXPECT_EQ(ErrorOf([] { Example().Parse({"-n", "3", "--bogus", "x"}); }), "unknown flag --bogus (see --help)");
  EXPECT_EQ(ErrorOf([] { Example().Parse({"-p", "hi"}); }), "unknown flag -p (see --help)");
  // Both spellings of a shared option are known.
  EXPECT_EQ(ErrorOf([] { Example().Parse({"-t", "2", "--threads", "2", "-c", "8", "--ctx", "8"}); }), "");
  // Asking for help wins over a bad flag.
  EXPECT_TRUE(HelpAsked(Example().Parse({"--bogus", "x", "--help"})));
  EXPECT_TRUE(HelpAsked(Example().Parse({"-h"})));
}

TEST(options, StrayWordIsRefusedUnlessAllowed) {
  EXPECT_EQ(ErrorOf([] {
              Example().Parse({"-n", "3", "extra"});
            }),
            "unexpected argument 'extra': this command takes flags only (see --help)");
  EXPECT_EQ(ErrorOf([] { Example().Parse({"extra"}, /*positional_allowed=*/true); }), "");
}

TEST(options, NameDeclaredTwiceIsAnError) {
  OptionSet options("usage: x\n");
  options.Add(ThreadsOption());
  EXPECT_THROW(options.Add({{"--threads"}, "N", "again"}), std::logic_error);
  EXPECT_THROW(options.Add({{"-h"}, "", "help is always declared"}), std::logic_error);
}

TEST(options, HelpListsEveryOptionOnce) {
  const OptionSet options = Example();
  const std::string help = options.Help();
  EXPECT_EQ(help.rfind("usage: swan example -m DIR [options]\n", 0), 0u) << help;
  std::vector<std::string> declared;
  for (const OptionSpec& spec : options.options()) declared.push_back(Label(spec));
  EXPECT_EQ(OptionLabels(help), declared) << help;
  EXPECT_NE(help.find("  --a-rather-long-option-name VALUE  its help starts on the label's line\n"), std::string::npos)
      << help;
  EXPECT_EQ(help.substr(help.size() - 21), "A closing paragraph.\n");
  // Lines are wrapped, and the help of each option starts in one column.
  size_t start = 0, column = 0;
  while (start < help.size()) {
    const size_t end = help.find('\n', start);
    const std::string line = help.substr(start, end - start);
    EXPECT_LE(line.size(), 92u) << line;
    if (line.rfind("  -n N", 0) == 0) column = line.find_first_not_of(' ', 6);
    start = end + 1;
  }
  EXPECT_NE(help.find("\n  --json" + std::string(column - 8, ' ') + "print JSON\n"), std::string::npos) << help;
}

// The --weights help lists every type ParseWeightType accepts: both come
// from one table (ops/weight_type.h), so a new type cannot be left out.
TEST(options, WeightsHelpNamesEveryWeightType) {
  const std::set<std::string> help_words = Words(WeightsOption().help);
  int named = 0;
  for (int u = 0; u < 256; ++u) {
    const std::string name = WeightTypeName(WeightType(u));
    if (name == "?") continue;
    ++named;
    EXPECT_EQ(ParseWeightType(name, "--weights"), WeightType(u)) << name;
    EXPECT_TRUE(help_words.count(name)) << name << " is not in: " << WeightsOption().help;
  }
  EXPECT_EQ(named, int(AllWeightTypes().size()));
  EXPECT_EQ(LoadOptionsFrom(Example().Parse({"--weights", "q4_0"})).weights.value_or(WeightType::kF32),
            WeightType::kQ4_0);
  EXPECT_EQ(ErrorOf([] {
              LoadOptionsFrom(Example().Parse({"--weights", "q3"}));
            }),
            "--weights: 'q3' is not a weight type (" + WeightTypeList() + ")");
}

std::string HelpOf(int (*run)(const std::vector<std::string>&), const std::vector<std::string>& words) {
  testing::internal::CaptureStdout();
  const int code = run(words);
  std::fflush(stdout);
  const std::string help = testing::internal::GetCapturedStdout();
  EXPECT_EQ(code, 0) << help;
  return help;
}

// Every command's --help: its usage, each option once.
TEST(options, EveryCommandsHelpListsEachOptionOnce) {
  const std::map<std::string, std::string> helps = {
      {"bench attention", HelpOf(RunBench, {"attention", "--help"})},
      {"bench -m", HelpOf(RunBench, {"-m", "DIR", "--help"})},
      {"compare", HelpOf(RunCompare, {"--help"})},
      {"convert", HelpOf(RunConvert, {"--help"})},
      {"generate", HelpOf(RunGenerate, {"--help"})},
      {"heads", HelpOf(RunHeads, {"-h"})},
      {"inspect", HelpOf(RunInspect, {"--help"})},
      {"perplexity", HelpOf(RunPerplexity, {"--help"})},
      {"route-stats", HelpOf(RunRouteStats, {"--help"})},
      {"score", HelpOf(RunScore, {"--help"})},
      {"serve", HelpOf(RunServe, {"--help"})},
      {"tokenize", HelpOf(RunTokenize, {"--help"})},
      {"tokenizer train", HelpOf(RunTokenizer, {"train", "--help"})},
      {"train", HelpOf(RunTrain, {"--help"})},
      {"train synth", HelpOf(RunTrain, {"synth", "--help"})},
      {"train recall", HelpOf(RunTrain, {"recall", "--help"})},
      {"train --head-gates", HelpOf(RunTrain, {"--head-gates", "--help"})},
  };
  for (const auto& [command, help] : helps) {
    EXPECT_EQ(help.rfind("usage: swan " + command.substr(0, command.find(' ')), 0), 0u) << command << ":\n" << help;
    const std::vector<std::string> labels = OptionLabels(help);
    EXPECT_FALSE(labels.empty()) << command;
    std::set<std::string> names;
    for (const std::string& label : labels) {
      std::string name = label.substr(0, label.find(' '));
      if (name.back() == ',') name.pop_back();
      EXPECT_TRUE(names.insert(name).second) << command << ": " << name << " listed twice:\n" << help;
    }
  }
  // The shared options read the same wherever they appear.
  for (const char* command : {"generate", "perplexity", "serve", "bench -m"})
    for (WeightType type : AllWeightTypes())
      EXPECT_TRUE(Words(helps.at(command)).count(WeightTypeName(type))) << command << ": " << WeightTypeName(type);
  EXPECT_EQ(ErrorOf([] { RunGenerate({"-m", "DIR", "--bogus", "1"}); }), "unknown flag --bogus (see --help)");
  EXPECT_EQ(ErrorOf([] {
              RunTrain({"--router-gamma-constant", "yes", "--out", "x"});
            }),
            "unexpected argument 'yes': this command takes flags only (see --help)");
}

}  // namespace
}  // namespace swan::cli
