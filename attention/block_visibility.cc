#include "attention/block_visibility.h"

#include <algorithm>

namespace swan {

std::vector<BlockBounds> ComputeBlockBounds(const int32_t* pos, int64_t n_rows) {
  std::vector<BlockBounds> blocks(static_cast<size_t>((n_rows + kBlockKeys - 1) / kBlockKeys));
  for (int64_t j = 0; j < n_rows; ++j) {
    BlockBounds& b = blocks[size_t(j / kBlockKeys)];
    const int32_t p = pos[j];
    if (p < 0) {
      b.all_valid = false;
    } else if (!b.any) {
      b.min_pos = b.max_pos = p;
      b.any = true;
    } else {
      b.min_pos = std::min(b.min_pos, p);
      b.max_pos = std::max(b.max_pos, p);
    }
  }
  return blocks;
}

std::vector<QueryRange> ComputeQueryRanges(const int32_t* pos, int64_t n_q, int64_t tile) {
  std::vector<QueryRange> ranges;
  for (int64_t begin = 0; begin < n_q; begin += tile) {
    const int64_t end = std::min(n_q, begin + tile);
    QueryRange r{pos[begin], pos[begin]};
    for (int64_t i = begin; i < end; ++i) {
      r.min_pos = std::min(r.min_pos, pos[i]);
      r.max_pos = std::max(r.max_pos, pos[i]);
    }
    ranges.push_back(r);
  }
  return ranges;
}

BlockVisibility ClassifyBlock(const Span& span, const BlockBounds& b, const QueryRange& q) {
  if (!b.any || b.min_pos > q.max_pos) return {Visibility::kNone, Visibility::kNone};
  const bool windowed = span.window > 0;
  const bool causal_for_all = b.all_valid && b.max_pos <= q.min_pos;
  const bool all_sinks = b.max_pos < span.sinks;
  const bool no_sinks = b.min_pos >= span.sinks;
  // Inside the window of every query / older than the window of every query
  // (the earliest query's window starts first).
  const bool in_every_window = !windowed || b.min_pos >= WindowStart(span, q.max_pos);
  const bool past_every_window = windowed && b.max_pos < WindowStart(span, q.min_pos);

  BlockVisibility v{Visibility::kPartial, Visibility::kNone};
  if (past_every_window && no_sinks)
    v.span = Visibility::kNone;
  else if (causal_for_all && (in_every_window || all_sinks))
    v.span = Visibility::kFull;
  if (windowed && !in_every_window && !all_sinks)
    v.outside = causal_for_all && past_every_window && no_sinks ? Visibility::kFull
                                                                : Visibility::kPartial;
  return v;
}

}  // namespace swan
