// The pictures of the comparison report, written as plain SVG, and the HTML
// page that holds them with the table.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "eval/report.h"

namespace swan {
namespace {

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

std::string Num(double v, const char* fmt = "%.1f") {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string Text(double x, double y, const std::string& s, const std::string& extra = "") {
  return "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" " + extra + ">" + Escape(s) + "</text>\n";
}

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y)
};

// A line chart with axes, a legend and an optional dashed vertical line.
std::string LineChart(const std::string& title, const std::string& x_label, const std::string& y_label,
                      const std::vector<Series>& series, double marker_x, const std::string& marker_label) {
  size_t longest_name = 0;
  for (const Series& s : series) longest_name = std::max(longest_name, s.name.size());
  const double right = 48 + 7.0 * double(longest_name);  // the legend
  const double width = 470 + right, height = 360, left = 64, top = 36, bottom = 48;
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const Series& s : series)
    for (auto [x, y] : s.points) {
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  if (x0 > x1) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  const double pad = 0.05 * (y1 - y0);
  y0 -= pad, y1 += pad;
  const double pw = width - left - right, ph = height - top - bottom;
  auto sx = [&](double x) { return left + (x - x0) / (x1 - x0) * pw; };
  auto sy = [&](double y) { return top + (1 - (y - y0) / (y1 - y0)) * ph; };
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(width, "%.0f") + "\" height=\"" +
                    Num(height, "%.0f") + "\" viewBox=\"0 0 " + Num(width, "%.0f") + " " + Num(height, "%.0f") +
                    "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += Text(width / 2, 20, title, "text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\"");
  svg += "<rect x=\"" + Num(left) + "\" y=\"" + Num(top) + "\" width=\"" + Num(pw) + "\" height=\"" + Num(ph) +
         "\" fill=\"none\" stroke=\"#888\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double xv = x0 + (x1 - x0) * i / 4, yv = y0 + (y1 - y0) * i / 4;
    svg += "<line x1=\"" + Num(sx(xv)) + "\" y1=\"" + Num(top) + "\" x2=\"" + Num(sx(xv)) + "\" y2=\"" + Num(top + ph) +
           "\" stroke=\"#eee\"/>\n";
    svg += "<line x1=\"" + Num(left) + "\" y1=\"" + Num(sy(yv)) + "\" x2=\"" + Num(left + pw) + "\" y2=\"" +
           Num(sy(yv)) + "\" stroke=\"#eee\"/>\n";
    svg += Text(sx(xv), top + ph + 16, Num(xv, "%.0f"), "text-anchor=\"middle\"");
    svg += Text(left - 6, sy(yv) + 4, Num(yv, "%.2f"), "text-anchor=\"end\"");
  }
  svg += Text(left + pw / 2, height - 10, x_label, "text-anchor=\"middle\"");
  svg +=
      Text(16, top + ph / 2, y_label, "text-anchor=\"middle\" transform=\"rotate(-90 16 " + Num(top + ph / 2) + ")\"");
  if (marker_x > x0 && marker_x < x1) {
    svg += "<line x1=\"" + Num(sx(marker_x)) + "\" y1=\"" + Num(top) + "\" x2=\"" + Num(sx(marker_x)) + "\" y2=\"" +
           Num(top + ph) + "\" stroke=\"#444\" stroke-dasharray=\"5,4\"/>\n";
    svg += Text(sx(marker_x) + 4, top + 14, marker_label, "fill=\"#444\"");
  }
  for (size_t i = 0; i < series.size(); ++i) {
    const char* color = kColors[i % std::size(kColors)];
    std::string pts;
    for (auto [x, y] : series[i].points) pts += Num(sx(x)) + "," + Num(sy(y)) + " ";
    svg += "<polyline points=\"" + pts + "\" fill=\"none\" stroke=\"" + color + "\" stroke-width=\"2\"/>\n";
    for (auto [x, y] : series[i].points)
      svg += "<circle cx=\"" + Num(sx(x)) + "\" cy=\"" + Num(sy(y)) + "\" r=\"2.5\" fill=\"" + color + "\"/>\n";
    const double ly = top + 10 + 18 * double(i);
    svg += "<line x1=\"" + Num(left + pw + 12) + "\" y1=\"" + Num(ly) + "\" x2=\"" + Num(left + pw + 32) + "\" y2=\"" +
           Num(ly) + "\" stroke=\"" + color + "\" stroke-width=\"2\"/>\n";
    svg += Text(left + pw + 36, ly + 4, series[i].name);
  }
  return svg + "</svg>\n";
}

