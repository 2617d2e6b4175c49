// A long text sampled from the model itself, for perplexity when no text
// file is given: seeded, so every run and every plan sees the same tokens.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model.h"

namespace swan {

struct SampleTextOptions {
  int64_t tokens = 4096;  // length of the result
  int32_t context = 512;  // no sample is longer: a new one starts after this many positions
  int32_t bos_id = -1;    // >= 0: every sample starts after BOS (not part of the result)
  double temperature = 1.0;
  uint64_t seed = 1;
};

// Samples under full attention; an end-of-sequence token ends a sample and
// the next starts fresh. The result holds no BOS or EOS.
std::vector<int32_t> SampleText(const LanguageModel& model, const SampleTextOptions& options);

}  // namespace swan
