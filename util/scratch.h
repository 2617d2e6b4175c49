// A grow-only float buffer that a thread keeps for a temporary it makes
// again and again: a block's [n, width] activations, layer after layer, or
// a GEMM's packed panels, product after product. A fresh vector of a few
// MB each time costs a page fault and zeroing per 4 KB (glibc maps large
// blocks anew, or keeps them in a heap that freed blocks of other sizes
// fragment). The contents are not cleared between uses.
#pragma once

#include <hwy/aligned_allocator.h>

#include <cstddef>

namespace swan {

class ScratchFloats {
 public:
  // At least n floats, 64-byte aligned; earlier contents are lost when it grows.
  float* Get(size_t n) {
    if (n > size_) {
      data_.reset();  // the old block goes before the new one comes
      data_ = hwy::AllocateAligned<float>(n);
      size_ = n;
    }
    return data_.get();
  }

 private:
  hwy::AlignedFreeUniquePtr<float[]> data_;
  size_t size_ = 0;
};

}  // namespace swan
