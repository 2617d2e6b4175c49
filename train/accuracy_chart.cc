#include "train/accuracy_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

namespace swan {

std::string AccuracyChartSvg(const AccuracyChart& c, const std::vector<AccuracySeries>& series) {
  const double W = 720, H = 420, left = 60, right = 200, top = 40, bottom = 50;
  const double x_max = std::max(c.x_max, c.log_x ? 2.0 : 1.0);
  auto X = [&](double x) {
    const double f = c.log_x ? std::log(std::max(x, 1.0)) / std::log(x_max) : x / x_max;
    return left + (W - left - right) * f;
  };
  auto Y = [&](double acc) { return top + (H - top - bottom) * (1 - acc); };
  const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"};
  std::ostringstream s;
  s.precision(5);
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
    << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' "
       "fill='white'/>\n"
    << "<text x='" << left << "' y='20' font-size='14'>" << c.title << "</text>\n"
    << "<line x1='" << left << "' y1='" << H - bottom << "' x2='" << W - right << "' y2='" << H - bottom
    << "' stroke='black'/>\n<line x1='" << left << "' y1='" << top << "' x2='" << left << "' y2='" << H - bottom
    << "' stroke='black'/>\n";
  for (int i = 0; i <= 4; ++i) s << "<text x='20' y='" << Y(i / 4.0) + 4 << "'>" << 25 * i << "%</text>\n";
  if (c.log_x) {
    for (double x = 1; x <= x_max; x *= 4)
      s << "<text x='" << X(x) - 8 << "' y='" << H - bottom + 18 << "'>" << int64_t(x) << "</text>\n";
  } else {
    for (int i = 0; i <= 4; ++i)
      s << "<text x='" << X(x_max * i / 4) - 10 << "' y='" << H - bottom + 18 << "'>" << int64_t(x_max * i / 4)
        << "</text>\n";
  }
  s << "<text x='" << (W - right) / 2 << "' y='" << H - 10 << "'>" << c.x_label << "</text>\n";
  for (size_t i = 0; i < c.chances.size(); ++i) {
    s << "<line x1='" << left << "' y1='" << Y(c.chances[i]) << "' x2='" << W - right << "' y2='" << Y(c.chances[i])
      << "' stroke='gray' stroke-dasharray='4,3'/>\n";
    if (i == 0) s << "<text x='" << W - right + 8 << "' y='" << Y(c.chances[i]) + 4 << "' fill='gray'>chance</text>\n";
  }
  for (size_t i = 0; i < series.size(); ++i) {
    const char* color = colors[i % 6];
    s << "<polyline fill='none' stroke='" << color << "' stroke-width='1.5' points='";
    for (const auto& [x, acc] : series[i].points) s << X(x) << "," << Y(acc) << " ";
    s << "'/>\n<text x='" << W - right + 8 << "' y='" << top + 16 * double(i) << "' fill='" << color << "'>"
      << series[i].label << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace swan
