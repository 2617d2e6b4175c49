#include "util/simd_target.h"

#include <hwy/highway.h>
#include <hwy/targets.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace swan {
namespace {

constexpr int64_t kCappable[] = {HWY_AVX3_DL, HWY_AVX3,   HWY_AVX2,  HWY_SSE4,
                                 HWY_SSSE3,   HWY_EMU128, HWY_SCALAR};

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
  for (int64_t target : kCappable)
    names += std::string(names.empty() ? "" : ", ") + hwy::TargetName(target);
  throw std::invalid_argument(std::string("SWAN_SIMD_TARGET: unknown target '") + cap + "' (" +
                              names + ")");
}

std::string DispatchedSimdTarget() {
  const int64_t targets = hwy::SupportedTargets() & HWY_TARGETS;
  return targets ? hwy::TargetName(targets & ~(targets - 1)) : "none";
}

std::string CompiledSimdTargets() { return Names(HWY_TARGETS); }

}  // namespace swan
