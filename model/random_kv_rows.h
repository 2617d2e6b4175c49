// The K/V rows `swan bench --fill random` writes into a cache, wherever it
// lives (LanguageModel::FillCacheRandom): the same on the CPU and a device,
// so that a decode after either fill gives the same logits.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace swan {

// k and v [chunk, row] of normal draws (seed 7, k first); position p takes
// row p % chunk.
struct RandomKvRows {
  std::vector<float> k, v;
  RandomKvRows(int64_t chunk, int64_t row) : k(size_t(chunk * row)), v(size_t(chunk * row)) {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    for (float& x : k) x = normal(rng);
    for (float& x : v) x = normal(rng);
  }
};

}  // namespace swan
