// `swan compare` for callers that hold a loaded model (the Python module):
// the same report the command prints, from the same flags.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/model.h"

namespace swan::cli {

struct CompareOutput {
  nlohmann::json json;  // what --json prints
  std::string text;     // the table printed without --json
};

// words: the command's flags, -m DIR naming the directory `model` was
// loaded from; --svg and --html files are written as the command writes
// them. progress: a line now and then (may be empty). Throws
// std::invalid_argument for bad flags or plans.
CompareOutput ComparePlans(const std::vector<std::string>& words, const LanguageModel& model,
                           const std::function<void(const std::string&)>& progress);

}  // namespace swan::cli
