// What the two passes of the fast attention backward share (flash_backward.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "attention/backward.h"
#include "attention/block_visibility.h"

namespace swan {

// Throws std::invalid_argument on arguments the backward cannot take.
void ValidateBackward(const AttentionArgs& args, const AttentionSaved& saved, const AttentionGrads& grads);

// What both passes share: sizes, the tiling, block bounds, and D = rowsum(dO * O).
struct BackwardPlan {
  const AttentionArgs* args;
  const AttentionSaved* saved;
  const AttentionGrads* grads;
  float scale;
  int32_t group;
  int64_t tile_queries;
  std::vector<BlockBounds> blocks;  // [n_blocks]
  std::vector<QueryRange> tiles;    // [n_tiles]
  std::vector<float> D;             // [n_q, n_heads]
};

}  // namespace swan
