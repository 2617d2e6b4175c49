#include "util/parallel_ranges.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace swan {
namespace {

// Every item runs exactly once, whatever the shares: empty ones, uneven
// ones, more threads than items.
TEST(ParallelRanges, OwnedFirstRunsEveryItemOnce) {
  const std::vector<std::vector<int64_t>> cases = {{0, 10},       {0, 5, 10},      {0, 0, 7},    {0, 7, 7},
                                                   {3, 4, 9, 20}, {0, 1, 2, 3, 4}, {0, 0, 0, 0}, {5, 5, 5, 6}};
  for (const std::vector<int64_t>& bounds : cases) {
    const int threads = int(bounds.size()) - 1;
    std::vector<std::atomic<int>> runs(size_t(bounds.back()));  // [items] times each ran
    for (auto& r : runs) r = 0;
    ForEachOwnedFirst(bounds.data(), threads, RegionThreads::kOpenMp, [&](int64_t i) { runs[size_t(i)]++; });
    for (int64_t i = 0; i < bounds.back(); ++i)
      EXPECT_EQ(runs[size_t(i)].load(), i >= bounds[0] ? 1 : 0) << "item " << i << ", " << threads << " threads";
  }
}

// A thread that is held up (a core taken by another program) leaves its
// range's later items to the others: on the spin team, and on OpenMP's
// threads inside a region (num_threads(2) starts two whatever
// OMP_NUM_THREADS says).
TEST(ParallelRanges, OwnedFirstHelpsWithASlowThreadsItems) {
  const int64_t bounds[] = {0, 8, 16};
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> slow_items{0};  // items the other thread ran; its first takes 200 ms
  for (RegionThreads on : {RegionThreads::kOpenMp, RegionThreads::kSpinTeam}) {
    slow_items = 0;
    ForEachOwnedFirst(bounds, 2, on, [&](int64_t) {
      if (std::this_thread::get_id() == caller)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // time for the other to start
      else if (slow_items++ == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    });
    // Shares kept to their owners would leave 8 items to the slow thread.
    EXPECT_GE(slow_items.load(), 1);
    EXPECT_LE(slow_items.load(), 2);
  }
}

TEST(ParallelRanges, ParallelForRunsEveryItemOnce) {
  for (bool parallel : {false, true})
    for (int64_t n : {0, 1, 7, 1000}) {
      std::vector<std::atomic<int>> runs(static_cast<size_t>(n));  // [n] times each ran
      for (auto& r : runs) r = 0;
      ParallelFor(n, parallel, [&](int64_t i) { runs[size_t(i)]++; });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(runs[size_t(i)].load(), 1) << "item " << i << ", parallel " << parallel;
    }
}

TEST(ParallelRanges, DynamicRunsEveryItemOnce) {
  for (RegionThreads on : {RegionThreads::kOpenMp, RegionThreads::kSpinTeam})
    for (int threads : {1, 2, 3})
      for (int64_t n : {0, 1, 5, 1000}) {
        std::vector<std::atomic<int>> runs(static_cast<size_t>(n));  // [n] times each ran
        for (auto& r : runs) r = 0;
        ForEachDynamic(n, threads, on, [&](int64_t i) { runs[size_t(i)]++; });
        for (int64_t i = 0; i < n; ++i)
          EXPECT_EQ(runs[size_t(i)].load(), 1) << "item " << i << ", " << threads << " threads";
      }
}

}  // namespace
}  // namespace swan
