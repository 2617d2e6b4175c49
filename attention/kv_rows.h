// Reading single elements of a KV view and validating attention arguments.
#pragma once

#include <cstdint>
#include <cstring>

#include "attention/attention.h"
#include "util/bf16.h"
#include "util/f16.h"

namespace swan {

inline int64_t KvRowStride(const KvView& kv, const AttentionShape& s) {
  return kv.row_stride ? kv.row_stride : int64_t(s.n_kv_heads) * s.head_dim;
}

// Element c of KV head `kv_head` in row `row`, of K (is_key) or V.
inline double KvElement(const KvView& kv, const AttentionShape& s, int64_t row, int32_t kv_head, int64_t c,
                        bool is_key) {
  const int64_t index = row * KvRowStride(kv, s) + int64_t(kv_head) * s.head_dim + c;
  const void* base = is_key ? kv.k : kv.v;
  if (kv.type == KvType::kF32) return static_cast<const float*>(base)[index];
  if (kv.type == KvType::kQ8_0) {  // block index / 32: an f16 scale, then 32 int8
    const uint8_t* block = static_cast<const uint8_t*>(base) + KvBytes(kv.type, index - index % 32);
    uint16_t scale;
    std::memcpy(&scale, block, 2);
    return double(F16ToF32(scale)) * double(int8_t(block[2 + index % 32]));
  }
  return BF16ToF32(static_cast<const uint16_t*>(base)[index]);
}

}  // namespace swan
