#include "train/run_log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "train/checkpoint.h"

namespace swan {
namespace {

const char kHeader[] = "step,tokens,loss,val_loss,lr,grad_norm,tokens_per_s,elapsed_s";
// Appended when the run has routed layers; the last one is ';'-separated.
const char kRouterHeader[] = ",router_loss,full_ratio,val_full_ratio,val_full_ratio_by_layer";
// Appended last when the run is data-parallel.
const char kCommHeader[] = ",comm_s";

std::string Path(const std::string& dir, const char* name) { return (std::filesystem::path(dir) / name).string(); }

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) parts.push_back(part);
  if (!s.empty() && s.back() == sep) parts.emplace_back();
  return parts;
}

// A CSV row back into a LogRow; false for a line that is not one.
bool ParseRow(const std::string& line, bool routed, bool data_parallel, LogRow& r) {
  const std::vector<std::string> f = Split(line, ',');
  if (f.size() < 8) return false;
  try {
    r.step = std::stoll(f[0]);
    r.tokens = std::stoll(f[1]);
    double* fields[] = {&r.loss, &r.val_loss, &r.lr, &r.grad_norm, &r.tokens_per_s, &r.elapsed_s};
    for (size_t i = 0; i < 6; ++i) *fields[i] = std::stod(f[2 + i]);
    if (routed && f.size() >= 11) {
      r.router_loss = std::stod(f[8]);
      r.full_ratio = std::stod(f[9]);
      r.val_full_ratio = std::stod(f[10]);
    }
    if (routed && f.size() >= 12 && !f[11].empty())
      for (const std::string& v : Split(f[11], ';')) r.val_full_ratio_by_layer.push_back(std::stod(v));
    const size_t comm = routed ? 12 : 8;
    if (data_parallel && f.size() > comm && !f[comm].empty()) r.comm_s = std::stod(f[comm]);
  } catch (const std::exception&) {  // std::stod's invalid_argument / out_of_range
    return false;
  }
  return true;
}

}  // namespace

RunLog::RunLog(const std::string& run_dir, int64_t keep_until_step, bool routed, bool data_parallel)
    : dir_(run_dir), routed_(routed), data_parallel_(data_parallel) {
  if (keep_until_step <= 0) return;
  std::ifstream in(Path(dir_, "train_log.csv"));
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    LogRow r;
    if (ParseRow(line, routed_, data_parallel_, r) && r.step <= keep_until_step) rows_.push_back(r);
  }
}

void RunLog::Add(const LogRow& row) { rows_.push_back(row); }

void RunLog::Write() const {
  std::ostringstream csv;
  csv << kHeader << (routed_ ? kRouterHeader : "") << (data_parallel_ ? kCommHeader : "") << "\n";
  nlohmann::json j = nlohmann::json::array();
  char buf[256];
  for (const LogRow& r : rows_) {
    std::snprintf(buf, sizeof buf, "%lld,%lld,%.9g,%.9g,%.6g,%.6g,%.1f,%.2f", (long long)r.step, (long long)r.tokens,
                  r.loss, r.val_loss, r.lr, r.grad_norm, r.tokens_per_s, r.elapsed_s);
    csv << buf;
    nlohmann::json row = {{"step", r.step},           {"tokens", r.tokens},
                          {"loss", r.loss},           {"lr", r.lr},
                          {"grad_norm", r.grad_norm}, {"tokens_per_s", r.tokens_per_s},
                          {"elapsed_s", r.elapsed_s}};
    if (r.val_loss >= 0) row["val_loss"] = r.val_loss;
    if (routed_) {
      std::snprintf(buf, sizeof buf, ",%.6g,%.6g,%.6g,", r.router_loss, r.full_ratio, r.val_full_ratio);
      csv << buf;
      for (size_t i = 0; i < r.val_full_ratio_by_layer.size(); ++i) {
        std::snprintf(buf, sizeof buf, "%s%.6g", i ? ";" : "", r.val_full_ratio_by_layer[i]);
        csv << buf;
      }
      row["router_loss"] = r.router_loss;
      row["full_ratio"] = r.full_ratio;
      if (r.val_full_ratio >= 0) row["val_full_ratio"] = r.val_full_ratio;
      if (!r.val_full_ratio_by_layer.empty()) row["val_full_ratio_by_layer"] = r.val_full_ratio_by_layer;
    }
    if (data_parallel_) {
      std::snprintf(buf, sizeof buf, ",%.6f", r.comm_s);
      csv << buf;
      row["comm_s"] = r.comm_s;
      if (!r.comm_s_by_rank.empty()) row["comm_s_by_rank"] = r.comm_s_by_rank;
    }
    csv << "\n";
    j.push_back(row);
  }
  WriteFileAtomic(Path(dir_, "train_log.csv"), csv.str(), /*durable=*/false);
  WriteFileAtomic(Path(dir_, "train_log.json"), j.dump(1) + "\n", false);
  WriteFileAtomic(Path(dir_, "loss.svg"), LossCurveSvg(rows_, "swan train: " + dir_), false);
}

std::string LossCurveSvg(const std::vector<LogRow>& rows, const std::string& title) {
  const double W = 720, H = 420, left = 60, right = 20, top = 40, bottom = 50;
  double max_step = 1, lo = 1e30, hi = -1e30;
  for (const LogRow& r : rows) {
    max_step = std::max(max_step, double(r.step));
    for (double v : {r.loss, r.val_loss})
      if (v >= 0 && std::isfinite(v)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
  }
  if (lo > hi) lo = 0, hi = 1;
  if (hi - lo < 1e-6) hi = lo + 1;
  auto X = [&](double step) { return left + (W - left - right) * step / max_step; };
  auto Y = [&](double v) { return top + (H - top - bottom) * (hi - v) / (hi - lo); };
  std::ostringstream s;
  s.precision(5);
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
    << "' font-family='sans-serif' font-size='12'>\n"
    << "<rect width='100%' height='100%' fill='white'/>\n"
    << "<text x='" << left << "' y='20' font-size='14'>" << title << "</text>\n"
    << "<line x1='" << left << "' y1='" << H - bottom << "' x2='" << W - right << "' y2='" << H - bottom
    << "' stroke='black'/>\n"
    << "<line x1='" << left << "' y1='" << top << "' x2='" << left << "' y2='" << H - bottom << "' stroke='black'/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double v = lo + (hi - lo) * i / 4;
    s << "<text x='5' y='" << Y(v) + 4 << "'>" << v << "</text>\n";
    const double step = max_step * i / 4;
    s << "<text x='" << X(step) - 10 << "' y='" << H - bottom + 18 << "'>" << int64_t(step) << "</text>\n";
  }
  s << "<text x='" << W / 2 << "' y='" << H - 10 << "'>step</text>\n";
  s << "<polyline fill='none' stroke='steelblue' stroke-width='1.5' points='";
  for (const LogRow& r : rows)
    if (std::isfinite(r.loss)) s << X(double(r.step)) << "," << Y(r.loss) << " ";
  s << "'/>\n";
  for (const LogRow& r : rows)
    if (r.val_loss >= 0)
      s << "<circle cx='" << X(double(r.step)) << "' cy='" << Y(r.val_loss) << "' r='3' fill='darkorange'/>\n";
  s << "<text x='" << W - 200 << "' y='" << top + 10 << "' fill='steelblue'>training loss</text>\n<text x='" << W - 200
    << "' y='" << top + 26 << "' fill='darkorange'>held-out loss</text>\n</svg>\n";
  return s.str();
}

}  // namespace swan
