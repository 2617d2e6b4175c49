// An SVG line chart of accuracies (0-100%): one line per series, dashed
// chance levels, a legend; x linear from 0 or logarithmic from 1. The
// recall learning curve (train/recall_log.h) and the recall-by-distance
// picture of `swan compare` (eval/recall_suite.h) draw with it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace swan {

struct AccuracySeries {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, accuracy in 0..1)
};

struct AccuracyChart {
  std::string title;
  std::string x_label;
  double x_max = 1;
  bool log_x = false;           // ticks at powers of 4 from 1
  std::vector<double> chances;  // dashed lines; the first is labelled
};

std::string AccuracyChartSvg(const AccuracyChart& chart, const std::vector<AccuracySeries>& series);

}  // namespace swan
