#include "attention/block_visibility.h"

#include <algorithm>
#include <cstdint>

namespace swan {

std::vector<BlockBounds> ComputeBlockBounds(const int32_t* pos, int64_t n_rows) {
  std::vector<BlockBounds> blocks(static_cast<size_t>((n_rows + kBlockKeys - 1) / kBlockKeys));
  // Branch-free reductions the compiler vectorizes (decode calls this for
  // every layer and token over the whole view): an empty row's -1 is the
  // largest unsigned value, so the unsigned minimum is the smallest
  // position of the non-empty rows, and the signed minimum is negative
  // exactly when a row is empty.
  for (size_t b = 0; b < blocks.size(); ++b) {
    const int64_t first = int64_t(b) * kBlockKeys, last = std::min(n_rows, first + kBlockKeys);
    uint32_t min_unsigned = UINT32_MAX;
    int32_t max_signed = INT32_MIN, min_signed = INT32_MAX;
    for (int64_t j = first; j < last; ++j) {
      min_unsigned = std::min(min_unsigned, uint32_t(pos[j]));
      max_signed = std::max(max_signed, pos[j]);
      min_signed = std::min(min_signed, pos[j]);
    }
    BlockBounds& bounds = blocks[b];
    bounds.any = max_signed >= 0;
    bounds.all_valid = min_signed >= 0;
    if (bounds.any) {
      bounds.min_pos = int32_t(min_unsigned);
      bounds.max_pos = max_signed;
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
    v.outside = causal_for_all && past_every_window && no_sinks ? Visibility::kFull : Visibility::kPartial;
  return v;
}

}  // namespace swan
