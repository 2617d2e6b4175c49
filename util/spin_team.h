// A team of helper threads for short parallel regions (decode's matrix
// products and attention), which wait for work by spinning instead of
// sleeping in the kernel.
//
// Why: every OpenMP region that libgomp starts and joins makes two futex
// system calls on the calling thread, whatever OMP_WAIT_POLICY and
// GOMP_SPINCOUNT say. In the VMs swan is measured on a system call costs
// about a microsecond: an empty 2-thread OpenMP region took 2.8 us there
// (Zen 5 VM), the same fork and join through this team 0.4 us, and a
// decode step runs about 55 such regions (Gemma 3 shape, 12 layers).
#pragma once

namespace swan {

// Runs fn(ctx, t) for every t in [0, threads) at once: t = 0 on the calling
// thread, the others on the team's helpers; returns when all are done.
// Returns false having run nothing where it does not apply: threads < 2,
// inside an OpenMP region, while another thread's call is running, or with
// SWAN_SPIN_TEAM=0 in the environment; the caller then runs the work its
// own way (OpenMP). fn must not throw on a helper (as in an OpenMP region,
// that ends the program).
//
// Helpers spin for 20 us after their last work, then spin yielding their
// core to any thread that wants it up to half a millisecond, then sleep
// until the next call, so they do not keep a core from OpenMP's threads
// (prefill) or from other programs.
bool RunOnSpinTeamRaw(int threads, void (*fn)(void* ctx, int t), void* ctx);

template <class Fn>
bool RunOnSpinTeam(int threads, const Fn& fn /*(int t)*/) {
  return RunOnSpinTeamRaw(
      threads, [](void* ctx, int t) { (*static_cast<const Fn*>(ctx))(t); },
      const_cast<void*>(static_cast<const void*>(&fn)));
}

}  // namespace swan
