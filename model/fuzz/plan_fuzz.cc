// libFuzzer target: the attention plan parser and resolver on arbitrary
// specs, for an 8-layer model with a window of its own and for one
// without. Bad specs must throw std::invalid_argument, nothing else.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "model/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string spec(reinterpret_cast<const char*>(data), size);
  for (const int32_t window : {256, 0}) {
    swan::ModelAttentionDefaults model;
    model.n_layers = 8;
    model.default_window = window;
    model.n_kv_heads = 4;  // per-head layers check their heads against it
    try {
      const swan::AttentionPlan plan = swan::ResolvePlan(spec, model);
      if (plan.layers.size() != 8) __builtin_trap();
      (void)plan.Describe();
    } catch (const std::invalid_argument&) {
    }
  }
  return 0;
}