// Red (0) to green (1).
std::string AccuracyColor(double a) {
  return "hsl(" + Num(120 * a, "%.0f") + ",60%," + Num(88 - 38 * a, "%.0f") + "%)";
}

}  // namespace

std::string NiahHeatmapSvg(const CompareReport& report, const PlanReport& plan) {
  std::set<int64_t> lengths;
  std::set<double> depths;
  std::map<std::pair<int64_t, double>, std::vector<const AnswerRecord*>> cells;
  for (const AnswerRecord& a : plan.answers) {
    if (a.kind == TaskKind::kRecall) continue;
    lengths.insert(a.length);
    depths.insert(a.depth);
    cells[{a.length, a.depth}].push_back(&a);
  }
  const double cw = 92, ch = 42, left = 70, top = 50;
  const double width = std::max(520.0, left + cw * double(std::max<size_t>(1, lengths.size())) + 20);
  const double height = top + ch * double(std::max<size_t>(1, depths.size())) + 70;
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(width, "%.0f") + "\" height=\"" +
                    Num(height, "%.0f") + "\" viewBox=\"0 0 " + Num(width, "%.0f") + " " + Num(height, "%.0f") +
                    "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += Text(8, 18, "Retrieval accuracy, plan " + plan.spec, "font-size=\"14\" font-weight=\"bold\"");
  svg += Text(8, 34, "passkey + NIAH; rows: needle depth, columns: prompt length (tokens)", "fill=\"#555\"");
  size_t col = 0;
  for (int64_t length : lengths) {
    svg += Text(left + cw * (double(col) + 0.5), top + ch * double(depths.size()) + 16, std::to_string(length),
                "text-anchor=\"middle\"");
    size_t row = 0;
    for (double depth : depths) {
      const double x = left + cw * double(col), y = top + ch * double(row);
      if (col == 0) svg += Text(left - 6, y + ch / 2 + 4, Num(100 * depth, "%.0f") + "%", "text-anchor=\"end\"");
      const auto it = cells.find({length, depth});
      if (it != cells.end()) {
        int64_t correct = 0, tokens = 0;
        double nll = 0, distance = 0;
        for (const AnswerRecord* a : it->second) {
          correct += a->correct;
          nll += a->nll;
          tokens += a->tokens;
          distance += double(a->distance);
        }
        const double n = double(it->second.size());
        const double acc = double(correct) / n;
        const bool beyond = report.window > 0 && distance / n >= report.window;
        svg += "<rect x=\"" + Num(x + 1) + "\" y=\"" + Num(y + 1) + "\" width=\"" + Num(cw - 2) + "\" height=\"" +
               Num(ch - 2) + "\" fill=\"" + AccuracyColor(acc) + "\"" +
               (beyond ? " stroke=\"#222\" stroke-width=\"1.5\" stroke-dasharray=\"4,3\"" : "") + "/>\n";
        svg += Text(x + cw / 2, y + 18, Num(100 * acc, "%.0f") + "%", "text-anchor=\"middle\" font-weight=\"bold\"");
        svg += Text(x + cw / 2, y + 32, "loss " + Num(tokens ? nll / double(tokens) : 0, "%.2f"),
                    "text-anchor=\"middle\" fill=\"#333\"");
      }
      ++row;
    }
    ++col;
  }
  const double ly = top + ch * double(depths.size()) + 36;
  svg += Text(8, ly, "cell: accuracy (exact match), mean answer loss in nats/token", "fill=\"#555\"");
  if (report.window > 0)
    svg += Text(8, ly + 16,
                "dashed border: needle on average " + std::to_string(report.window) +
                    "+ tokens before the answer (outside the window)",
                "fill=\"#555\"");
  return svg + "</svg>\n";
}

