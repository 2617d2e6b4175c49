// Growing a trained model deeper (swan train --init DIR --grow L): DIR's
// layers keep their order, spread over L layers, the first staying first
// and the last last; each new layer starts as the identity, so the grown
// model computes what DIR's did and training goes on from there.
#pragma once

#include <cstdint>
#include <vector>

namespace swan {

// For each of `to` layers, the layer of a `from`-layer model it copies, or
// -1 for a new one: layer i of `from` goes to round(i * (to - 1) / (from - 1)).
// E.g. 2 -> 4: {0, -1, -1, 1}; 3 -> 8: {0, -1, -1, -1, 1, -1, -1, 2}.
std::vector<int32_t> GrownLayerSources(int32_t from, int32_t to);

}  // namespace swan
