#include "util/threads.h"

#include <omp.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

namespace swan {
namespace {

std::atomic<int> g_limit{0};  // 0: not set by SetThreadLimit
std::atomic<bool> g_adaptive{false};

int DefaultLimit() {
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    const int n = std::atoi(env);  // "4" or the first of "4,2"
    if (n >= 1) return n;
  }
  // libgomp counts the affinity mask, a system call: asked once, since the
  // attention kernels' plans ask for the limit on every call.
  static const int procs = std::max(1, omp_get_num_procs());
  return procs;
}

// Cores' worth of CPU time that other programs (and a hypervisor's steal)
// took on this process's CPUs, from readings at least kInterval apart.
// Process-wide: every caller sees the same estimate.
class OtherLoad {
 public:
  static constexpr double kInterval = 0.05;  // s: 5 ticks a CPU at 100 Hz

  OtherLoad() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) cpus_.push_back(c);
    if (cpus_.empty())
      for (int c = 0; c < omp_get_num_procs(); ++c) cpus_.push_back(c);
    ticks_per_s_ = double(sysconf(_SC_CLK_TCK));
    Read(&last_);
    // Until a second reading: the tasks running now besides this one, the
    // only thread the process has when the command starts.
    std::ifstream loadavg("/proc/loadavg");  // "0.52 0.58 0.46 3/345 12345"
    double avg[3];
    int running = 0;
    char slash = 0;
    if (loadavg >> avg[0] >> avg[1] >> avg[2] >> running >> slash && slash == '/')
      busy_ = std::clamp(double(running - 1), 0.0, double(cpus_.size()));
  }

  int cpus() const { return int(cpus_.size()); }

  // The latest estimate, reading again when the last reading is old enough.
  double Busy() {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last_.when).count() < kInterval) return busy_;
    Reading r;
    if (!Read(&r)) return busy_;
    if (last_.busy_ticks < 0) {  // the first reading failed: this one starts the series
      last_ = r;
      return busy_;
    }
    const double wall = std::chrono::duration<double>(r.when - last_.when).count();
    const double all = double(r.busy_ticks - last_.busy_ticks) / ticks_per_s_;
    busy_ = std::max(0.0, (all - (r.own_seconds - last_.own_seconds)) / wall);
    last_ = r;
    return busy_;
  }

 private:
  struct Reading {
    std::chrono::steady_clock::time_point when;
    int64_t busy_ticks = -1;  // on cpus_, everyone's
    double own_seconds = 0;   // this process's CPU time
  };

  bool Read(Reading* r) const {
    std::ifstream in("/proc/stat");
    if (!in) return false;
    std::stringstream text;
    text << in.rdbuf();
    timespec own{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &own);
    r->when = std::chrono::steady_clock::now();
    r->busy_ticks = BusyTicks(text.str(), cpus_);
    r->own_seconds = double(own.tv_sec) + 1e-9 * double(own.tv_nsec);
    return r->busy_ticks >= 0;
  }

  std::mutex mu_;
  std::vector<int> cpus_;
  double ticks_per_s_ = 100;
  Reading last_;
  double busy_ = 0;
};

OtherLoad& Load() {
  static OtherLoad load;
  return load;
}

}  // namespace

int ThreadLimit() {
  const int set = g_limit.load();
  return set > 0 ? set : DefaultLimit();
}

void SetThreadLimit(int n) {
  g_limit.store(std::max(1, n));
  omp_set_num_threads(std::max(1, n));
}

void EnableAdaptiveThreads(bool on) {
  const char* env = std::getenv("SWAN_ADAPT_THREADS");
  g_adaptive.store(on && !(env && std::strcmp(env, "0") == 0));
  if (g_adaptive.load()) Load();  // the first reading, so the first step has one to compare with
}

int ThreadsForLoad(int cpus, double others_busy, int max_threads) {
  const int idle = int(std::lround(double(cpus) - others_busy));
  return std::clamp(idle, 1, std::max(1, max_threads));
}

int IdleThreads(int max_threads) {
  const int n = std::max(1, max_threads);
  return g_adaptive.load() && n > 1 ? ThreadsForLoad(Load().cpus(), Load().Busy(), n) : n;
}

int ThreadsForNextStep(int max_threads) {
  const int n = IdleThreads(max_threads);

  omp_set_num_threads(n);
  return n;
}

int64_t BusyTicks(const std::string& proc_stat, const std::vector<int>& cpus) {
  std::istringstream lines(proc_stat);
  std::string line;
  int64_t busy = 0;
  bool any = false;
  while (std::getline(lines, line)) {
    // "cpuN user nice system idle iowait irq softirq steal guest guest_nice";
    // guest time is already inside user and nice.
    if (line.size() < 4 || line.compare(0, 3, "cpu") != 0 || !std::isdigit(line[3])) continue;
    std::istringstream fields(line.substr(3));
    int cpu = -1;
    int64_t v[8] = {};
    fields >> cpu;
    for (int64_t& x : v) fields >> x;
    if (std::find(cpus.begin(), cpus.end(), cpu) == cpus.end()) continue;
    busy += v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    any = true;
  }
  return any ? busy : -1;
}

}  // namespace swan
