#include "train/recall_log.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "train/accuracy_chart.h"
#include "train/checkpoint.h"

namespace swan {
namespace {

std::string Path(const std::string& dir, const char* name) { return (std::filesystem::path(dir) / name).string(); }

std::string Header(const std::vector<int64_t>& edges) {
  std::string h = "step,tokens";
  for (size_t b = 0; b + 1 < edges.size(); ++b) {
    const std::string bin = std::to_string(edges[b]) + "_" + std::to_string(edges[b + 1]);
    h += ",correct_" + bin + ",items_" + bin;
  }
  return h;
}

}  // namespace

RecallLog::RecallLog(const std::string& run_dir, std::vector<int64_t> edges, int64_t keep_until_step, double chance)
    : dir_(run_dir), edges_(std::move(edges)), chance_(chance) {
  if (keep_until_step <= 0) return;
  std::ifstream in(Path(dir_, "recall_log.csv"));
  std::string line;
  if (!std::getline(in, line) || line != Header(edges_)) return;  // other bins: start afresh
  const size_t bins = edges_.size() - 1;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string f;
    std::vector<int64_t> v;
    while (std::getline(fields, f, ',')) v.push_back(std::stoll(f));
    if (v.size() != 2 + 2 * bins || v[0] > keep_until_step) continue;
    RecallRow r{v[0], v[1], {}, {}};
    for (size_t b = 0; b < bins; ++b) {
      r.correct.push_back(v[2 + 2 * b]);
      r.items.push_back(v[3 + 2 * b]);
    }
    rows_.push_back(r);
  }
}

void RecallLog::Add(int64_t step, int64_t tokens, const RecallTally& tally) {
  RecallRow r{step, tokens, {}, {}};
  for (size_t b = 0; b < tally.bins(); ++b) {
    r.items.push_back(tally.items(b));
    r.correct.push_back(tally.correct(b));
  }
  rows_.push_back(r);
}

void RecallLog::Write() const {
  std::ostringstream csv;
  csv << Header(edges_) << "\n";
  nlohmann::json j;
  j["bins"] = nlohmann::json::array();
  for (size_t b = 0; b + 1 < edges_.size(); ++b) j["bins"].push_back({edges_[b], edges_[b + 1]});
  if (chance_ > 0) j["chance"] = chance_;
  j["rows"] = nlohmann::json::array();
  for (const RecallRow& r : rows_) {
    csv << r.step << "," << r.tokens;
    nlohmann::json row = {{"step", r.step}, {"tokens", r.tokens}};
    for (size_t b = 0; b < r.items.size(); ++b) {
      csv << "," << r.correct[b] << "," << r.items[b];
      row["accuracy"].push_back(r.items[b] ? nlohmann::json(double(r.correct[b]) / double(r.items[b]))
                                           : nlohmann::json(nullptr));
      row["items"].push_back(r.items[b]);
    }
    csv << "\n";
    j["rows"].push_back(row);
  }
  WriteFileAtomic(Path(dir_, "recall_log.csv"), csv.str(), /*durable=*/false);
  WriteFileAtomic(Path(dir_, "recall_log.json"), j.dump(1) + "\n", false);
  WriteFileAtomic(Path(dir_, "recall.svg"), RecallCurveSvg(rows_, edges_, chance_, "recall by distance: " + dir_),
                  false);
}

std::string RecallCurveSvg(const std::vector<RecallRow>& rows, const std::vector<int64_t>& edges, double chance,
                           const std::string& title) {
  AccuracyChart chart;
  chart.title = title;
  chart.x_label = "step";
  for (const RecallRow& r : rows) chart.x_max = std::max(chart.x_max, double(r.step));
  if (chance > 0) chart.chances.push_back(chance);
  std::vector<AccuracySeries> series;
  for (size_t b = 0; b + 1 < edges.size(); ++b) {
    AccuracySeries line;
    line.label = "distance [" + std::to_string(edges[b]) + ", " + std::to_string(edges[b + 1]) + ")";
    for (const RecallRow& r : rows)
      if (b < r.items.size() && r.items[b] > 0)
        line.points.push_back({double(r.step), double(r.correct[b]) / double(r.items[b])});
    series.push_back(line);
  }
  return AccuracyChartSvg(chart, series);
}

}  // namespace swan
