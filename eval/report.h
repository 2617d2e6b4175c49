// The comparison of attention plans (`swan compare`): what each plan loses
// (perplexity inside and beyond the window, retrieval with the needle
// inside and outside it, recall by distance) and what it costs (prefill and
// decode speed, KV cache), as a text table, JSON, SVG pictures and one
// self-contained HTML page.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "eval/cost.h"
#include "eval/perplexity.h"
#include "eval/suite.h"

namespace swan {

struct PlanReport {
  std::string spec;    // as given on the command line
  int32_t window = 0;  // smallest window of its window layers; 0 = none
  PerplexityResult perplexity;
  double bits_per_byte = 0;
  std::vector<AnswerRecord> answers;
  std::vector<CostPoint> cost;
  double seconds = 0;  // time the plan took, all tasks
};

struct CompareReport {
  std::string model;
  int32_t context = 0;
  // The window the table splits at: the smallest window of any plan (0 =
  // no plan has one). "Inside" means the answer's predictor is fewer than
  // `window` tokens after the needle.
  int32_t window = 0;
  std::string text_source;    // where the perplexity text came from
  std::string filler_source;  // the haystack: "noise" or a file
  SuiteOptions suite;
  std::vector<PlanReport> plans;
  std::string provenance;  // how it was measured (command, build, CPU, threads); shown by ReportHtml
};

// Accuracy and answer loss of the answers a predicate selects.
struct Tally {
  int64_t correct = 0, answers = 0;
  double nll = 0;
  int64_t tokens = 0;
  double Accuracy() const { return answers ? double(correct) / double(answers) : 0.0; }
  double MeanNll() const { return tokens ? nll / double(tokens) : 0.0; }
};
Tally Count(const std::vector<AnswerRecord>& answers, const std::function<bool(const AnswerRecord&)>& keep);

// Metrics as rows, plans as columns.
std::string ReportTable(const CompareReport& report);
nlohmann::json ReportJson(const CompareReport& report);

// Needle-in-a-haystack accuracy by depth (rows) and length (columns) of one
// plan, all retrieval tasks together, or only `kind` when given.
std::string NiahHeatmapSvg(const CompareReport& report, const PlanReport& plan);
// Mean loss by position in the window, one line per plan.
std::string PerplexityByPositionSvg(const CompareReport& report);
// Recall answer loss and accuracy by distance, one line per plan.
std::string RecallByDistanceSvg(const CompareReport& report);
// The table and every picture in one page with no outside references.
std::string ReportHtml(const CompareReport& report);

}  // namespace swan
