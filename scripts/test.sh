#!/usr/bin/env bash
# Builds swan and runs every test: a Release build with warnings as errors
# (on an AVX-512 machine twice: as built, then capped to AVX2), then the
# same tests under AddressSanitizer + UndefinedBehaviorSanitizer.
# Usage: scripts/test.sh [--no-sanitize]
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
jobs=$(nproc)

# Reference data some tests compare against (fetched once, cached).
for fetch in scripts/fetch_test_*.sh; do
  [ -e "$fetch" ] && bash "$fetch"
done

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWAN_WERROR=ON >/dev/null
cmake --build build -j "$jobs"
(cd build && ctest --output-on-failure -j "$jobs")

# Again as an AVX2-only CPU would run them: oneDNN capped to AVX2 (no bf16
# products, as below AVX-512) and Highway to its AVX2 target, so that a
# build machine with AVX-512 or AMX fails where an AVX2 user would. On a
# CPU without AVX-512 the first pass already took these paths.
if grep -qw avx512f /proc/cpuinfo; then
  (cd build && DNNL_MAX_CPU_ISA=AVX2 SWAN_SIMD_TARGET=AVX2 ctest --output-on-failure -j "$jobs")
else
  echo "test.sh: this CPU has no AVX-512: the AVX2 paths ran above; no capped pass"
fi

if [ "${1:-}" != "--no-sanitize" ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSWAN_WERROR=ON \
        -DSWAN_SANITIZE=ON -DSWAN_BUILD_BENCH=OFF >/dev/null
  cmake --build build-asan -j "$jobs"
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$jobs")
fi

# Short libFuzzer runs of the tokenizer (loader and encode), ~20 s each.
bash scripts/fuzz.sh 15
