// The scalar side of the fast kernel: how a call is cut into tasks, which
// key blocks each task visits (and whether they need a mask), and where the
// finished rows go. The SIMD side (flash.cc) runs one task at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/attention.h"
#include "attention/block_visibility.h"

namespace swan {

struct BlockVisit {
  int64_t block;
  Visibility span;     // keys under args.span
  Visibility outside;  // dual only: causal keys outside args.span
};

struct FlashTask {
  int64_t tile;     // query tile index
  int32_t kv_head;
  int32_t split;    // slice of the tile's key blocks
};

class FlashPlan {
 public:
  FlashPlan(const AttentionArgs& args, const DualOutput& out, bool dual);

  int64_t n_tasks() const { return n_tiles_ * args->shape.n_kv_heads * splits_; }
  FlashTask Task(int64_t task) const;
  // The key blocks task `t` visits, in order, with their visibility.
  std::vector<BlockVisit> VisitsFor(const FlashTask& t) const;
  // Hands over the states of one (query, head) row after task `t`. With one
  // split the row is finished into the outputs; otherwise kept to merge.
  // m, l, acc of state 0 (span) and, when dual, state 1 (outside the span).
  void StoreRow(const FlashTask& t, int state, int64_t query, int64_t head, float m, float l,
                const float* acc) const;
  // Merges key splits and finishes rows (no-op with one split and no dual).
  void Finish();

  const AttentionArgs* args;
  bool dual;
  int64_t tile_queries;  // queries per tile
  float scale;           // logit scale

 private:
  float* PartialRow(int32_t split, int state, int64_t query, int64_t head) const;
  void FinishRowStates(int64_t query, int64_t head, const float* state0, const float* state1) const;

  DualOutput out_;
  int64_t n_tiles_ = 0, n_blocks_ = 0;
  int32_t splits_ = 1;
  int64_t row_floats_ = 0;                   // 2 + head_dim: m, l, acc
  std::vector<BlockBounds> blocks_;          // [n_blocks]
  std::vector<QueryRange> tiles_;            // [n_tiles] query position range
  mutable std::vector<float> partial_;       // [splits][states][n_q][n_heads][row_floats]
};

}  // namespace swan