std::string PerplexityByPositionSvg(const CompareReport& report) {
  std::vector<Series> series;
  for (const PlanReport& p : report.plans) {
    Series s{p.spec, {}};
    for (const PositionBucket& b : p.perplexity.buckets)
      if (b.count > 0) s.points.push_back({0.5 * double(b.begin + b.end - 1), b.MeanNll()});
    series.push_back(s);
  }
  return LineChart("Loss by position in the window", "position in the window (tokens)", "mean loss (nats/token)",
                   series, report.window, "window " + std::to_string(report.window));
}

std::string RecallByDistanceSvg(const CompareReport& report) {
  std::vector<Series> series;
  for (const PlanReport& p : report.plans) {
    Series s{p.spec, {}};
    for (int64_t d : report.suite.distances) {
      const Tally t = Count(
          p.answers, [d](const AnswerRecord& a) { return a.kind == TaskKind::kRecall && a.requested_distance == d; });
      if (t.tokens) s.points.push_back({double(d), t.MeanNll()});
    }
    series.push_back(s);
  }
  return LineChart("Associative recall: answer loss by distance", "distance from pair to query (tokens)",
                   "answer loss (nats/token)", series, report.window, "window " + std::to_string(report.window));
}

std::string ReportHtml(const CompareReport& report) {
  const nlohmann::json j = ReportJson(report);
  std::string html =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>swan compare: " + Escape(report.model) +
      "</title>\n<style>body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;"
      "font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child"
      "{text-align:left}th{background:#f0f0f0}.figs{display:flex;flex-wrap:wrap;gap:16px}p.note{color:#555;"
      "max-width:900px}</style></head><body>\n";
  html += "<h1>Attention plans compared</h1>\n<p>model <b>" + Escape(report.model) + "</b>, context " +
          std::to_string(report.context) + ", window split at " + std::to_string(report.window) +
          " tokens; perplexity text: " + Escape(report.text_source) + "; haystack: " + Escape(report.filler_source) +
          "; " + std::to_string(report.suite.samples) + " items per cell, seed " + std::to_string(report.suite.seed) +
          ".</p>\n<table>\n<tr><th>metric</th>";
  for (const PlanReport& p : report.plans) html += "<th>" + Escape(p.spec) + "</th>";
  html += "</tr>\n";
  for (const auto& row : j["table"]) {
    html += "<tr><td>" + Escape(row["metric"].get<std::string>()) + "</td>";
    for (const auto& cell : row["cells"]) html += "<td>" + Escape(cell.get<std::string>()) + "</td>";
    html += "</tr>\n";
  }
  html +=
      "</table>\n<p class=\"note\">Accuracy is exact match of the answer under greedy decoding (teacher-forced: "
      "every answer token is the model's top choice); answer loss is the mean loss of the answer tokens in "
      "nats. &quot;Needle &lt; W back&quot; counts answers whose needle is fewer than W tokens before the "
      "token that predicts the answer, i.e. inside a window of W keys in every layer.</p>\n";
  html += "<h2>Loss by position and recall by distance</h2>\n<div class=\"figs\">\n" + PerplexityByPositionSvg(report) +
          RecallByDistanceSvg(report) + "</div>\n<h2>Retrieval by depth and length</h2>\n<div class=\"figs\">\n";
  for (const PlanReport& p : report.plans) html += NiahHeatmapSvg(report, p);
  html += "</div>\n";
  if (!report.provenance.empty())
    html += "<h2>How this was measured</h2>\n<pre>" + Escape(report.provenance) + "</pre>\n";
  html += "</body></html>\n";
  return html;
}

}  // namespace swan
