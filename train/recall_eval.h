// Recall accuracy by key->query distance, from a model's logits on labelled
// sequences (tokenizer/token_labels.h: an answer token has its distance):
// an item is a run of consecutive answer tokens (an MQAR answer, or a
// needle's values), right when every one is the greedy prediction. Items
// are counted in distance bins [edges[i], edges[i+1]).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/plan.h"

namespace swan {

class RecallTally {
 public:
  // edges: increasing, at least two.
  explicit RecallTally(std::vector<int64_t> edges);

  // One batch: targets and distances [B, T], logits [B * T, V].
  void Add(const float* logits, const int32_t* targets, const uint16_t* distances, int64_t batch, int64_t seq,
           int64_t vocab);

  const std::vector<int64_t>& edges() const { return edges_; }
  size_t bins() const { return items_.size(); }
  int64_t items(size_t bin) const { return items_[bin]; }
  int64_t correct(size_t bin) const { return correct_[bin]; }
  // correct / items, or -1 for a bin without items.
  double Accuracy(size_t bin) const;
  std::string BinName(size_t bin) const;  // "[64,256)"

 private:
  std::vector<int64_t> edges_;
  std::vector<int64_t> items_, correct_;  // [bins]
};

// Bins that show what a plan keeps: with window layers of the smallest
// window W (L of them), [1, W/4), [W/4, W), [W, L*(W-1)), [L*(W-1), context];
// with none, [1, context/8), [context/8, context/2), [context/2, context].
std::vector<int64_t> DefaultRecallBins(const AttentionPlan& plan, int64_t context);
// "1,64,256,513" -> edges; throws std::invalid_argument unless increasing.
std::vector<int64_t> ParseRecallBins(const std::string& list);

}  // namespace swan
