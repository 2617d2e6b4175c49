#include "ops/weight_type.h"

#include <stdexcept>

namespace swan {

const char* WeightTypeName(WeightType type) {
  switch (type) {
    case WeightType::kF32: return "f32";
    case WeightType::kBF16: return "bf16";
    case WeightType::kF16: return "f16";
    case WeightType::kQ8_0: return "q8_0";
    case WeightType::kQ4_0: return "q4_0";
    case WeightType::kQ4_1: return "q4_1";
    case WeightType::kQ4_K: return "q4_k";
    case WeightType::kQ5_K: return "q5_k";
    case WeightType::kQ6_K: return "q6_k";
    case WeightType::kQ5_0: return "q5_0";
    case WeightType::kQ5_1: return "q5_1";
  }
  return "?";
}

WeightType ParseWeightType(const std::string& name, const std::string& option) {
  for (WeightType t :
       {WeightType::kF32, WeightType::kBF16, WeightType::kF16, WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ4_1,
        WeightType::kQ5_0, WeightType::kQ5_1, WeightType::kQ4_K, WeightType::kQ5_K, WeightType::kQ6_K})
    if (name == WeightTypeName(t)) return t;
  throw std::invalid_argument(
      option + ": '" + name +
      "' is not a weight type (f32, bf16, f16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k or q6_k)");
}

}  // namespace swan
