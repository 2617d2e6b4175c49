#include "util/simd_target.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "util/simd_target.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace swan {
namespace HWY_NAMESPACE {
int64_t TargetBit() { return HWY_TARGET; }
}  // namespace HWY_NAMESPACE
}  // namespace swan
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <hwy/targets.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace swan {

HWY_EXPORT(TargetBit);

int64_t DispatchedSimdTargetBit() { return HWY_DYNAMIC_DISPATCH(TargetBit)(); }

bool AvxBF16DotsHere() {
#if defined(__x86_64__)
  static const bool cpu = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
  }();
  const int64_t target = DispatchedSimdTargetBit();
  return cpu && (target == HWY_AVX3 || target == HWY_AVX3_DL);
#else
  return false;
#endif
}

namespace {

constexpr int64_t kCappable[] = {HWY_AVX3_DL, HWY_AVX3, HWY_AVX2, HWY_SSE4, HWY_SSSE3, HWY_EMU128, HWY_SCALAR};

std::string Names(int64_t targets) {
  std::string out;
  for (int64_t t = targets; t != 0; t &= t - 1) {  // lowest bit first: the best target
    if (!out.empty()) out += " ";
    out += hwy::TargetName(t & ~(t - 1));
  }
  return out;
}

}  // namespace

void ApplySimdTargetCap() {
  const char* cap = std::getenv("SWAN_SIMD_TARGET");
  if (!cap || !*cap) return;
  for (int64_t target : kCappable)
    if (std::string(hwy::TargetName(target)) == cap) {
      // Highway numbers better targets with lower bits.
      hwy::DisableTargets(target - 1);
      return;
    }
  std::string names;
  for (int64_t target : kCappable) names += std::string(names.empty() ? "" : ", ") + hwy::TargetName(target);
  throw std::invalid_argument(std::string("SWAN_SIMD_TARGET: unknown target '") + cap + "' (" + names + ")");
}

std::string DispatchedSimdTarget() {
  // From the dispatch table, not hwy::SupportedTargets(): in Highway 1.0.3
  // that call resets the dispatch to every target the CPU has, undoing
  // SWAN_SIMD_TARGET's cap for the kernels that run after it.
  return hwy::TargetName(DispatchedSimdTargetBit());
}

std::string CompiledSimdTargets() { return Names(HWY_TARGETS); }

}  // namespace swan
#endif  // HWY_ONCE
