// The online softmax's e^x (attention/softmax_exp-inl.h, prefill and
// decode) over an array, on the target the kernels dispatch to: for tests.
#pragma once

#include <cstdint>

namespace swan {

// y [n] = e^x [n] as the online softmax computes it (x <= 0).
void SoftmaxExpForTest(const float* x, int64_t n, float* y);

}  // namespace swan
