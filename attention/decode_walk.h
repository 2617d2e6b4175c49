// The scalar side of a decode task that both decode kernels share
// (flash_decode.cc in float32, flash_decode_bf16.cc with bf16 dot
// products): which (query, head) each of its rows is, which keys a row
// does not see, and how it walks and requests its key blocks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "attention/attention.h"
#include "attention/flash_plan.h"
#include "attention/softmax_state.h"
#include "attention/span.h"

namespace swan {

// A decode task's sizes: per KV head, rows = queries x G rows (query i,
// head g at row i G + g), each at its query's position.
struct DecodeTaskRows {
  int64_t d;                     // head_dim
  int32_t group;                 // G: query heads per KV head
  int64_t rows;                  // per KV head
  int64_t heads;                 // the task's KV heads
  std::vector<int32_t> row_pos;  // [rows] query position of each row

  DecodeTaskRows(const AttentionArgs& args, const FlashTask& t)
      : d(args.shape.head_dim),
        group(args.shape.n_heads / args.shape.n_kv_heads),
        rows(args.n_q * group),
        heads(t.kv_head_end - t.kv_head),
        row_pos(static_cast<size_t>(rows)) {
    for (int64_t r = 0; r < rows; ++r) row_pos[size_t(r)] = args.q_pos[r / group];
  }

  // The query (head_dim floats) of row r of KV head kv_head.
  const float* Query(const AttentionArgs& args, int64_t kv_head, int64_t r) const {
    return args.q + ((r / group) * args.shape.n_heads + kv_head * group + r % group) * d;
  }

  // Every row's softmax state empty: acc [heads][rows][acc_row] 0, m
  // [heads][rows] -inf, l [heads][rows] 0.
  void ResetStates(float* acc, int64_t acc_row, float* m, float* l) const {
    std::fill_n(acc, heads * rows * acc_row, 0.0f);
    std::fill_n(m, heads * rows, kNegInf);
    std::fill_n(l, heads * rows, 0.0f);
  }
};

// Row r of KV head kv_head (G = group query heads per KV head): query
// r / G, query head kv_head G + r % G.
struct DecodeRow {
  int64_t query, head;
};
inline DecodeRow DecodeRowOf(int64_t kv_head, int64_t r, int32_t group) {
  return {r / group, kv_head * group + r % group};
}

// S[r][j] = -inf where row r (at query position row_pos[r]) does not see
// key j (at k_pos[j]); S rows kBlockKeys floats apart.
inline void MaskUnseen(float* s, int64_t rows, int64_t n_keys, const Span& span, const int32_t* row_pos,
                       const int32_t* k_pos) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n_keys; ++j)
      if (!Sees(span, row_pos[r], k_pos[j])) s[r * kBlockKeys + j] = kNegInf;
}

// Visit vi of a task's key blocks. While a block is computed, the next one
// is requested: each K or V read of this block requests the same bytes of
// the next, `ahead` elements further, so the requests spread over the
// block's compute instead of stalling it in one burst. The first block,
// and a next block that is not kBlockKeys rows on from a whole one, are
// requested all at once (`request_next`).
struct DecodeBlock {
  int64_t first;      // its first key row
  int64_t n_keys;     // its rows
  int64_t ahead;      // elements from a row of it to the same row of the next; 0: none
  bool request_next;  // request the next block all at once now
};
inline DecodeBlock DecodeBlockAt(const std::vector<BlockVisit>& visits, size_t vi, int64_t n_rows, int64_t stride) {
  DecodeBlock b{visits[vi].block * kBlockKeys, 0, 0, false};
  b.n_keys = std::min(kBlockKeys, n_rows - b.first);
  if (vi + 1 < visits.size()) {
    const int64_t next = visits[vi + 1].block * kBlockKeys;
    if (b.n_keys == kBlockKeys && next + kBlockKeys <= n_rows)
      b.ahead = (next - b.first) * stride;
    else
      b.request_next = true;
  }
  return b;
}

}  // namespace swan
