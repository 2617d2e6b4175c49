#include "attention/flash_plan.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "attention/softmax_state.h"
#include "util/parallel_ranges.h"
#include "util/threads.h"

namespace swan {

constexpr int64_t kDecodeTasksPerThread = 2;
constexpr int64_t kMinDecodeRunBlocks = 4;

FlashPlan::FlashPlan(const AttentionArgs& a, const DualOutput& out, bool is_dual) : args(&a), dual(is_dual), out_(out) {
  const AttentionShape& s = a.shape;
  const int32_t group = s.n_heads / s.n_kv_heads;
  // About 64 rows (queries x heads of a group) per tile, 128 for heads of
  // 64 or fewer dims: enough rows to reuse each K/V block, few enough to
  // stay in L1/L2. (attention_bench BM_Prefill, 4096 queries: 128 rows at
  // d 64 took 0.94-0.96x the time, full or window 1024, AVX2 or AVX-512;
  // at d 128, 1.07-1.12x on AVX-512.)
  tile_queries = std::max<int64_t>(1, (s.head_dim <= 64 ? 128 : 64) / group);
  decode = !dual && a.n_q * group <= kDecodeMaxRows;  // then n_q <= tile_queries: one tile
  scale = a.scale != 0.0f ? a.scale : 1.0f / std::sqrt(float(s.head_dim));
  n_tiles_ = (a.n_q + tile_queries - 1) / tile_queries;
  n_blocks_ = (a.kv.n_rows + kBlockKeys - 1) / kBlockKeys;
  row_floats_ = 2 + s.head_dim;

  blocks_ = ComputeBlockBounds(a.kv.pos, a.kv.n_rows);
  tiles_ = ComputeQueryRanges(a.q_pos, a.n_q, tile_queries);

  // The split of the keys is planned for the process's thread limit, not
  // the threads this call runs on: a split merges partial softmax states,
  // so its count decides the rounding, and a server runs a sequence on a
  // number of threads that changes with its load (alone, side by side, in
  // a batch). So each row's result is the same under any load (batch
  // invariance, docs/serving.md).
  const int64_t threads = ThreadLimit();
  if (decode) {
    // One tile. A task reads whole K and V rows (every KV head) of a
    // contiguous run of key blocks, in memory order, so the hardware and
    // software prefetchers see long streams: the threads split the keys,
    // and split the KV heads only when the view is too short for runs of
    // kMinDecodeRunBlocks blocks each. A few tasks per thread balance the
    // dynamic schedule when another process takes part of a core.
    int64_t visited = 0;
    for (int64_t b = 0; b < n_blocks_; ++b)
      visited += ClassifyBlock(a.span, blocks_[size_t(b)], tiles_[0]).span != Visibility::kNone;
    const int64_t want = threads > 1 ? kDecodeTasksPerThread * threads : 1;
    splits_ = int32_t(std::clamp<int64_t>(visited / kMinDecodeRunBlocks, 1, want));
    head_groups_ = int32_t(std::min<int64_t>(s.n_kv_heads, (want + splits_ - 1) / splits_));
  } else {
    // Few tasks but many keys: split each tile's key blocks so every
    // thread has work; the partial softmax states are merged in Finish().
    head_groups_ = s.n_kv_heads;
    const int64_t base_tasks = n_tiles_ * s.n_kv_heads;
    if (base_tasks < 2 * threads && n_blocks_ >= 16) {
      const int64_t want = (2 * threads + base_tasks - 1) / base_tasks;
      splits_ = int32_t(std::min<int64_t>(want, n_blocks_ / 8));
    }
  }
  if (splits_ > 1 || dual)
    partial_.assign(size_t(splits_) * (dual ? 2 : 1) * size_t(a.n_q) * size_t(s.n_heads) * size_t(row_floats_), 0.0f);
}

FlashTask FlashPlan::Task(int64_t task) const {
  const int64_t per_tile = int64_t(head_groups_) * splits_;
  // Later tiles first: under a causal span they see the most keys, and
  // starting them early balances the dynamic schedule.
  const int64_t tile = n_tiles_ - 1 - task / per_tile;
  const int64_t rem = task % per_tile;
  const int64_t group = rem / splits_, n_kv = args->shape.n_kv_heads;
  return FlashTask{tile, int32_t(group * n_kv / head_groups_), int32_t((group + 1) * n_kv / head_groups_),
                   int32_t(rem % splits_)};
}

std::vector<BlockVisit> FlashPlan::VisitsFor(const FlashTask& t) const {
  std::vector<BlockVisit> visits;
  for (int64_t b = 0; b < n_blocks_; ++b) {
    BlockVisibility v = ClassifyBlock(args->span, blocks_[size_t(b)], tiles_[size_t(t.tile)]);
    if (!dual) v.outside = Visibility::kNone;
    if (v.span == Visibility::kNone && v.outside == Visibility::kNone) continue;
    visits.push_back(BlockVisit{b, v.span, v.outside});
  }
  if (splits_ > 1) {
    const size_t n = visits.size();
    const size_t begin = n * size_t(t.split) / size_t(splits_);
    const size_t end = n * size_t(t.split + 1) / size_t(splits_);
    visits = std::vector<BlockVisit>(visits.begin() + long(begin), visits.begin() + long(end));
  }
  return visits;
}

float* FlashPlan::PartialRow(int32_t split, int state, int64_t query, int64_t head) const {
  const int64_t n_states = dual ? 2 : 1;
  const int64_t index = ((int64_t(split) * n_states + state) * args->n_q + query) * args->shape.n_heads + head;
  return partial_.data() + index * row_floats_;
}

void FlashPlan::StoreRow(const FlashTask& t, int state, int64_t query, int64_t head, float m, float l,
                         const float* acc) const {
  const int64_t d = args->shape.head_dim;
  if (splits_ == 1 && !dual) {
    const float sink = args->sink_logits ? args->sink_logits[head] : kNegInf;
    const int64_t row = query * args->shape.n_heads + head;
    FinishRow(m, l, acc, sink, d, out_.out_window + row * d, out_.lse_window ? out_.lse_window + row : nullptr,
              out_.max_window ? out_.max_window + row : nullptr);
    return;
  }
  float* dst = PartialRow(t.split, state, query, head);
  dst[0] = m;
  dst[1] = l;
  std::memcpy(dst + 2, acc, size_t(d) * sizeof(float));
}

void FlashPlan::FinishRowStates(int64_t query, int64_t head, const float* state0, const float* state1) const {
  const int64_t d = args->shape.head_dim;
  const float sink = args->sink_logits ? args->sink_logits[head] : kNegInf;
  const int64_t row = query * args->shape.n_heads + head;
  FinishRow(state0[0], state0[1], state0 + 2, sink, d, out_.out_window + row * d,
            out_.lse_window ? out_.lse_window + row : nullptr, out_.max_window ? out_.max_window + row : nullptr);
  if (!dual) return;
  // Full = the span's keys plus the causal keys outside it.
  std::vector<float> merged(state0, state0 + row_floats_);  // [2 + head_dim]
  RowState full{&merged[0], &merged[1], &merged[2]};
  MergeRowState(full, &state1[0], &state1[1], state1 + 2, d);
  FinishRow(merged[0], merged[1], merged.data() + 2, sink, d, out_.out_full + row * d,
            out_.lse_full ? out_.lse_full + row : nullptr);
}

void FlashPlan::Finish() {
  if (splits_ == 1 && !dual) return;
  const int64_t n_rows = args->n_q * args->shape.n_heads;
  const int64_t d = args->shape.head_dim;
  const int n_states = dual ? 2 : 1;
  ParallelFor(n_rows, n_rows * d > 65536, [&](int64_t row) {
    const int64_t query = row / args->shape.n_heads, head = row % args->shape.n_heads;
    for (int state = 0; state < n_states; ++state) {
      float* first = PartialRow(0, state, query, head);
      RowState total{&first[0], &first[1], &first[2]};
      for (int32_t split = 1; split < splits_; ++split) {
        const float* p = PartialRow(split, state, query, head);
        MergeRowState(total, &p[0], &p[1], p + 2, d);
      }
    }
    FinishRowStates(query, head, PartialRow(0, 0, query, head), dual ? PartialRow(0, 1, query, head) : nullptr);
  });
}

}  // namespace swan
