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

const std::vector<WeightType>& AllWeightTypes() {
  static const std::vector<WeightType> types = {
      WeightType::kF32,  WeightType::kBF16, WeightType::kF16,  WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ4_1,
      WeightType::kQ5_0, WeightType::kQ5_1, WeightType::kQ4_K, WeightType::kQ5_K, WeightType::kQ6_K};
  return types;
}

std::string WeightTypeList() {
  const std::vector<WeightType>& types = AllWeightTypes();
  std::string list;
  for (size_t i = 0; i < types.size(); ++i)
    list += std::string(i == 0 ? "" : i + 1 == types.size() ? " or " : ", ") + WeightTypeName(types[i]);
  return list;
}

WeightType ParseWeightType(const std::string& name, const std::string& option) {
  for (WeightType t : AllWeightTypes())
    if (name == WeightTypeName(t)) return t;
  throw std::invalid_argument(option + ": '" + name + "' is not a weight type (" + WeightTypeList() + ")");
}

}  // namespace swan
