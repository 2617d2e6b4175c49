#!/usr/bin/env bash
# Data-parallel training on this machine: tokens/s of the `small` preset at
# context 2048 (global batch 2 sequences per step) as
#   1 rank x 1 thread, 1 rank x 2 threads, 2 ranks x 1 thread (mpirun),
# with the communication time per step of the 2-rank run, the gradient
# bytes each step sums, and from them the expected weak-scaling efficiency
# on N nodes over 10 and 100 Gbit/s (ring all-reduce: each node sends and
# receives 2 (N-1)/N of the gradient bytes per step, not overlapped).
#   usage: bench/data_parallel.sh [STEPS (default 6)] [SWAN (default build/swan)]
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-6}
SWAN=${2:-build/swan}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
"$SWAN" tokenize -t models/stories260K --out "$TMP/text.bin" --holdout 0 README.md docs/*.md \
  models/README.md > /dev/null 2>&1
COMMON="--data $TMP/text.bin --preset small --context 2048 --steps $STEPS --eval-every 0 --checkpoint-every 0"

run() {  # name, then the command; prints tokens/s and the mean step time
  local name=$1
  shift
  "$@" > "$TMP/out.txt" 2> "$TMP/err.txt" || { cat "$TMP/err.txt"; exit 1; }
  local tps
  tps=$(grep -o '[0-9]* tokens/s' "$TMP/out.txt" | head -1 | cut -d' ' -f1)
  printf '%-22s %8s tok/s\n' "$name" "$tps"
  echo "$tps"> "$TMP/$name.tps"
}

echo "swan train --preset small --context 2048, $STEPS steps of 2 sequences (4096 tokens) each"
run "1-rank-1-thread" "$SWAN" train $COMMON --batch 2 -t 1 --out "$TMP/a" --quiet
run "1-rank-2-threads" "$SWAN" train $COMMON --batch 2 -t 2 --out "$TMP/b" --quiet
run "2-ranks-1-thread" mpirun --oversubscribe -np 2 "$SWAN" train $COMMON --batch 1 -t 1 --out "$TMP/c" --quiet

params=$(node -e 'const b = require("fs").readFileSync(process.argv[1]);
  const n = Number(b.readBigUInt64LE(0)); let s = 0;
  for (const [k, v] of Object.entries(JSON.parse(b.subarray(8, 8 + n)))) if (k !== "__metadata__") s += v.data_offsets[1] - v.data_offsets[0];
  console.log(s / 4)' "$TMP/c/model/model.safetensors")
# comm_s is the last column of a data-parallel run's log; skip step 1 (start-up).
awk -F, -v params="$params" -v one="$(cat "$TMP/1-rank-1-thread.tps")" '
  NR > 2 { comm += $NF; step += $8 - prev; n++ } { prev = $8 }
  END {
    bytes = params * 4
    t1 = 4096 / one   # seconds per step of one node (one rank x 1 thread here)
    printf "2 ranks: %.1f ms per step in MPI calls (waiting for the other rank included; mean of steps 2-%d), %.1f%% of the step\n", 1e3 * comm / n, n + 1, 100 * comm / step
    printf "gradients summed per step: %d parameters = %.1f MiB (float32)\n", params, bytes / 1048576
    printf "expected weak-scaling efficiency on N nodes (ring all-reduce, no overlap), for a node that\n"
    printf "takes this machine'"'"'s %.2f s per step (1 thread) and for one 16x faster (%.2f s):\n", t1, t1 / 16
    printf "%6s %22s %22s\n", "nodes", "10 Gbit/s: comm, eff.", "100 Gbit/s: comm, eff."
    for (N = 2; N <= 64; N *= 2) {
      c10 = 2 * (N - 1) / N * bytes * 8 / 10e9
      c100 = 2 * (N - 1) / N * bytes * 8 / 100e9
      printf "%6d %8.1f ms %5.1f%% %5.1f%% %8.1f ms %5.1f%% %5.1f%%\n", N, 1e3 * c10, 100 * t1 / (t1 + c10),
             100 * (t1 / 16) / (t1 / 16 + c10), 1e3 * c100, 100 * t1 / (t1 + c100), 100 * (t1 / 16) / (t1 / 16 + c100)
    }
  }' "$TMP/c/train_log.csv"
