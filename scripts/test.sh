#!/usr/bin/env bash
# Builds swan and runs every test: a Release build with warnings as errors,
# then the same tests under AddressSanitizer + UndefinedBehaviorSanitizer.
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

if [ "${1:-}" != "--no-sanitize" ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSWAN_WERROR=ON \
        -DSWAN_SANITIZE=ON -DSWAN_BUILD_BENCH=OFF >/dev/null
  cmake --build build-asan -j "$jobs"
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$jobs")
fi

# Short libFuzzer runs of the tokenizer (loader and encode), ~20 s each.
bash scripts/fuzz_tokenizer.sh 20
