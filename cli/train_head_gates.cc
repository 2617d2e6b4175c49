// `swan train --head-gates`: DuoAttention's gates (train/head_gates.h) on a
// frozen model, binarized at a share into the heads file of a per-head plan.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/option_groups.h"
#include "cli/options.h"
#include "eval/passkey_source.h"
#include "eval/recall_suite.h"
#include "eval/retrieval_heads.h"
#include "train/head_gates.h"
#include "train/recall_data.h"

namespace swan::cli {
namespace {

// The command's options, declared once: its parsing and --help come from them.
OptionSet Options() {
  OptionSet options(
      "usage: swan train --head-gates -m DIR --select SHARE --out HEADS.json [options]\n"
      "Learns which KV heads need every key (DuoAttention): one gate a per layer and KV head\n"
      "mixes a * full attention + (1 - a) * a window of W + S sinks; with the model frozen, the\n"
      "gates (from 1) minimize the distance between the final hidden states under the mix and\n"
      "under full attention on the answer queries of synthetic retrieval items, + lambda * sum(a).\n"
      "The SHARE of KV heads with the highest gates stay full.\n");
  options.Add({{"--head-gates"}, "", "selects this command (without it, swan train trains a model)"})
      .Add(ModelOptionFor(
          "a model trained on recall in token ids (DIR/recall.json: its task's sequences, another seed than "
          "training's), or a text model (passkey items in noise at random depths, LENGTH tokens long)"))
      .Add({{"--select"},
            "SHARE",
            "the share of the model's KV heads kept full (0 < SHARE <= 1, rounded up); a list (0.25,0.5) "
            "binarizes the same gates at each share"})
      .Add({{"--out"},
            "FILE",
            "the heads file: run the model with --attn 'full,window:W,sinks:S,heads:FILE'; with a list of shares "
            "FILE holds {share}, replaced by each (heads_{share}.json)"})
      .Add({{"--window"}, "W", "the other heads' window (default 64)"})
      .Add({{"--sinks"}, "S", "their sinks (default 4)"})
      .Add({{"--steps"}, "N", "Adam steps (default 200)"})
      .Add({{"--batch"}, "B", "sequences per step (default 8)"})
      .Add({{"--lr"}, "LR", "the gates' learning rate (default 0.02)"})
      .Add({{"--lambda"}, "L", "the L1 weight on the gates (default 0.05)"})
      .Add({{"--seed"}, "S", "the items' seed (default 1)"})
      .Add({{"-c"}, "LENGTH", "text models: tokens per item (default 1024 or the model's context)"})
      .Add({{"--log-every"}, "N", "a progress line every N steps (default 10)"})
      .Add(ThreadsOption());
  return options;
}

// The items of `dir`'s own recall task, or passkeys for a text model.
std::function<HeadGateSample(uint64_t)> GateSamples(const std::string& dir, const Args& args, uint64_t seed) {
  if (HasRecallTask(dir)) {
    RecallOptions task = LoadRecallTask(dir);
    task.seed = seed;
    return [task](uint64_t index) {
      const RecallSequence s = MakeRecallSequence(task, index);
      HeadGateSample sample;  // position t predicts token t + 1
      sample.tokens.assign(s.tokens.begin(), s.tokens.end() - 1);
      sample.weights.assign(s.weight.begin() + 1, s.weight.end());
      return sample;
    };
  }
  auto source = std::make_shared<const PasskeySource>(dir);
  const int64_t length = args.GetInt("-c", source->default_length());
  source->Make(length, 0.5, seed);  // refuses a bad length before any work
  return [source, length, seed](uint64_t index) {
    // Depths spread over [0.1, 0.9] by the golden ratio's sequence.
    const double depth = 0.1 + 0.8 * std::fmod(0.5 + 0.6180339887 * double(index), 1.0);
    const TaskItem item = source->Make(length, depth, seed + index);
    HeadGateSample sample;
    sample.tokens.assign(item.tokens.begin(), item.tokens.end() - 1);
    sample.weights.assign(sample.tokens.size(), 0.0f);
    for (const Answer& answer : item.answers)
      for (int64_t a = answer.begin; a < answer.end; ++a) sample.weights[size_t(a - 1)] = 1.0f;
    return sample;
  };
}

std::string GateRows(const std::vector<float>& gates, int32_t kv_heads) {
  std::string rows;
  char cell[16];
  for (size_t i = 0; i < gates.size(); ++i) {
    if (i % size_t(kv_heads) == 0) rows += "  layer " + std::to_string(i / size_t(kv_heads)) + ":";
    std::snprintf(cell, sizeof cell, " %.3f", gates[i]);
    rows += cell;
    if ((i + 1) % size_t(kv_heads) == 0) rows += "\n";
  }
  return rows;
}

}  // namespace

int RunTrainHeadGates(const std::vector<std::string>& words) {
  const OptionSet flags = Options();
  const Args args = flags.Parse(words);
  if (HelpAsked(args)) {
    std::printf("%s", flags.Help().c_str());
    return 0;
  }
  for (const char* flag : {"-m", "--select", "--out"})
    if (!args.Has(flag)) throw std::invalid_argument(std::string(flag) + " is required\n" + flags.Help());
  const std::vector<std::string> shares = SplitList(args.Get("--select", ""), ',');
  const std::string out_pattern = args.Get("--out", "");
  if (shares.empty()) throw std::invalid_argument("--select takes a share of the KV heads in (0, 1]");
  if (shares.size() > 1 && out_pattern.find("{share}") == std::string::npos)
    throw std::invalid_argument("--select with several shares needs {share} in --out (e.g. heads_{share}.json)");
  std::vector<std::pair<double, std::string>> outputs;  // (share, file)
  for (const std::string& text : shares) {
    double share = 0;
    try {
      size_t used = 0;
      share = std::stod(text, &used);
      if (used != text.size()) share = 0;
    } catch (const std::logic_error&) {
    }
    if (!(share > 0 && share <= 1))
      throw std::invalid_argument("--select takes shares of the KV heads in (0, 1], got '" + text + "'");
    std::string file = out_pattern;
    for (size_t at; (at = file.find("{share}")) != std::string::npos;) file.replace(at, 7, text);
    outputs.push_back({share, file});
  }
  const int64_t window = args.GetPositiveInt("--window", 64);
  const int64_t sinks = args.GetInt("--sinks", 4);
  if (sinks < 0) throw std::invalid_argument("--sinks must be >= 0");
  HeadGateOptions o;
  o.steps = args.GetPositiveInt("--steps", o.steps);
  o.batch = args.GetPositiveInt("--batch", o.batch);
  o.lr = args.GetDouble("--lr", o.lr);
  o.l1 = args.GetDouble("--lambda", o.l1);
  if (!(o.lr > 0)) throw std::invalid_argument("--lr must be a positive number");
  if (!(o.l1 >= 0)) throw std::invalid_argument("--lambda must be >= 0");
  const int64_t log_every = args.GetPositiveInt("--log-every", 10);
  for (const auto& [share, path] : outputs) {  // refuse an unwritable path before the work
    const bool existed = std::filesystem::exists(path);
    if (!std::ofstream(path, std::ios::app)) throw std::runtime_error("--out " + path + ": cannot write there");
    if (!existed) std::filesystem::remove(path);
  }
  ApplyThreadsOption(args);
  const std::string dir = args.Get("-m", "");
  const std::string sink_spec = sinks > 0 ? ",sinks:" + std::to_string(sinks) : "";
  const std::string plan = "swa:" + std::to_string(window) + sink_spec;
  auto model = LoadAnalysisModel(dir, plan);
  const uint64_t seed = 0x9a7e5 + uint64_t(args.GetInt("--seed", 1));
  const auto samples = GateSamples(dir, args, seed);
  const int32_t L = model->config().n_layers, KV = model->config().n_kv_heads;
  std::printf("head gates of %s: %d layers x %d KV heads, window %lld + %lld sinks, %lld steps of %lld sequences\n",
              dir.c_str(), L, KV, (long long)window, (long long)sinks, (long long)o.steps, (long long)o.batch);
  double last_distill = 0;
  const HeadGates trained = TrainHeadGates(*model, samples, o, [&](const HeadGateProgress& p) {
    last_distill = p.distill;
    if (p.step % log_every != 0 && p.step != o.steps) return;
    double sum = 0;
    for (const float a : *p.gates) sum += a;
    std::printf("step %5lld/%lld  distill %.5f  lambda*sum %.4f  mean gate %.3f\n", (long long)p.step,
                (long long)o.steps, p.distill, p.l1, sum / double(p.gates->size()));
    std::fflush(stdout);
  });
  const std::vector<float>& gates = trained.gates;
  std::printf("gates:\n%s", GateRows(gates, KV).c_str());
  int64_t open = 0;
  for (const float a : gates) open += a > 0.5f;
  std::printf("%lld of %d gates above 0.5 (share %.3g)\n", (long long)open, L * KV, double(open) / (L * KV));

  std::vector<std::vector<double>> scores(static_cast<size_t>(L)), pressure(static_cast<size_t>(L));  // [L][KV]
  for (int32_t l = 0; l < L; ++l) {
    scores[size_t(l)].assign(gates.begin() + l * KV, gates.begin() + (l + 1) * KV);
    pressure[size_t(l)].assign(trained.pressure.begin() + l * KV, trained.pressure.begin() + (l + 1) * KV);
  }
  char what[160];
  std::snprintf(what, sizeof what, "DuoAttention gate after %lld steps (lambda %g, lr %g, window %lld + %lld sinks)",
                (long long)o.steps, o.l1, o.lr, (long long)window, (long long)sinks);
  for (const auto& [share, path] : outputs) {
    const HeadSelection selection = SelectTopHeads(scores, share, what, pressure);
    nlohmann::json j = HeadSelectionJson(selection, dir);
    j["pressure"] = pressure;  // equal gates: the higher pressure is kept first
    j["method"] = "gates";
    j["window"] = window;
    j["sinks"] = sinks;
    j["final_distill"] = last_distill;
    std::ofstream out(path);
    out << j.dump(2) << "\n";
    if (!out) throw std::runtime_error("cannot write " + path);
    std::printf("kept %lld of %d KV heads full (share %.3g):", (long long)selection.n_full(), L * KV, share);
    for (size_t l = 0; l < selection.full_heads.size(); ++l)
      for (const int32_t h : selection.full_heads[l]) std::printf(" layer %zu KV head %d", l, h);
    std::printf("\nwrote %s; use it with --attn 'full,window:%lld%s,heads:%s'\n", path.c_str(), (long long)window,
                sink_spec.c_str(), path.c_str());
  }
  return 0;
}

}  // namespace swan::cli
