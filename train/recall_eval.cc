#include "train/recall_eval.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace swan {

RecallTally::RecallTally(std::vector<int64_t> edges) : edges_(std::move(edges)) {
  if (edges_.size() < 2) throw std::invalid_argument("recall bins need at least two edges");
  for (size_t i = 1; i < edges_.size(); ++i)
    if (edges_[i] <= edges_[i - 1]) throw std::invalid_argument("recall bin edges must increase");
  items_.assign(edges_.size() - 1, 0);
  correct_.assign(edges_.size() - 1, 0);
}

void RecallTally::Add(const float* logits, const int32_t* targets, const uint16_t* distances, int64_t batch,
                      int64_t seq, int64_t vocab) {
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < seq;) {
      const int64_t i = b * seq + t;
      if (distances[i] == 0) {
        ++t;
        continue;
      }
      // One item: the run of answer tokens from t.
      const int64_t distance = distances[i];
      bool right = true;
      for (; t < seq && distances[b * seq + t] != 0; ++t) {
        const float* row = logits + (b * seq + t) * vocab;
        right = right && std::max_element(row, row + vocab) - row == targets[b * seq + t];
      }
      const auto bin = std::upper_bound(edges_.begin(), edges_.end(), distance) - edges_.begin() - 1;
      if (bin < 0 || size_t(bin) >= items_.size()) continue;  // outside every bin
      ++items_[size_t(bin)];
      correct_[size_t(bin)] += right;
    }
  }
}

double RecallTally::Accuracy(size_t bin) const {
  return items_[bin] ? double(correct_[bin]) / double(items_[bin]) : -1.0;
}

std::string RecallTally::BinName(size_t bin) const {
  return "[" + std::to_string(edges_[bin]) + "," + std::to_string(edges_[bin + 1]) + ")";
}

std::vector<int64_t> DefaultRecallBins(const AttentionPlan& plan, int64_t context) {
  int64_t window = 0, window_layers = 0;
  for (const LayerPlan& l : plan.layers)
    if (l.kind != LayerKind::kFull && l.span.window > 0) {
      window = window == 0 ? l.span.window : std::min<int64_t>(window, l.span.window);
      ++window_layers;
    }
  std::vector<int64_t> edges = {1};
  auto add = [&](int64_t edge) {
    if (edge > edges.back() && edge <= context) edges.push_back(edge);
  };
  if (window > 0) {
    add(window / 4);
    add(window);
    add(window_layers * (window - 1));
  } else {
    add(context / 8);
    add(context / 2);
  }
  edges.push_back(context + 1);
  return edges;
}

std::vector<int64_t> ParseRecallBins(const std::string& list) {
  std::vector<int64_t> edges;
  std::istringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      edges.push_back(std::stoll(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::logic_error&) {
      throw std::invalid_argument("--eval-bins '" + list + "': '" + item + "' is not a distance");
    }
  }
  RecallTally check(edges);  // throws unless increasing
  return edges;
}

}  // namespace swan
