// Which key blocks a tile of queries sees, decided from positions alone:
// the smallest and largest position in a key block against the smallest
// and largest query position of a tile. Shared by the forward and backward
// kernels; this is what makes a window layer cost O(N (W + S)).
#pragma once

#include <cstdint>
#include <vector>

#include "attention/attention.h"

namespace swan {

constexpr int64_t kBlockKeys = 64;  // key rows per block

enum class Visibility : uint8_t {
  kNone,     // no query of the tile sees any key of the block
  kFull,     // every query sees every key: no mask
  kPartial,  // a boundary: per-element mask
};

struct BlockBounds {
  int32_t min_pos = 0, max_pos = 0;  // over non-empty rows
  bool any = false;                  // has a non-empty row
  bool all_valid = true;             // has no empty row
};

// Bounds of every kBlockKeys rows of `pos` [n_rows].
std::vector<BlockBounds> ComputeBlockBounds(const int32_t* pos, int64_t n_rows);

struct QueryRange {
  int32_t min_pos, max_pos;
};

// Bounds of every `tile` consecutive queries of `pos` [n_q].
std::vector<QueryRange> ComputeQueryRanges(const int32_t* pos, int64_t n_q, int64_t tile);

struct BlockVisibility {
  Visibility span;     // keys under the span
  Visibility outside;  // causal keys outside the span (for dual outputs)
};

BlockVisibility ClassifyBlock(const Span& span, const BlockBounds& block, const QueryRange& queries);

}  // namespace swan
