// Ways to share a range of work among the OpenMP threads: equal pieces in
// turn (ParallelRanges), or a contiguous share per thread that the others
// help with once theirs is done (ForEachOwnedFirst).
#pragma once

#include <omp.h>

#include <atomic>
#include <cstdint>
#include <memory>

namespace swan {

// Splits [0, n) into pieces of `piece` and runs fn(begin, end) on each, the
// pieces shared among the OpenMP threads (one piece: no parallel region).
template <class Fn>
void ParallelRanges(int64_t n, int64_t piece, const Fn& fn) {
  const int64_t pieces = (n + piece - 1) / piece;
#pragma omp parallel for schedule(static) if (pieces > 1)
  for (int64_t p = 0; p < pieces; ++p) {
    const int64_t begin = p * piece, end = begin + piece < n ? begin + piece : n;
    fn(begin, end);
  }
}

// Runs fn(i) for every i in [bounds[0], bounds[threads]) on `threads` >= 1
// OpenMP threads: thread t owns [bounds[t], bounds[t + 1]) and takes its
// items in order, one at a time, then helps with what is left of the
// others' ranges. Why not schedule(static): a thread that loses its core
// for a while on a shared machine would hold everyone at the region's end.
// Why not schedule(dynamic): items taken alternately by the threads break
// each thread's reading into short runs of memory, which read slower when
// every item is a run of weights (ops/gemv.cc).
template <class Fn>
void ForEachOwnedFirst(const int64_t* bounds /*[threads + 1]*/, int threads, const Fn& fn) {
  if (threads < 2) {
    for (int64_t i = bounds[0]; i < bounds[threads]; ++i) fn(i);
    return;
  }
  struct alignas(64) Range {  // a cache line each: owners do not share one
    std::atomic<int64_t> next;
    int64_t end;
  };
  std::unique_ptr<Range[]> ranges(new Range[size_t(threads)]);  // [threads]
  for (int t = 0; t < threads; ++t) {
    ranges[size_t(t)].next.store(bounds[t], std::memory_order_relaxed);
    ranges[size_t(t)].end = bounds[t + 1];
  }
#pragma omp parallel num_threads(threads)
  {
    // When fewer threads start than asked (a nested region), the ranges of
    // those that did not are taken as left over.
    const int self = omp_get_thread_num();
    for (int o = 0; o < threads; ++o) {
      Range& range = ranges[size_t((self + o) % threads)];
      for (int64_t i; (i = range.next.fetch_add(1, std::memory_order_relaxed)) < range.end;) fn(i);
    }
  }
}

}  // namespace swan
