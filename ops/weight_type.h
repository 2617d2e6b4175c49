// The element types a linear layer's weights can be stored in: float32,
// the two half widths, and eight of llama.cpp's block formats
// (ops/quant_blocks.h; the K-quants: ops/dequant_blocks.h), with the bytes a
// row of each takes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace swan {

enum class WeightType : uint8_t { kF32, kBF16, kF16, kQ8_0, kQ4_0, kQ4_1, kQ4_K, kQ5_K, kQ6_K, kQ5_0, kQ5_1 };

// "f32", "bf16", "f16", "q8_0", "q4_0", "q4_1", "q4_k", "q5_k", "q6_k", "q5_0", "q5_1"
const char* WeightTypeName(WeightType type);
// Every type, in the order they are listed to users: the one table that
// --weights, --dtype and their help texts are made from.
const std::vector<WeightType>& AllWeightTypes();
// Their names for a user: "f32, bf16, ..., q5_k or q6_k".
std::string WeightTypeList();
// The inverse of WeightTypeName; throws std::invalid_argument naming
// `option` and the accepted names.
WeightType ParseWeightType(const std::string& name, const std::string& option);

constexpr bool IsBlockQuantized(WeightType type) {
  return type == WeightType::kQ8_0 || type == WeightType::kQ4_0 || type == WeightType::kQ4_1 ||
         type == WeightType::kQ4_K || type == WeightType::kQ5_K || type == WeightType::kQ6_K ||
         type == WeightType::kQ5_0 || type == WeightType::kQ5_1;
}

// Values per block of the quantized formats (the kernels' unit; the
// K-quants' super-blocks hold 8).
constexpr int64_t kQuantBlockValues = 32;
// Bytes of one block of the 32-value formats: an f16 scale and 32 int8
// (Q8_0) or 32 nibbles (Q4_0), or an f16 scale, an f16 min and 32 nibbles
// (Q4_1); Q5_0 and Q5_1 are Q4_0 and Q4_1 with 4 bytes of fifth bits
// between the scale (and min) and the nibbles.
constexpr size_t QuantBlockBytes(WeightType type) {
  return type == WeightType::kQ8_0   ? 34
         : type == WeightType::kQ4_1 ? 20
         : type == WeightType::kQ5_0 ? 22
         : type == WeightType::kQ5_1 ? 24
                                     : 18;
}
// The K-quants' super-blocks: 256 values in 144 (Q4_K), 176 (Q5_K) or 210
// (Q6_K) bytes.
constexpr int64_t kSuperValues = 256;
constexpr size_t kQ4KBytes = 144, kQ5KBytes = 176, kQ6KBytes = 210;
constexpr bool IsSuperBlocked(WeightType type) {
  return type == WeightType::kQ4_K || type == WeightType::kQ5_K || type == WeightType::kQ6_K;
}

// A block format's row length must be a multiple of this.
constexpr int64_t RowMultiple(WeightType type) { return IsSuperBlocked(type) ? kSuperValues : kQuantBlockValues; }

// Bytes of one row of `in` values (in a multiple of RowMultiple for the
// block formats).
constexpr size_t WeightRowBytes(WeightType type, int64_t in) {
  switch (type) {
    case WeightType::kF32: return size_t(in) * 4;
    case WeightType::kBF16:
    case WeightType::kF16: return size_t(in) * 2;
    case WeightType::kQ8_0:
    case WeightType::kQ4_0:
    case WeightType::kQ4_1:
    case WeightType::kQ5_0:
    case WeightType::kQ5_1: return size_t(in / kQuantBlockValues) * QuantBlockBytes(type);
    case WeightType::kQ4_K: return size_t(in / kSuperValues) * kQ4KBytes;
    case WeightType::kQ5_K: return size_t(in / kSuperValues) * kQ5KBytes;
    case WeightType::kQ6_K: return size_t(in / kSuperValues) * kQ6KBytes;
  }
  return 0;
}

// Whether a row of `in` values can be stored as `type`.
constexpr bool RowFits(WeightType type, int64_t in) { return !IsBlockQuantized(type) || in % RowMultiple(type) == 0; }

}  // namespace swan
