// The routing heatmap of `swan route-stats --svg`, written as plain SVG:
// layers as rows, tokens binned into at most ~1000 columns, each cell
// colored by the share of its tokens routed to full attention.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "eval/route_stats.h"

namespace swan {
namespace {

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  return out;
}

std::string F(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

std::string Label(double x, double y, const std::string& text, const std::string& attrs = "") {
  return "<text x=\"" + F(x) + "\" y=\"" + F(y) + "\"" + (attrs.empty() ? "" : " " + attrs) + ">" + XmlEscape(text) +
         "</text>\n";
}

std::string Rect(double x, double y, double w, double h, const std::string& fill, const std::string& attrs = "") {
  return "<rect x=\"" + F(x) + "\" y=\"" + F(y) + "\" width=\"" + F(w) + "\" height=\"" + F(h) + "\" fill=\"" + fill +
         "\"" + (attrs.empty() ? "" : " " + attrs) + "/>\n";
}

std::string Line(double x1, double y1, double x2, double y2, const std::string& attrs) {
  return "<line x1=\"" + F(x1) + "\" y1=\"" + F(y1) + "\" x2=\"" + F(x2) + "\" y2=\"" + F(y2) + "\" " + attrs + "/>\n";
}

constexpr int kLevels = 64;  // color steps: neighbouring cells of one step merge into one rect

// Light (window) to dark blue (full attention), by level 0..kLevels.
std::string LevelColor(int level) {
  const double t = double(level) / kLevels;
  auto mix = [t](int a, int b) { return int(std::lround(a + (b - a) * t)); };
  char buf[16];
  std::snprintf(buf, sizeof(buf), "#%02x%02x%02x", mix(0xf7, 0x08), mix(0xfb, 0x30), mix(0xff, 0x6b));
  return buf;
}

// A round tick step (1, 2 or 5 times a power of ten) giving at most ~8 ticks.
int64_t TickStep(int64_t n) {
  int64_t step = 1;
  for (;;)
    for (int64_t m : {1, 2, 5}) {
      if (n / (step * m) <= 8) return step * m;
      if (m == 5) step *= 10;
    }
}

}  // namespace

std::vector<double> BinnedFullRatio(std::span<const uint8_t> gates, int64_t columns) {
  const int64_t n = int64_t(gates.size());
  const int64_t bins = std::min(n, std::max<int64_t>(1, columns));
  std::vector<double> ratio(static_cast<size_t>(bins), 0.0);  // [bins]
  for (int64_t b = 0; b < bins; ++b) {
    const int64_t begin = b * n / bins, end = (b + 1) * n / bins;
    int64_t full = 0;
    for (int64_t t = begin; t < end; ++t) full += gates[size_t(t)] != 0;
    ratio[size_t(b)] = double(full) / double(end - begin);
  }
  return ratio;
}

std::string RouteHeatmapSvg(const RouteHeatmap& h) {
  if (h.rows.empty() || h.rows.size() != h.row_labels.size())
    throw std::invalid_argument("route heatmap: one label per row, at least one row");
  const int64_t n = int64_t(h.rows[0].size());
  for (const auto& row : h.rows)
    if (int64_t(row.size()) != n) throw std::invalid_argument("route heatmap: rows of different lengths");
  const int64_t bins = std::max<int64_t>(1, std::min(n, h.max_columns));
  const double per_bin = n > 0 ? double(n) / double(bins) : 0.0;

  size_t label_chars = 0;
  for (const std::string& l : h.row_labels) label_chars = std::max(label_chars, l.size());
  const double left = 16 + 6.5 * double(label_chars), top = 74, plot_w = 1000, right = 70;
  const double row_h = std::clamp(420.0 / double(h.rows.size()), 8.0, 26.0);
  const double plot_h = row_h * double(h.rows.size());
  const double width = left + plot_w + right, height = top + plot_h + 130;
  const double col_w = plot_w / double(bins);
  auto x_of = [&](double token) { return left + (n > 0 ? token / double(n) * plot_w : 0.0); };

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + F(width) + "\" height=\"" + F(height) +
                    "\" viewBox=\"0 0 " + F(width) + " " + F(height) +
                    "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += Rect(0, 0, width, height, "white");
  svg += Label(12, 22, h.title, "font-size=\"15\" font-weight=\"bold\"");
  svg += Label(12, 40, h.subtitle, "fill=\"#444\"");
  svg += Label(left + plot_w + 8, top - 6, "full %", "font-weight=\"bold\"");

  // Cells: runs of neighbouring bins with the same color level are one rect.
  svg += "<g shape-rendering=\"crispEdges\">\n";
  for (size_t r = 0; r < h.rows.size(); ++r) {
    const double y = top + row_h * double(r);
    const std::vector<double> ratio = BinnedFullRatio(h.rows[r], bins);
    int64_t full = 0;
    for (uint8_t g : h.rows[r]) full += g != 0;
    for (size_t b = 0; b < ratio.size();) {
      const int level = int(std::lround(ratio[b] * kLevels));
      size_t e = b + 1;
      while (e < ratio.size() && int(std::lround(ratio[e] * kLevels)) == level) ++e;
      svg += Rect(left + col_w * double(b), y, col_w * double(e - b), row_h, LevelColor(level));
      b = e;
    }
    svg += Label(left - 6, y + row_h / 2 + 4, h.row_labels[r], "text-anchor=\"end\"");
    char pct[32];
    std::snprintf(pct, sizeof(pct), "%.1f%%", n ? 100.0 * double(full) / double(n) : 0.0);
    svg += Label(left + plot_w + 8, y + row_h / 2 + 4, pct);
  }
  svg += "</g>\n";
  svg += Rect(left, top, plot_w, plot_h, "none", "stroke=\"#555\"");

  for (int64_t b : h.boundaries)
    if (b > 0 && b < n)
      svg += Line(x_of(double(b)), top, x_of(double(b)), top + plot_h, "stroke=\"#999\" stroke-width=\"0.7\"");
  for (size_t i = 0; i < h.markers.size(); ++i) {
    const double x = x_of(double(h.markers[i].first) + 0.5);
    svg += Line(x, top - 4, x, top + plot_h, "stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"4,3\"");
    // Labels alternate between two heights so that close markers stay readable.
    svg += Label(x, top - 10 - 13 * double(i % 2), h.markers[i].second, "text-anchor=\"middle\" fill=\"#d62728\"");
  }

  // The token axis.
  const double axis_y = top + plot_h;
  const int64_t step = TickStep(std::max<int64_t>(1, n));
  for (int64_t t = 0; t <= n; t += step) {
    svg += Line(x_of(double(t)), axis_y, x_of(double(t)), axis_y + 5, "stroke=\"#555\"");
    svg += Label(x_of(double(t)), axis_y + 17, std::to_string(t), "text-anchor=\"middle\"");
  }
  char axis[160];
  std::snprintf(axis, sizeof(axis), "token (%lld tokens; one column = %.3g token%s)", (long long)n, per_bin,
                per_bin == 1.0 ? "" : "s");
  svg += Label(left + plot_w / 2, axis_y + 34, axis, "text-anchor=\"middle\"");
  svg += Label(14, top + plot_h / 2, "layer",
               "text-anchor=\"middle\" transform=\"rotate(-90 14 " + F(top + plot_h / 2) + ")\"");

  // Legend: the color scale, then what the lines mean.
  const double ly = axis_y + 52;
  svg += Label(left, ly + 12, "share of the column's tokens routed to full attention:");
  const double sx = left + 300, sw = 24;
  for (int i = 0; i <= 10; ++i) {
    svg += Rect(sx + sw * i, ly, sw, 14, LevelColor(i * kLevels / 10), "stroke=\"#aaa\" stroke-width=\"0.5\"");
    if (i % 5 == 0) svg += Label(sx + sw * i + sw / 2, ly + 28, std::to_string(i * 10) + "%", "text-anchor=\"middle\"");
  }
  svg += Label(sx + sw * 11 + 8, ly + 12, "(0% = window branch only, 100% = full attention)", "fill=\"#444\"");
  double note_y = ly + 48;
  if (!h.boundaries.empty() && !h.boundary_note.empty()) {
    svg += Line(left, note_y - 4, left + 18, note_y - 4, "stroke=\"#999\"");
    svg += Label(left + 24, note_y, h.boundary_note, "fill=\"#444\"");
    note_y += 16;
  }
  if (!h.markers.empty()) {
    svg += Line(left, note_y - 4, left + 18, note_y - 4, "stroke=\"#d62728\" stroke-dasharray=\"4,3\"");
    svg += Label(left + 24, note_y, h.marker_note.empty() ? "marked tokens" : h.marker_note, "fill=\"#444\"");
  }
  return svg + "</svg>\n";
}

namespace {

std::string RowLabel(int32_t layer, const Span& span) {
  return "layer " + std::to_string(layer) + " (W " + std::to_string(span.window) +
         (span.sinks ? " + " + std::to_string(span.sinks) + " sinks" : "") + ")";
}

}  // namespace

RouteHeatmap TextRouteHeatmap(const TextRouteStats& s, const std::string& title) {
  RouteHeatmap h;
  h.title = title;
  char sub[200];
  std::snprintf(sub, sizeof(sub),
                "%lld windows of up to %d tokens; %.1f%% of the routed token-layer pairs use full attention",
                (long long)s.windows, s.context, 100.0 * s.Overall().Ratio());
  h.subtitle = sub;
  for (size_t k = 0; k < s.layers.size(); ++k) {
    h.row_labels.push_back(RowLabel(s.layers[k], s.spans[k]));
    h.rows.push_back(s.gates[k]);
  }
  h.boundaries = s.window_starts;
  h.boundary_note = "start of an evaluation window (each runs from an empty cache)";
  return h;
}

RouteHeatmap PasskeyRouteHeatmap(const PasskeyRouteStats& s, const std::string& title) {
  RouteHeatmap h;
  h.title = title;
  h.subtitle = "one passkey item of " + std::to_string(s.length) +
               " tokens; the answer needs the key, which the window branch of a layer sees only if it "
               "lies within W tokens";
  for (size_t k = 0; k < s.layers.size(); ++k) {
    h.row_labels.push_back(RowLabel(s.layers[k].layer, s.layers[k].span));
    h.rows.push_back(s.example_gates[k]);
  }
  h.markers = {{s.example_key, "key"}, {s.example_question, "question end"}};
  h.marker_note = "key: its first digit; question end: the first token whose next token is the key";
  return h;
}

}  // namespace swan
