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
  int64_t tile;         // query tile index
  int32_t kv_head;      // first KV head
  int32_t kv_head_end;  // one past the last: kv_head + 1 except in decode tasks
  int32_t split;        // slice of the tile's key blocks
};

// Decode (a call with at most this many rows, queries x G, per KV head, and
// one output) runs decode tasks: each takes a contiguous run of key blocks
// over a range of KV heads, all of them unless the view is too short to
// give every thread a long run. Past 16 rows the work per K/V byte is high
// enough that the tiled kernel is as fast (G = 16) or faster (G = 32).
constexpr int64_t kDecodeMaxRows = 16;

class FlashPlan {
 public:
  FlashPlan(const AttentionArgs& args, const DualOutput& out, bool dual);

  int64_t n_tasks() const { return n_tiles_ * head_groups_ * splits_; }
  FlashTask Task(int64_t task) const;
  // The key blocks task `t` visits, in order, with their visibility.
  std::vector<BlockVisit> VisitsFor(const FlashTask& t) const;
  // Hands over the states of one (query, head) row after task `t`. With one
  // split the row is finished into the outputs; otherwise kept to merge.
  // m, l, acc of state 0 (span) and, when dual, state 1 (outside the span).
  void StoreRow(const FlashTask& t, int state, int64_t query, int64_t head, float m, float l, const float* acc) const;
  // Merges key splits and finishes rows (no-op with one split and no dual).
  void Finish();

  const AttentionArgs* args;
  bool dual;
  bool decode = false;   // tasks for RunDecodeTask (flash_decode.h)
  int64_t tile_queries;  // queries per tile
  float scale;           // logit scale

 private:
  float* PartialRow(int32_t split, int state, int64_t query, int64_t head) const;
  void FinishRowStates(int64_t query, int64_t head, const float* state0, const float* state1) const;

  DualOutput out_;
  int64_t n_tiles_ = 0, n_blocks_ = 0;
  int32_t splits_ = 1;
  int32_t head_groups_ = 1;             // tasks per (tile, split): KV head ranges
  int64_t row_floats_ = 0;              // 2 + head_dim: m, l, acc
  std::vector<BlockBounds> blocks_;     // [n_blocks]
  std::vector<QueryRange> tiles_;       // [n_tiles] query position range
  mutable std::vector<float> partial_;  // [splits][states][n_q][n_heads][row_floats]
};

}  // namespace swan
