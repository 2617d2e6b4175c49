#include "train/grow.h"

#include <stdexcept>
#include <string>

namespace swan {

std::vector<int32_t> GrownLayerSources(int32_t from, int32_t to) {
  if (from < 1 || to <= from)
    throw std::invalid_argument("--grow " + std::to_string(to) + " must be more layers than the model's " +
                                std::to_string(from));
  std::vector<int32_t> sources(static_cast<size_t>(to), -1);  // [to] source layer or -1
  for (int32_t i = 0; i < from; ++i) {
    const int64_t at = from == 1 ? 0 : (int64_t(i) * (to - 1) + (from - 1) / 2) / (from - 1);
    sources[size_t(at)] = i;
  }
  return sources;
}

}  // namespace swan
