// The comparison report from hand-made results: the table's inside/beyond
// split, the JSON cells, and pictures and a page with nothing outside them.
#include "eval/report.h"

#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

namespace swan {
namespace {

CompareReport MakeReport() {
  CompareReport r;
  r.model = "m";
  r.context = 8;
  r.window = 4;
  r.suite.lengths = {6, 8};
  r.suite.depths = {0.0, 1.0};
  r.suite.distances = {2, 6};
  for (const char* spec : {"full", "swa:4<x>"}) {
    PlanReport p;
    p.spec = spec;
    p.window = spec[0] == 's' ? 4 : 0;
    PerplexityResult& ppl = p.perplexity;
    ppl.context = 8;
    ppl.nll_by_pos = {0, 1, 1, 1, 1, 2, 2, 2};
    ppl.count_by_pos = {0, 1, 1, 1, 1, 1, 1, 1};
    ppl.nll_sum = 10;
    ppl.tokens_scored = 7;
    ppl.buckets = {{0, 4, 3, 3}, {4, 8, 7, 4}};
    // Passkey: one answer inside the window (distance 2), one beyond (6).
    p.answers.push_back({TaskKind::kPasskey, 6, 0.0, 0, 2, true, 0.5, 1});
    p.answers.push_back({TaskKind::kPasskey, 8, 1.0, 0, 6, spec[0] == 'f', 1.5, 1});
    p.answers.push_back({TaskKind::kNiahSingle, 8, 0.0, 0, 6, false, 3.0, 2});
    p.answers.push_back({TaskKind::kRecall, 8, 0.0, 2, 2, true, 0.1, 1});
    p.answers.push_back({TaskKind::kRecall, 8, 0.0, 6, 7, false, 2.0, 1});
    CostPoint cost;
    cost.prompt = 8;
    cost.prefill_tokens_per_s = 1000;
    cost.decode_tokens_per_s = 100;
    cost.kv_bytes = 2.0 * 1024 * 1024;
    p.cost.push_back(cost);
    r.plans.push_back(p);
  }
  return r;
}

TEST(Report, TableSplitsAtTheWindow) {
  const std::string table = ReportTable(MakeReport());
  EXPECT_NE(table.find("perplexity, positions 1-4"), std::string::npos) << table;
  EXPECT_NE(table.find("perplexity, positions 5-7"), std::string::npos);
  EXPECT_NE(table.find("passkey, needle < 4 back"), std::string::npos);
  EXPECT_NE(table.find("recall @ 6 tokens"), std::string::npos);
  EXPECT_NE(table.find("KV MiB @ 8"), std::string::npos);
  EXPECT_NE(table.find("2.000"), std::string::npos);  // 2 MiB
  const nlohmann::json j = ReportJson(MakeReport());
  ASSERT_EQ(j["plans"].size(), 2u);
  EXPECT_NEAR(j["plans"][0]["perplexity"]["inside_window"].get<double>(), std::exp(1.0), 1e-9);
  EXPECT_NEAR(j["plans"][0]["perplexity"]["beyond_window"].get<double>(), std::exp(2.0), 1e-9);
  // Beyond the window the full plan finds the passkey, the window plan does not.
  for (const auto& row : j["table"]) {
    if (row["metric"] == "passkey, needle >= 4 back") {
      EXPECT_EQ(row["cells"][0], "100% (1)");
      EXPECT_EQ(row["cells"][1], "0% (1)");
    }
  }
  EXPECT_EQ(j["plans"][1]["recall"].size(), 2u);
}

TEST(Report, PicturesAndPageAreSelfContained) {
  CompareReport r = MakeReport();
  const std::string heat = NiahHeatmapSvg(r, r.plans[1]);
  EXPECT_EQ(heat.rfind("<svg", 0), 0u);
  EXPECT_NE(heat.find("</svg>"), std::string::npos);
  EXPECT_NE(heat.find("swa:4&lt;x&gt;"), std::string::npos);  // escaped
  EXPECT_EQ(heat.find("swa:4<x>"), std::string::npos);
  EXPECT_NE(heat.find("stroke-dasharray"), std::string::npos);  // a cell beyond the window
  const std::string ppl = PerplexityByPositionSvg(r);
  EXPECT_NE(ppl.find("<polyline"), std::string::npos);
  EXPECT_NE(ppl.find("window 4"), std::string::npos);
  r.provenance = "swan compare -m <dir>\nCPU: test";
  const std::string html = ReportHtml(r);
  EXPECT_NE(html.find("<pre>swan compare -m &lt;dir&gt;\nCPU: test</pre>"), std::string::npos);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  size_t svgs = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) ++svgs;
  EXPECT_EQ(svgs, 4u);  // two charts and one grid per plan
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

}  // namespace
}  // namespace swan
