#include "train/recall_log.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "train/checkpoint.h"

namespace swan {
namespace {

std::string Path(const std::string& dir, const char* name) {
  return (std::filesystem::path(dir) / name).string();
}

std::string Header(const std::vector<int64_t>& edges) {
  std::string h = "step,tokens";
  for (size_t b = 0; b + 1 < edges.size(); ++b) {
    const std::string bin = std::to_string(edges[b]) + "_" + std::to_string(edges[b + 1]);
    h += ",correct_" + bin + ",items_" + bin;
  }
  return h;
}

}  // namespace

RecallLog::RecallLog(const std::string& run_dir, std::vector<int64_t> edges,
                     int64_t keep_until_step, double chance)
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
      row["accuracy"].push_back(r.items[b]
                                    ? nlohmann::json(double(r.correct[b]) / double(r.items[b]))
                                    : nlohmann::json(nullptr));
      row["items"].push_back(r.items[b]);
    }
    csv << "\n";
    j["rows"].push_back(row);
  }
  WriteFileAtomic(Path(dir_, "recall_log.csv"), csv.str(), /*durable=*/false);
  WriteFileAtomic(Path(dir_, "recall_log.json"), j.dump(1) + "\n", false);
  WriteFileAtomic(Path(dir_, "recall.svg"),
                  RecallCurveSvg(rows_, edges_, chance_, "recall by distance: " + dir_), false);
}

std::string RecallCurveSvg(const std::vector<RecallRow>& rows, const std::vector<int64_t>& edges,
                           double chance, const std::string& title) {
  const double W = 720, H = 420, left = 60, right = 170, top = 40, bottom = 50;
  double max_step = 1;
  for (const RecallRow& r : rows) max_step = std::max(max_step, double(r.step));
  auto X = [&](double step) { return left + (W - left - right) * step / max_step; };
  auto Y = [&](double acc) { return top + (H - top - bottom) * (1 - acc); };
  const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"};
  std::ostringstream s;
  s.precision(5);
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
    << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' "
       "fill='white'/>\n<text x='"
    << left << "' y='20' font-size='14'>" << title << "</text>\n";
  s << "<line x1='" << left << "' y1='" << H - bottom << "' x2='" << W - right << "' y2='"
    << H - bottom << "' stroke='black'/>\n<line x1='" << left << "' y1='" << top << "' x2='" << left
    << "' y2='" << H - bottom << "' stroke='black'/>\n";
  for (int i = 0; i <= 4; ++i) {
    s << "<text x='20' y='" << Y(i / 4.0) + 4 << "'>" << 25 * i << "%</text>\n";
    s << "<text x='" << X(max_step * i / 4) - 10 << "' y='" << H - bottom + 18 << "'>"
      << int64_t(max_step * i / 4) << "</text>\n";
  }
  s << "<text x='" << (W - right) / 2 << "' y='" << H - 10 << "'>step</text>\n";
  if (chance > 0)
    s << "<line x1='" << left << "' y1='" << Y(chance) << "' x2='" << W - right << "' y2='"
      << Y(chance) << "' stroke='gray' stroke-dasharray='4,3'/>\n<text x='" << W - right + 8
      << "' y='" << Y(chance) + 4 << "' fill='gray'>chance</text>\n";
  for (size_t b = 0; b + 1 < edges.size(); ++b) {
    const char* color = colors[b % 6];
    s << "<polyline fill='none' stroke='" << color << "' stroke-width='1.5' points='";
    for (const RecallRow& r : rows)
      if (b < r.items.size() && r.items[b] > 0)
        s << X(double(r.step)) << "," << Y(double(r.correct[b]) / double(r.items[b])) << " ";
    s << "'/>\n<text x='" << W - right + 8 << "' y='" << top + 16 * double(b) << "' fill='" << color
      << "'>distance [" << edges[b] << ", " << edges[b + 1] << ")</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace swan
