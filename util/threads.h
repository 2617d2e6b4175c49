// The threads swan computes with, and how many of them the next step (a
// decode token, a prefill, a training step) runs on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace swan {

// The most threads swan computes with: set by SetThreadLimit (a command's
// -t N), else OMP_NUM_THREADS when set, else the cores this process may
// run on (its CPU affinity mask).
int ThreadLimit();
// n >= 1; also sets OpenMP's thread count for the calling thread's regions.
void SetThreadLimit(int n);

// Sets OpenMP's thread count for the calling thread's next step and
// returns it: `max_threads`, or fewer while other programs keep this
// process's cores busy: the cores they leave idle, at least one.
//
// Why: a parallel region waits for its slowest thread, and on a busy
// machine (a build, a browser, another program computing) the OS
// deschedules threads for whole time slices, so every region waits for
// one. Measured on a 2-core Zen 3 with a busy loop per core beside swan:
// swan-7m decoded at 45-820 tok/s on 2 threads from one run to the next
// and at 1000-1470 on 1 (1640-1800 on 2 when idle); Qwen2.5-0.5B's shape
// at 8-17 and 17-20. A shorter OpenMP spin (cli/main.cc) avoids the worst
// runs but not the loss, and timing windows of a few steps on each count
// picked the wrong one: right after a switch the scheduler has not yet
// moved the threads, so 1 thread measured 650-830 tok/s there against
// 1000-1470 once settled. What the other programs take is measured
// directly instead: /proc/stat's busy time on this process's CPUs minus
// this process's own CPU time, over the last 50 ms or more.
//
// Only after EnableAdaptiveThreads(true) (the swan command calls it;
// library tests keep their thread count so that their figures repeat),
// and not with SWAN_ADAPT_THREADS=0 in the environment (to measure one
// count on its own).
int ThreadsForNextStep(int max_threads = ThreadLimit());
// The same count without setting it (for a region's num_threads clause).
int IdleThreads(int max_threads = ThreadLimit());
void EnableAdaptiveThreads(bool on);

// The rule, for tests: the idle cores (cpus - others_busy, rounded), from
// 1 to max_threads.
int ThreadsForLoad(int cpus, double others_busy, int max_threads);

// Busy time (user, nice, system, irq, softirq, steal; in clock ticks)
// summed over the CPUs of `cpus` in a /proc/stat text; -1 when it has no
// per-CPU lines.
int64_t BusyTicks(const std::string& proc_stat, const std::vector<int>& cpus);

}  // namespace swan
