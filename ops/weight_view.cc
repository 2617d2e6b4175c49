#include "ops/weight_view.h"

#include <stdexcept>
#include <string>

#include "ops/quant_blocks.h"

namespace swan {

void WeightRowsF32(const WeightView& w, float* dst, int64_t row, int64_t count) {
  if (IsBlockQuantized(w.type)) return DequantizePackedRows(w.packed(), dst, row, count);
  if (row < 0 || count < 0 || row + count > w.n)
    throw std::out_of_range("weight rows [" + std::to_string(row) + ", " + std::to_string(row + count) + ") of " +
                            std::to_string(w.n));
  DequantizeRows(w.type, dst, static_cast<const uint8_t*>(w.data) + size_t(row) * WeightRowBytes(w.type, w.k), count,
                 w.k);
}

}  // namespace swan
