// Retrieval heads: per layer and head, the attention mass that a recall
// query puts on the fact its answer needs, averaged over the answers of
// held-out sequences of the model's own task (train/recall_data.h). The
// value position after the answer's key is where an induction head looks
// (it holds the value, and knows the key before it); the key position is
// where a head that matches tokens looks. The heads with the most mass on
// values are the ones a per-head plan keeps full (DuoAttention's choice).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "eval/tasks.h"
#include "train/model.h"
#include "train/recall_data.h"

namespace swan {

struct HeadMass {
  double value = 0, key = 0;  // mean attention weight on the value and on the key position
};

struct RetrievalHeads {
  int32_t layers = 0, heads = 0;
  int32_t kv_heads = 0;      // query head h reads KV head h / (heads / kv_heads)
  int64_t far_distance = 0;  // "far" answers: key->query distance >= this
  int64_t answers = 0, far_answers = 0;
  std::vector<HeadMass> all;  // [layers * heads] over every answer
  std::vector<HeadMass> far;  // [layers * heads] over the far answers
  const HeadMass& At(int32_t layer, int32_t head, bool far_only = false) const {
    return (far_only ? far : all)[size_t(layer * heads + head)];
  }
};

// A model directory as a training model (weights, plan: `attn`, or the
// directory's own when empty) for analysis.
std::unique_ptr<TrainModel> LoadAnalysisModel(const std::string& dir, const std::string& attn);

// Runs `sequences` sequences of `task` (seed `seed`) through `model` and
// averages each head's attention on the answers' facts.
RetrievalHeads TraceRetrievalHeads(TrainModel& model, const RecallOptions& task, int64_t sequences, uint64_t seed,
                                   int64_t far_distance);

// Training-free choice of a per-head plan's full heads (RazorAttention,
// DuoAttention's ranking): every KV head scores the largest mass on the
// answer's value among its query heads (over the far answers, when there
// are any), and the ceil(share * layers * kv_heads) best KV heads of the
// whole model are kept full. share in (0, 1].
struct HeadSelection {
  double share = 0;
  std::string score;                             // what the scores are
  std::vector<std::vector<double>> scores;       // [layers][kv_heads]
  std::vector<std::vector<int32_t>> full_heads;  // [layers] ascending
  int64_t n_full() const;
};
HeadSelection SelectFullHeads(const RetrievalHeads& heads, double share);
// The ceil(share * all) KV heads with the highest scores [layers][kv_heads]
// (equal scores: the higher tie_break [layers][kv_heads] when given, then
// the lower layer and head), whatever the scores are (`score` says, e.g.
// DuoAttention's trained gates, train/head_gates.h).
HeadSelection SelectTopHeads(std::vector<std::vector<double>> scores, double share, std::string score,
                             const std::vector<std::vector<double>>& tie_break = {});
// {"full_heads": [[...], ...], "share": ..., "scores": [[...], ...], ...}: the
// file a plan reads with heads:FILE.json (model/plan.h).
nlohmann::json HeadSelectionJson(const HeadSelection& selection, const std::string& model_dir);

// The same on retrieval items of a text model (eval/tasks.h: passkey,
// needles): each answer token's query and the needle token it copies.
RetrievalHeads TraceNeedleHeads(TrainModel& model, const std::vector<TaskItem>& items, int64_t far_distance);

std::string RetrievalHeadsTable(const RetrievalHeads& heads);
nlohmann::json RetrievalHeadsJson(const RetrievalHeads& heads);
// A layers x heads heatmap of the mass on the value position.
std::string RetrievalHeadsSvg(const RetrievalHeads& heads, const std::string& title);

}  // namespace swan
