// Ways to share a range of work among threads: equal shares or pieces in
// turn among OpenMP's (ParallelFor, ParallelRanges); a contiguous share
// per thread that the others help with once theirs is done
// (ForEachOwnedFirst), or each item to the next free thread
// (ForEachDynamic), these two on OpenMP's threads or the spin team's.
#pragma once

#include <omp.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "util/spin_team.h"

namespace swan {

// Which threads run a region. The spin team (util/spin_team.h) suits
// decode's short regions, back to back; between OpenMP's regions (prefill)
// its helper, still spinning, takes the core an OpenMP thread needs:
// `swan generate` prefilled the side by side's Gemma 3 f16 at 0.7x the
// speed with prefill attention on the team (Zen 5, 2 threads).
enum class RegionThreads { kOpenMp, kSpinTeam };

// Runs fn(i) for every i in [0, n): in equal shares on the OpenMP threads
// when `parallel`, else in a plain loop. Why not an if clause: libgomp
// still builds a team of one for a region whose if clause is false, about
// 2 us (Zen 5 VM), and a decode step made about 115 such regions (Gemma 3
// shape: its norms, RoPE and the activation, for one token each).
template <class Fn>
void ParallelFor(int64_t n, bool parallel, const Fn& fn) {
  if (!parallel || n < 2) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) fn(i);
}

// Splits [0, n) into pieces of `piece` and runs fn(begin, end) on each, the
// pieces shared among the OpenMP threads (one piece: no parallel region).
template <class Fn>
void ParallelRanges(int64_t n, int64_t piece, const Fn& fn) {
  const int64_t pieces = (n + piece - 1) / piece;
  ParallelFor(pieces, pieces > 1, [&](int64_t p) {
    const int64_t begin = p * piece, end = begin + piece < n ? begin + piece : n;
    fn(begin, end);
  });
}

// Runs fn(i) for every i in [bounds[0], bounds[threads]) on `threads` >= 1
// threads: thread t owns [bounds[t], bounds[t + 1]) and takes its
// items in order, one at a time, then helps with what is left of the
// others' ranges. Why not schedule(static): a thread that loses its core
// for a while on a shared machine would hold everyone at the region's end.
// Why not schedule(dynamic): items taken alternately by the threads break
// each thread's reading into short runs of memory, which read slower when
// every item is a run of weights (ops/gemv.cc).
template <class Fn>
void ForEachOwnedFirst(const int64_t* bounds /*[threads + 1]*/, int threads, RegionThreads on, const Fn& fn) {
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
  auto run_from = [&](int self) {
    for (int o = 0; o < threads; ++o) {
      Range& range = ranges[size_t((self + o) % threads)];
      for (int64_t i; (i = range.next.fetch_add(1, std::memory_order_relaxed)) < range.end;) fn(i);
    }
  };
  if (on == RegionThreads::kSpinTeam && RunOnSpinTeam(threads, run_from)) return;
    // When fewer threads start than asked (a nested region), the ranges of
    // those that did not are taken as left over.
#pragma omp parallel num_threads(threads)
  run_from(omp_get_thread_num());
}

// Runs fn(i) for every i in [0, n) on `threads` threads, each item taken
// by whichever thread is free next (items of uneven cost).
template <class Fn>
void ForEachDynamic(int64_t n, int threads, RegionThreads on, const Fn& fn) {
  if (threads < 2 || n < 2) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<int64_t> next{0};
  auto take = [&](int) {
    for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) fn(i);
  };
  if (on == RegionThreads::kSpinTeam && RunOnSpinTeam(threads, take)) return;
#pragma omp parallel num_threads(threads)
  take(0);
}

}  // namespace swan
