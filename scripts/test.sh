#!/usr/bin/env bash
# Builds swan and runs its tests. What CI runs (the default):
#   1. the C++ style check (.clang-format, scripts/check_format.sh);
#   2. a Release build with warnings as errors, and every test;
#   3. on a CPU with AVX-512, the tests labelled `isa` again as an AVX2-only
#      CPU runs them (oneDNN capped to AVX2, Highway to its AVX2 target);
#   4. an AddressSanitizer + UndefinedBehaviorSanitizer build, and the tests
#      labelled `memory` under it;
#   5. the libFuzzer targets, 15 s each.
# Usage: scripts/test.sh [--quick] [--no-sanitize]
#   --quick        the Release build and the tests labelled `quick` only
#                  (unit tests and fast CLI checks: what to run while working)
#   --no-sanitize  skip stages 4 and 5
# Builds go through ccache when it is installed (scripts/setup.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
sanitize=1
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --no-sanitize) sanitize=0 ;;
    *) echo "usage: scripts/test.sh [--quick] [--no-sanitize]" >&2; exit 2 ;;
  esac
done

# stage NAME: starts a stage; the times of all stages print at the end.
stage_names=()
stage_times=()
stage_started=$SECONDS
stage() {
  [ ${#stage_names[@]} -gt 0 ] && stage_times+=($((SECONDS - stage_started)))
  stage_names+=("$1")
  stage_started=$SECONDS
  echo "== test.sh: $1"
}
report() {
  stage_times+=($((SECONDS - stage_started)))
  echo "== test.sh: stage times (s)"
  for i in "${!stage_names[@]}"; do printf '  %6d  %s\n' "${stage_times[$i]}" "${stage_names[$i]}"; done
  printf '  %6d  total\n' "$SECONDS"
}

stage "setup"
bash scripts/setup.sh
# The Vulkan tests fail instead of skipping when no device is found
# (setup.sh installs lavapipe, a Vulkan device on the CPU).
export SWAN_REQUIRE_VULKAN=1
jobs=$(nproc)
launcher=()
if command -v ccache > /dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths relative to the checkout, and the build folder left out of the
  # debug builds' hash, so that another clone hits the cache.
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
fi
# Reference data some tests compare against (fetched once, cached).
for fetch in scripts/fetch_test_*.sh; do
  [ -e "$fetch" ] && bash "$fetch"
done

stage "style check"
bash scripts/check_format.sh

stage "release build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWAN_WERROR=ON "${launcher[@]}" > /dev/null
cmake --build build -j "$jobs"

if [ $quick = 1 ]; then
  stage "quick tests"
  (cd build && ctest --output-on-failure -j "$jobs" -L quick)
  report
  exit 0
fi

stage "release tests"
(cd build && ctest --output-on-failure -j "$jobs")

# A build machine with AVX-512 or AMX must fail where an AVX2 user would; on
# a CPU without AVX-512 the pass above already took these paths.
if grep -qw avx512f /proc/cpuinfo; then
  stage "isa tests capped to AVX2"
  (cd build && DNNL_MAX_CPU_ISA=AVX2 SWAN_SIMD_TARGET=AVX2 ctest --output-on-failure -j "$jobs" -L isa)
else
  echo "test.sh: this CPU has no AVX-512: the AVX2 paths ran above; no capped pass"
fi

if [ $sanitize = 1 ]; then
  stage "sanitizer build"
  # -O1 -g1 (line tables for the reports): less than half the compile time
  # of -O2 -g (docs/performance.md, "The test suite").
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
    -DSWAN_WERROR=ON -DSWAN_SANITIZE=ON -DSWAN_BUILD_BENCH=OFF "${launcher[@]}" > /dev/null
  cmake --build build-asan -j "$jobs"
  stage "memory tests under the sanitizers"
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$jobs" -L memory)

  # Short libFuzzer runs of every target (scripts/fuzz.sh lists them).
  stage "fuzzers"
  bash scripts/fuzz.sh 15
fi
report
