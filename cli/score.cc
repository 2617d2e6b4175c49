// `swan score`: scores token-id sequences a user brings (one JSON line
// each) under an attention plan: per scored position, the log-probability
// of the given token and the greedy prediction, so a model can be checked
// on sequences swan did not make.
#include "eval/score.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/option_groups.h"
#include "cli/options.h"
#include "model/model.h"

namespace swan::cli {
namespace {

// The command's options, declared once: its parsing and --help come from them.
OptionSet Options() {
  OptionSet options(
      "usage: swan score -m DIR --ids FILE.jsonl [--attn SPEC] [--batch B] [--kv TYPE] [--device DEV] [-t N]\n");
  options.Add(ModelOption(" (no tokenizer needed)"))
      .Add({{"--ids"},
            "FILE",
            "one sequence of token ids per line: a JSON array (every token after the first is scored), or "
            "{\"ids\": [...], \"score\": [positions]} (the tokens at those positions are scored, each predicted "
            "from the ones before it)"})
      .Add(PlanOption())
      .Add(PrefillChunkOption(512))
      .Add(KvOption())
      .Add(DeviceOption())
      .Add(ThreadsOption())
      .Text(
          "Prints one JSON object per scored token: {\"line\", \"position\", \"token\", \"logprob\",\n"
          "\"greedy\", \"correct\"}; the totals go to stderr.\n");
  return options;
}

// Line `line` of the file as a task item: each scored position one answer.
TaskItem ParseLine(const std::string& text, int64_t line, int64_t vocab) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument("--ids line " + std::to_string(line) + ": " + why);
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("not JSON (") + e.what() + ")");
  }
  const nlohmann::json& ids = j.is_array() ? j : j.value("ids", nlohmann::json());
  if (!ids.is_array() || ids.size() < 2) fail("needs an array of at least 2 token ids");
  std::vector<int32_t> tokens;
  for (const auto& id : ids) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= vocab)
      fail("token " + id.dump() + " is not an id below the vocabulary size " + std::to_string(vocab));
    tokens.push_back(id.get<int32_t>());
  }
  std::vector<int64_t> positions;
  if (j.is_object() && j.contains("score"))
    for (const auto& p : j["score"]) {
      if (!p.is_number_integer()) fail("score position " + p.dump() + " is not an integer");
      positions.push_back(p.get<int64_t>());
    }
  try {
    return ItemScoringPositions(std::move(tokens), positions);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("--ids line " + std::to_string(line) + ": " + e.what());
  }
}

}  // namespace

int RunScore(const std::vector<std::string>& words) {
  const OptionSet flags = Options();
  const Args args = flags.Parse(words);
  if (words.empty() || HelpAsked(args)) {
    std::printf("%s", flags.Help().c_str());
    return words.empty() ? 2 : 0;
  }
  ApplyThreadsOption(args);
  if (!args.Has("-m") || !args.Has("--ids"))
    throw std::invalid_argument("-m DIR and --ids FILE are required\n" + flags.Help());
  std::unique_ptr<LanguageModel> model = LoadModel(args.Get("-m", ""), LoadOptionsFrom(args));
  const AttentionPlan plan = model->ResolvePlan(args.Get("--attn", ""));
  KvCacheOptions kv;
  kv.max_chunk = int32_t(args.GetInt("--batch", 512));
  if (kv.max_chunk <= 0) throw std::invalid_argument("--batch must be positive");
  kv.type = KvTypeFromString(args.Get("--kv", "f32"));
  RequireDeviceKv(args, kv.type);
  std::ifstream in(args.Get("--ids", ""));
  if (!in) throw std::runtime_error("cannot read " + args.Get("--ids", ""));
  const int64_t vocab = model->config().vocab_size;
  int64_t line_no = 0, scored = 0, correct = 0;
  double logprob_sum = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const TaskItem item = ParseLine(line, line_no, vocab);
    const std::vector<AnswerScore> scores = ScoreItem(*model, plan, item, kv);
    for (size_t i = 0; i < scores.size(); ++i) {
      const int64_t p = item.answers[i].begin;
      const int32_t token = item.tokens[size_t(p)], greedy = scores[i].predicted[0];
      const double logprob = -scores[i].token_nll[0];
      std::printf("%s\n", nlohmann::json({{"line", line_no},
                                          {"position", p},
                                          {"token", token},
                                          {"logprob", logprob},
                                          {"greedy", greedy},
                                          {"correct", greedy == token}})
                              .dump()
                              .c_str());
      ++scored;
      correct += greedy == token;
      logprob_sum += logprob;
    }
  }
  if (scored == 0) throw std::invalid_argument("--ids: no sequence to score");
  std::fprintf(stderr,
               "[score] plan %s | %lld lines, %lld tokens scored | greedy right %.2f%% | "
               "mean log-prob %.4f\n",
               plan.spec.empty() ? "(model)" : plan.spec.c_str(), (long long)line_no, (long long)scored,
               100.0 * double(correct) / double(scored), logprob_sum / double(scored));
  return 0;
}

}  // namespace swan::cli
