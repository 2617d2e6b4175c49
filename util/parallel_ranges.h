// Splits [0, n) into pieces of `piece` and runs fn(begin, end) on each, the
// pieces shared among the OpenMP threads (one piece: no parallel region).
#pragma once

#include <cstdint>

namespace swan {

template <class Fn>
void ParallelRanges(int64_t n, int64_t piece, const Fn& fn) {
  const int64_t pieces = (n + piece - 1) / piece;
#pragma omp parallel for schedule(static) if (pieces > 1)
  for (int64_t p = 0; p < pieces; ++p) {
    const int64_t begin = p * piece, end = begin + piece < n ? begin + piece : n;
    fn(begin, end);
  }
}

}  // namespace swan
