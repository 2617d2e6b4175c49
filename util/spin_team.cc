#include "util/spin_team.h"

#include <omp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

namespace swan {
namespace {

inline void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// How long a helper spins for its next work, then spins yielding its core
// to any other thread that wants it (OpenMP's, between decode and
// prefill), before it sleeps.
constexpr std::chrono::microseconds kSpinBeforeYield(20), kSpinBeforeSleep(500);

// A call's generation word: the calls so far, shifted, and the call's
// thread count in the low byte, so that a helper learns whether it takes
// part from the word it waited for.
constexpr int kThreadBits = 8;
constexpr int kMostThreads = (1 << kThreadBits) - 1;

class SpinTeam {
 public:
  bool Run(int threads, void (*fn)(void*, int), void* ctx) {
    std::unique_lock<std::mutex> caller(call_mu_, std::try_to_lock);
    if (!caller.owns_lock()) return false;
    const uint64_t word = generation_.load(std::memory_order_relaxed);
    while (helpers_ < threads - 1) std::thread(&SpinTeam::HelperLoop, this, helpers_++, word).detach();
    // Read by the helpers that take part once they see the new word.
    job_fn_ = fn;
    job_ctx_ = ctx;
    pending_.store(threads - 1, std::memory_order_relaxed);
    generation_.store(((word >> kThreadBits) + 1) << kThreadBits | uint64_t(threads), std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(sleep_mu_);
      wake_.notify_all();
    }
    std::exception_ptr error;
    try {
      fn(ctx, 0);
    } catch (...) {
      // The helpers still use ctx: rethrown once they are done.
      error = std::current_exception();
    }
    while (pending_.load(std::memory_order_acquire) > 0) Pause();
    if (error) std::rethrow_exception(error);
    return true;
  }

 private:
  // Helper `index` runs share index + 1 of the calls that have that many
  // threads; it sleeps through the others (-t 3, then 2 steps at 2 threads
  // on a busy machine) so as not to take a core it is not using.
  void HelperLoop(int index, uint64_t seen) {
    bool took_part = true;
    for (;;) {
      seen = NextWord(seen, /*spin=*/took_part);
      took_part = index + 1 < int(seen & kMostThreads);
      if (!took_part) continue;
      job_fn_(job_ctx_, index + 1);
      pending_.fetch_sub(1, std::memory_order_release);
    }
  }

  // Waits for a generation word other than `seen`: spinning (if `spin`),
  // then asleep.
  uint64_t NextWord(uint64_t seen, bool spin) {
    const auto start = std::chrono::steady_clock::now();
    for (auto spun = std::chrono::steady_clock::duration(0); spin && spun < kSpinBeforeSleep;
         spun = std::chrono::steady_clock::now() - start) {
      for (int i = 0; i < 256; ++i) {
        const uint64_t word = generation_.load(std::memory_order_acquire);
        if (word != seen) return word;
        Pause();
      }
      if (spun > kSpinBeforeYield) std::this_thread::yield();
    }
    std::unique_lock<std::mutex> lock(sleep_mu_);
    // The caller stores the word, then reads sleeping_; this thread counts
    // itself, then reads the word (both seq_cst), so one of the two sees
    // the other and no wake is lost.
    sleeping_.fetch_add(1, std::memory_order_seq_cst);
    wake_.wait(lock, [&] { return generation_.load(std::memory_order_seq_cst) != seen; });
    sleeping_.fetch_sub(1, std::memory_order_relaxed);
    return generation_.load(std::memory_order_acquire);
  }

  std::mutex call_mu_;  // one call at a time
  int helpers_ = 0;     // helper threads started (they run until the process ends)
  void (*job_fn_)(void*, int) = nullptr;
  void* job_ctx_ = nullptr;
  alignas(64) std::atomic<uint64_t> generation_{0};  // the generation word of the last call
  alignas(64) std::atomic<int> pending_{0};          // helpers yet to finish this call
  alignas(64) std::atomic<int> sleeping_{0};
  std::mutex sleep_mu_;
  std::condition_variable wake_;
};

bool TeamDisabled() {
  static const bool disabled = [] {
    const char* env = std::getenv("SWAN_SPIN_TEAM");
    return env && std::strcmp(env, "0") == 0;
  }();
  return disabled;
}

}  // namespace

bool RunOnSpinTeamRaw(int threads, void (*fn)(void* ctx, int t), void* ctx) {
  if (threads < 2 || threads > kMostThreads || omp_in_parallel() || TeamDisabled()) return false;
  // Never destroyed: its helpers are detached and may still be spinning on
  // it while the process exits.
  static SpinTeam& team = *new SpinTeam;
  return team.Run(threads, fn, ctx);
}

}  // namespace swan
