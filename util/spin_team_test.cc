#include "util/spin_team.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace swan {
namespace {

// Every index runs once, index 0 on the caller and the others on threads of
// their own, whether the helpers are spinning (calls back to back) or
// asleep (a pause longer than their spin).
TEST(SpinTeam, RunsEveryIndexOnceOnItsOwnThread) {
  for (int threads : {2, 3, 4, 2, 3}) {
    for (int pause_us : {0, 2000}) {
      std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
      std::vector<std::atomic<int>> runs(static_cast<size_t>(threads));  // [threads] times index t ran
      std::vector<std::thread::id> ids(static_cast<size_t>(threads));    // [threads] the thread that ran t
      for (auto& r : runs) r = 0;
      ASSERT_TRUE(RunOnSpinTeam(threads, [&](int t) {
        runs[size_t(t)]++;
        ids[size_t(t)] = std::this_thread::get_id();
      }));
      std::set<std::thread::id> distinct(ids.begin(), ids.end());
      EXPECT_EQ(int(distinct.size()), threads);
      EXPECT_EQ(ids[0], std::this_thread::get_id());
      for (int t = 0; t < threads; ++t) EXPECT_EQ(runs[size_t(t)].load(), 1) << threads << " threads, index " << t;
    }
  }
}

// Many short calls in a row: each returns only once all its work is done.
TEST(SpinTeam, EachCallReturnsAfterAllItsWork) {
  std::atomic<int64_t> sum{0};
  for (int call = 0; call < 5000; ++call) {
    const int threads = call % 100 == 99 ? 3 : 2;  // a helper that sits out most calls
    ASSERT_TRUE(RunOnSpinTeam(threads, [&](int t) { sum += t + 1; }));
    ASSERT_EQ(sum.load(), threads * (threads + 1) / 2) << "call " << call;
    sum = 0;
  }
}

// Where the team does not apply, it runs nothing and says so.
TEST(SpinTeam, DeclinesOneThreadAndOpenMpRegions) {
  int runs = 0;
  EXPECT_FALSE(RunOnSpinTeam(1, [&](int) { ++runs; }));
  std::atomic<int> accepted{0};
#pragma omp parallel num_threads(2)
  accepted += RunOnSpinTeam(2, [&](int) { ++runs; }) ? 1 : 0;
  EXPECT_EQ(accepted.load(), 0);
  EXPECT_EQ(runs, 0);
}

// A second thread's call while one runs is declined (it then uses OpenMP),
// not queued behind the first or mixed into it.
TEST(SpinTeam, DeclinesACallWhileAnotherRuns) {
  std::atomic<bool> inside{false}, release{false};
  std::thread first([&] {
    EXPECT_TRUE(RunOnSpinTeam(2, [&](int t) {
      if (t == 0) {
        inside = true;
        while (!release) std::this_thread::yield();
      }
    }));
  });
  while (!inside) std::this_thread::yield();
  EXPECT_FALSE(RunOnSpinTeam(2, [](int) {}));
  release = true;
  first.join();
}

// An exception from the caller's share comes out of the call, after the
// helpers' shares are done (they may still use what the caller holds).
TEST(SpinTeam, CallersExceptionWaitsForTheHelpers) {
  std::atomic<int> helper_done{0};
  EXPECT_THROW(RunOnSpinTeam(2,
                             [&](int t) {
                               if (t == 0) throw std::runtime_error("share 0");
                               std::this_thread::sleep_for(std::chrono::milliseconds(20));
                               helper_done = 1;
                             }),
               std::runtime_error);
  EXPECT_EQ(helper_done.load(), 1);
}

}  // namespace
}  // namespace swan
