#include "util/threads.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace swan {
namespace {

TEST(Threads, UseTheCoresOthersLeaveIdle) {
  EXPECT_EQ(ThreadsForLoad(2, 0.0, 2), 2);
  EXPECT_EQ(ThreadsForLoad(2, 0.4, 2), 2);  // a daemon waking now and then
  EXPECT_EQ(ThreadsForLoad(2, 0.6, 2), 1);
  EXPECT_EQ(ThreadsForLoad(2, 1.0, 2), 1);  // one busy loop: the free core
  EXPECT_EQ(ThreadsForLoad(2, 2.0, 2), 1);  // every core busy: still one
  EXPECT_EQ(ThreadsForLoad(8, 2.6, 8), 5);
  EXPECT_EQ(ThreadsForLoad(8, 0.0, 4), 4);  // never more than asked
  EXPECT_EQ(ThreadsForLoad(1, 3.0, 0), 1);
}

TEST(Threads, BusyTicksSumTheCpusOfTheMask) {
  const std::string stat =
      "cpu  30 1 6 1000 9 2 3 4 0 0\n"
      "cpu0 10 1 2 500 4 1 1 1 0 0\n"
      "cpu1 20 0 4 500 5 1 2 3 0 0\n"
      "intr 12345 0 0\n";
  EXPECT_EQ(BusyTicks(stat, {0}), 10 + 1 + 2 + 1 + 1 + 1);  // idle and iowait left out
  EXPECT_EQ(BusyTicks(stat, {1}), 20 + 0 + 4 + 1 + 2 + 3);
  EXPECT_EQ(BusyTicks(stat, {0, 1}), 16 + 30);
  EXPECT_EQ(BusyTicks(stat, {5}), -1);
  EXPECT_EQ(BusyTicks("intr 1 2 3\n", {0}), -1);
  std::ifstream real("/proc/stat");
  if (real) {
    std::stringstream text;
    text << real.rdbuf();
    EXPECT_GE(BusyTicks(text.str(), {0, 1, 2, 3}), 0);
  }
}

// Busy processes on every core make the next step run on one thread; the
// same with SWAN_ADAPT_THREADS=0 keeps the limit.
TEST(Threads, AnotherProgramOnEveryCoreLeavesOneThread) {
  const int cpus = std::max(2, omp_get_num_procs());
  std::vector<pid_t> children;
  for (int i = 0; i < cpus; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0)
      for (;;) asm volatile("" ::: "memory");  // a busy loop, until killed
    children.push_back(pid);
  }
  EnableAdaptiveThreads(true);
  int adapted = cpus;
  for (int i = 0; i < 6 && adapted > 1; ++i) {  // readings 50 ms or more apart
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    adapted = ThreadsForNextStep(cpus);
  }
  setenv("SWAN_ADAPT_THREADS", "0", 1);
  EnableAdaptiveThreads(true);
  const int fixed = ThreadsForNextStep(cpus);
  unsetenv("SWAN_ADAPT_THREADS");
  EnableAdaptiveThreads(false);
  for (pid_t pid : children) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  EXPECT_EQ(adapted, 1);
  EXPECT_EQ(omp_get_max_threads(), fixed);
  EXPECT_EQ(fixed, cpus);
}

TEST(Threads, LimitFollowsSetThreadLimit) {
  const int before = ThreadLimit();
  SetThreadLimit(3);
  EXPECT_EQ(ThreadLimit(), 3);
  EXPECT_EQ(omp_get_max_threads(), 3);
  EXPECT_EQ(ThreadsForNextStep(), 3);  // not adaptive here: the limit
  SetThreadLimit(before);
}

}  // namespace
}  // namespace swan
