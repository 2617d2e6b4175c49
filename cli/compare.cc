// `swan compare`: one table of what each attention plan costs and loses,
// from the task suite in eval/ and a small benchmark, with JSON, SVG and
// HTML output.
#include "cli/compare.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "cli/args.h"
#include "cli/input_files.h"
#include "cli/option_groups.h"
#include "cli/options.h"
#include "eval/compare.h"
#include "eval/recall_suite.h"
#include "eval/report.h"
#include "eval/sample_text.h"
#include "model/model.h"
#include "ops/cpu_report.h"
#include "model/gguf_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "util/threads.h"

namespace swan::cli {
namespace {

// The command's options, declared once: its parsing and --help come from them.
OptionSet Options() {
  OptionSet options(
      "usage: swan compare -m DIR [--attn 'PLAN;PLAN;...'] [--window W] [-f TEXT] [--filler FILE]\n"
      "                    [-c CTX] [--lengths L,..] [--depths D,..] [--distances D,..] [--samples N]\n"
      "                    [--seed S] [--limit N] [--bench-depths D,..] [--batch B] [--kv TYPE]\n"
      "                    [--json] [--html FILE] [--svg DIR] [--quiet] [-t N]\n"
      "Runs the task suite and a small benchmark under each attention plan and prints one table:\n"
      "perplexity inside and beyond the window, bits per byte, passkey and needle-in-a-haystack\n"
      "accuracy with the needle inside and outside the window, associative recall by distance,\n"
      "prefill and decode tokens/s and KV cache MiB at several depths.\n");
  options.Add(ModelOption(" with a tokenizer"))
      .Add(PlanListOption(": default 'full;swa:W;swa:W,sinks:4;hybrid:3:1'"))
      .Add({{"--window"},
            "W",
            "window of the default plans, and of any hybrid plan given without window:W (default CTX/8)"})
      .Add({{"-f"},
            "TEXT",
            "text file for perplexity (default: text sampled from the model itself under full attention, "
            "seeded; see --text-tokens)"})
      .Add({{"--text-tokens"}, "N", "length of the sampled text (default 8 * CTX)"})
      .Add({{"--filler"}, "FILE", "haystack sentences from a text file (default: RULER's noise sentences)"})
      .Add({{"-c"}, "CTX", "longest prompt and perplexity window (default max_position_embeddings)"})
      .Add({{"--lengths"}, "LIST", "prompt lengths of the retrieval grid (default CTX/4, CTX/2, 3CTX/4, CTX)"})
      .Add({{"--depths"}, "LIST", "needle depths in percent (default 0,25,50,75,100)"})
      .Add({{"--distances"}, "LIST", "recall distances in tokens (default W/4, W/2, 3W/4, W, 3W/2, 2W, 4W up to CTX)"})
      .Add({{"--samples"}, "N", "items per grid cell and per distance (default 3)"})
      .Add({{"--seed"}, "S", "seed of every generated item and text (default 1)"})
      .Add({{"--limit"}, "N", "at most N items per task and 2 perplexity windows: a quick run"})
      .Add({{"--bench-depths"}, "L", "prompt lengths the speed and KV figures are measured at (default CTX/4,CTX)"})
      .Add(PrefillChunkOption(128, "window rings hold W-1+B slots"))
      .Add(KvOption())
      .Add(DeviceOption())
      .Add(JsonOption("the report", " instead of the table"))
      .Add({{"--html"}, "FILE", "write a self-contained HTML report (table and pictures)"})
      .Add({{"--svg"}, "DIR", "write the pictures as SVG files into DIR"})
      .Add(QuietOption())
      .Add(ThreadsOption())
      .Text(
          "Tasks: passkey retrieval (Landmark-attention format), NIAH single needle, multi-key,\n"
          "multi-value and multi-query (RULER), multi-query associative recall; each answer is scored\n"
          "by exact match under greedy decoding, computed by teacher forcing in one forward pass.\n");
  return options;
}

std::vector<int64_t> Positive(const Args& args, const std::string& name, std::vector<long long> fallback) {
  std::vector<int64_t> out;
  for (long long v : args.GetIntList(name, fallback)) {
    if (v <= 0) throw std::invalid_argument(name + ": values must be positive");
    out.push_back(v);
  }
  return out;
}

void WriteText(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// Checked before any work: a bad output path found after the run loses it.
void CheckOutputPaths(const Args& args) {
  if (args.Has("--html")) {
    const std::string path = args.Get("--html", "");
    std::ofstream probe(path, std::ios::binary | std::ios::app);  // creates, never truncates
    if (!probe) throw std::runtime_error("--html " + path + ": cannot write there");
  }
  if (args.Has("--svg")) {
    const std::filesystem::path dir = args.Get("--svg", "");
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error || !std::filesystem::is_directory(dir) || access(dir.c_str(), W_OK) != 0)
      throw std::runtime_error("--svg " + dir.string() + ": cannot write there" +
                               (error ? " (" + error.message() + ")" : std::string()));
  }
}

// The plans to compare: --attn, or full, a window of --window (default
// CTX/8), the same with 4 sinks and a 3:1 hybrid of that window.
std::vector<std::string> PlanSpecs(const Args& args, int32_t ctx) {
  const int32_t window = int32_t(args.GetInt("--window", std::max(1, ctx / 8)));
  if (window <= 0) throw std::invalid_argument("--window must be positive");
  const std::string w = std::to_string(window);
  std::vector<std::string> specs =
      SplitPlanList(args.Get("--attn", "full;swa:" + w + ";swa:" + w + ",sinks:4;hybrid:3:1"));
  for (std::string& s : specs)
    if (s.rfind("hybrid", 0) == 0 && s.find("window:") == std::string::npos) s += ",window:" + w;
  return specs;
}

// Where a report's figures come from: the command, swan's build, the CPU
// and its paths, the threads.
void AddProvenance(nlohmann::json* j, const Args& args) {
  (*j)["provenance"] = {{"command", "swan compare " + args.CommandLine()},
                        {"swan", std::string("built ") + __DATE__},
                        {"cpu", CpuReport()},
                        {"threads", ThreadLimit()}};
}

// The same, as text for an HTML report.
std::string ProvenanceText(const Args& args) {
  return "swan compare " + args.CommandLine() + "\nswan built " + __DATE__ + ", " + std::to_string(ThreadLimit()) +
         " threads\n" + CpuReport();
}

// A model trained on recall tasks in token-id space: its own task under
// each plan, by distance bin (eval/recall_suite.h), and what each costs.
CompareOutput CompareRecallModel(const Args& args, const std::string& dir, const LanguageModel& model,
                                 const std::function<void(const std::string&)>& log) {
  RecallSuiteOptions options;
  options.task = LoadRecallTask(dir);
  options.task.context = int32_t(args.GetInt("-c", options.task.context));
  ValidateRecallOptions(options.task);
  const int32_t ctx = options.task.context;
  options.sequences = args.GetInt("--samples", 64);
  if (args.Has("--limit")) options.sequences = std::min<int64_t>(options.sequences, args.GetPositiveInt("--limit", 0));
  if (options.sequences <= 0) throw std::invalid_argument("--samples must be positive");
  options.seed = uint64_t(args.GetInt("--seed", int64_t(options.seed)));
  if (args.Has("--distances")) options.edges = ParseRecallBins(args.Get("--distances", ""));
  for (long long l : args.GetIntList("--lengths", {})) options.lengths.push_back(l);
  const std::vector<std::string> specs = PlanSpecs(args, ctx);
  std::vector<AttentionPlan> plans;
  for (const std::string& s : specs) plans.push_back(model.ResolvePlan(s));
  // One set of bins for every plan: those of a window of --window on every
  // layer ([1,W/4), [W/4,W), [W, layers*(W-1)), beyond), so the columns compare.
  const int32_t window = int32_t(args.GetInt("--window", std::max(1, ctx / 8)));
  if (options.edges.empty()) options.edges = DefaultRecallBins(model.ResolvePlan("swa:" + std::to_string(window)), ctx);
  KvCacheOptions kv;
  kv.max_chunk = int32_t(args.GetInt("--batch", 128));
  if (kv.max_chunk <= 0) throw std::invalid_argument("--batch must be positive");
  kv.type = KvTypeFromString(args.Get("--kv", "f32"));
  std::vector<RecallPlanResult> results;
  for (size_t i = 0; i < plans.size(); ++i) {
    log("[compare] plan " + std::to_string(i + 1) + "/" + std::to_string(plans.size()) + " " + specs[i] + " ...");
    results.push_back(ScoreRecallSuite(model, plans[i], specs[i], options, kv));
    // What the plan costs at the task's context (random tokens: timing does
    // not depend on them).
    CostOptions cost;
    cost.depths = {0};
    cost.prompt_tokens = ctx;
    cost.kv = kv;
    const CostPoint point = MeasureCost(model, plans[i], cost).front();
    results.back().kv_bytes = point.kv_bytes;
    results.back().prefill_tokens_per_s = point.prefill_tokens_per_s;
    results.back().decode_tokens_per_s = point.decode_tokens_per_s;
    results.back().prefill_spread = point.prefill_spread;
    results.back().decode_spread = point.decode_spread;
  }
  const std::string svg = RecallSuiteSvg(results, options);
  if (args.Has("--svg")) {
    const std::filesystem::path out = args.Get("--svg", "");
    std::filesystem::create_directories(out);
    WriteText(out / "recall_by_distance.svg", svg);
  }
  const std::string table = RecallSuiteTable(results, options);
  if (args.Has("--html"))
    WriteText(args.Get("--html", ""), "<!doctype html><html><head><meta charset='utf-8'><title>swan compare: " + dir +
                                          "</title></head><body><h1>swan compare: " + dir + "</h1><pre>" + table +
                                          "</pre>" + svg + "<pre>" + ProvenanceText(args) + "</pre></body></html>\n");
  CompareOutput out;
  out.json = RecallSuiteJson(results, options);
  out.json["model"] = dir;
  AddProvenance(&out.json, args);
  char head[512];
  std::snprintf(head, sizeof head,
                "model %s: %s recall in token ids, context %d, %lld sequences per plan (seed %llu)\n\n", dir.c_str(),
                RecallTaskName(options.task.task), ctx, (long long)options.sequences, (unsigned long long)options.seed);
  out.text =
      head + table + "accuracy: every answer token the greedy choice, by key->query distance (items in parentheses)\n";
  return out;
}

// A text model: the task suite and perplexity under each plan.
CompareOutput CompareTextModel(const Args& args, const std::string& dir, const LanguageModel& loaded,
                               const std::function<void(const std::string&)>& log) {
  const LanguageModel* model = &loaded;
  const Tokenizer tokenizer = LoadModelTokenizer(dir);
  const ModelConfig& config = model->config();
  CompareReport report;
  report.model = dir;
  report.context =
      int32_t(args.GetInt("-c", config.max_position_embeddings > 0 ? config.max_position_embeddings : 4096));
  const int32_t ctx = report.context;
  if (ctx < 16) throw std::invalid_argument("-c must be at least 16");
  const int32_t window = int32_t(args.GetInt("--window", std::max(1, ctx / 8)));
  const std::vector<std::string> specs = PlanSpecs(args, ctx);
  std::vector<AttentionPlan> plans;
  for (const std::string& s : specs) plans.push_back(model->ResolvePlan(s));  // errors before any work

  KvCacheOptions kv;
  kv.max_chunk = int32_t(args.GetInt("--batch", 128));
  if (kv.max_chunk <= 0) throw std::invalid_argument("--batch must be positive");
  kv.type = KvTypeFromString(args.Get("--kv", "f32"));
  const int64_t limit = args.GetPositiveInt("--limit", 0);
  const int32_t bos = tokenizer.bos_id() >= 0 ? tokenizer.bos_id() : config.bos_token_id;

  // The suite, made once for every plan.
  SuiteOptions& suite = report.suite;
  suite.lengths = Positive(args, "--lengths", {ctx / 4, ctx / 2, ctx * 3 / 4, ctx});
  for (long long d : args.GetIntList("--depths", {0, 25, 50, 75, 100})) {
    if (d < 0 || d > 100) throw std::invalid_argument("--depths: percentages from 0 to 100");
    suite.depths.push_back(double(d) / 100.0);
  }
  std::vector<long long> default_distances;
  for (long long d : {window / 4, window / 2, window * 3 / 4, window, window * 3 / 2, window * 2, window * 4})
    if (d >= 1 && d <= ctx - 80 && (default_distances.empty() || d > default_distances.back()))
      default_distances.push_back(d);
  suite.distances = Positive(args, "--distances", default_distances);
  suite.samples = int32_t(args.GetInt("--samples", 3));
  if (suite.samples <= 0) throw std::invalid_argument("--samples must be positive");
  suite.seed = uint64_t(args.GetInt("--seed", 1));
  suite.limit = limit;
  for (int64_t l : suite.lengths)
    if (l > ctx)
      throw std::invalid_argument("--lengths: " + std::to_string(l) + " is longer than the context " +
                                  std::to_string(ctx));

  const PieceEncoder encoder(tokenizer);
  const Filler filler =
      args.Has("--filler") ? TextFiller(encoder, ReadWholeFile(args.Get("--filler", ""))) : NoiseFiller(encoder);
  report.filler_source = args.Has("--filler") ? args.Get("--filler", "") : "noise sentences (RULER)";
  const TaskContext task_context{&encoder, &filler, bos};
  log("[compare] making the task items ...");
  const std::vector<TaskItem> items = MakeSuiteItems(task_context, suite);

  std::vector<int32_t> text;
  if (args.Has("-f")) {
    EncodeOptions plain;
    plain.add_special_tokens = false;
    plain.parse_special = false;
    text = tokenizer.Encode(ReadWholeFile(args.Get("-f", "")), plain);
    report.text_source = args.Get("-f", "");
  } else {
    SampleTextOptions so;
    so.tokens = args.GetInt("--text-tokens", limit > 0 ? 2 * ctx : 8 * ctx);
    so.context = ctx;
    so.bos_id = bos;
    so.seed = suite.seed;
    log("[compare] sampling " + std::to_string(so.tokens) + " tokens of text from the model ...");
    text = SampleText(*model, so);
    report.text_source = std::to_string(text.size()) + " tokens sampled from the model (full attention, T=1, seed " +
                         std::to_string(suite.seed) + ")";
  }

  CompareOptions co;
  co.context = ctx;
  co.window = window;
  co.bos_id = bos;
  co.quick = limit > 0;
  co.cost_contexts = Positive(args, "--bench-depths", {ctx / 4, ctx});
  co.kv = kv;
  co.progress = log;
  RunComparison(report, *model, tokenizer, plans, specs, text, items, co);

  if (args.Has("--svg")) {
    const std::filesystem::path out = args.Get("--svg", "");
    std::filesystem::create_directories(out);
    WriteText(out / "perplexity_by_position.svg", PerplexityByPositionSvg(report));
    WriteText(out / "recall_by_distance.svg", RecallByDistanceSvg(report));
    for (size_t i = 0; i < report.plans.size(); ++i)
      WriteText(out / ("retrieval_grid_" + std::to_string(i + 1) + ".svg"), NiahHeatmapSvg(report, report.plans[i]));
  }
  report.provenance = ProvenanceText(args);
  if (args.Has("--html")) WriteText(args.Get("--html", ""), ReportHtml(report));
  CompareOutput out;
  out.json = ReportJson(report);
  AddProvenance(&out.json, args);
  char head[512];
  std::snprintf(head, sizeof head, "model %s, context %d, %zu task items per plan, window split at %d\n", dir.c_str(),
                ctx, items.size(), report.window);
  out.text = head + ("perplexity text: " + report.text_source + "\n\n" + ReportTable(report)) +
             "\naccuracy: exact match under greedy decoding (answers counted in parentheses); loss: mean nats per\n"
             "answer token. 'needle < W back': the needle is fewer than W tokens before the answer.\n";
  return out;
}

CompareOutput Compare(const Args& args, const LanguageModel& model,
                      const std::function<void(const std::string&)>& log) {
  CheckOutputPaths(args);
  const std::string dir = args.Get("-m", "");
  return HasRecallTask(dir) ? CompareRecallModel(args, dir, model, log) : CompareTextModel(args, dir, model, log);
}

}  // namespace

CompareOutput ComparePlans(const std::vector<std::string>& words, const LanguageModel& model,
                           const std::function<void(const std::string&)>& progress) {
  const Args args = Options().Parse(words);
  if (!args.Has("-m")) throw std::invalid_argument("-m DIR is required: the directory the model was loaded from");
  ApplyThreadsOption(args);
  return Compare(
      args, model, progress ? progress : [](const std::string&) {});
}

int RunCompare(const std::vector<std::string>& words) {
  const OptionSet flags = Options();
  const Args args = flags.Parse(words);
  if (HelpAsked(args)) {
    std::printf("%s", flags.Help().c_str());
    return 0;
  }
  ApplyThreadsOption(args);
  if (!args.Has("-m")) throw std::invalid_argument("-m DIR is required\n" + flags.Help());
  CheckOutputPaths(args);  // before the model loads
  const bool quiet = args.Has("--quiet");
  auto log = [quiet](const std::string& s) {
    if (!quiet) std::fprintf(stderr, "\r%-100s", s.c_str()), std::fflush(stderr);
  };
  RequireDeviceKv(args, KvTypeFromString(args.Get("--kv", "f32")));
  std::unique_ptr<LanguageModel> model = LoadModel(args.Get("-m", ""), LoadOptionsFrom(args));
  const CompareOutput out = Compare(args, *model, log);
  if (!quiet) std::fprintf(stderr, "\r%-100s\r", "");
  std::printf("%s", args.Has("--json") ? (out.json.dump(2) + "\n").c_str() : out.text.c_str());
  return 0;
}

}  // namespace swan::cli
