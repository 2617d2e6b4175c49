#!/bin/sh
# Data-parallel `swan train` under mpirun on one machine (2 ranks):
#   1. 2 ranks x batch 2 = 1 rank x batch 4 for 20 steps: every step's loss
#      within 1e-5 relative, final weights within 1e-5;
#   2. kill -9 of one rank mid-run ends the job (no hang), and --resume
#      continues as a single-process resume does, on 2 ranks or on 1 rank at
#      the same global batch; another global batch is refused with the reason;
#   3. ranks started with other --data or another plan stop at start-up,
#      naming the setting.
#   usage: data_parallel_test.sh SWAN STORIES260K_DIR
set -eu
SWAN=$1
MODEL=$2
DIR=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export OMP_NUM_THREADS=1
# Open MPI refuses root without these; containers often lack the CMA
# single-copy transport; a 1-core machine has fewer slots than ranks.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
MPIRUN="mpirun --oversubscribe"

"$SWAN" tokenize -t "$MODEL" --out "$TMP/data.bin" --holdout 0 "$MODEL/README.md" > /dev/null
"$SWAN" tokenize -t "$MODEL" --out "$TMP/other.bin" --holdout 0 "$MODEL/config.json" > /dev/null
COMMON="--data $TMP/data.bin --preset tiny --attn hybrid:1:1,window:8,sinks:2 --context 32 \
  --steps 20 --lr 1e-2 --eval-every 0 --checkpoint-every 4 --quiet"

# Every step's loss and the final weights of run $1 (one process: 8 log
# columns) against run $2 (its loss is column 8 + 3 of the pasted rows).
same_losses() {
  paste -d, "$1/train_log.csv" "$2/train_log.csv" | tail -n +2 | awk -F, -v what="$3" '
    { n++; d = ($3 - $11) / $3; if (d < 0) d = -d; if (d > max) max = d }
    END { if (n != 20) { print what ": expected 20 rows, got " n; exit 1 }
          printf "%s: %d steps, largest relative loss difference %.3g\n", what, n, max
          if (max > 1e-5) exit 1 }'
  node "$DIR/compare_weights.mjs" "$1/model/model.safetensors" "$2/model/model.safetensors" 1e-5
}

# 1. Two ranks of batch 2 against one process of batch 4.
"$SWAN" train $COMMON --batch 4 --out "$TMP/one" > /dev/null
$MPIRUN -np 2 "$SWAN" train $COMMON --batch 2 --out "$TMP/two" > /dev/null
same_losses "$TMP/one" "$TMP/two" "2 ranks x batch 2 vs 1 x batch 4"
head -1 "$TMP/two/train_log.csv" | grep -q ',comm_s$'
grep -q '"comm_s_by_rank": \[' "$TMP/two/train_log.json"

# 2. One rank killed after step 10 (the last checkpoint: step 8).
set +e
timeout 120 $MPIRUN -np 2 "$SWAN" train $COMMON --batch 2 --out "$TMP/killed" --debug-kill-after 10 \
  > "$TMP/killed.txt" 2>&1
rc=$?
set -e
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
  echo "expected the job to end with an error when a rank dies, got $rc"; cat "$TMP/killed.txt"; exit 1
fi
cp -r "$TMP/killed" "$TMP/killed1"
$MPIRUN -np 2 "$SWAN" train --out "$TMP/killed" --resume --quiet > /dev/null
same_losses "$TMP/one" "$TMP/killed" "kill -9 of one rank, resumed on 2 ranks"
# The same checkpoint on one process at the same global batch (4 = 1 x 4).
"$SWAN" train --out "$TMP/killed1" --resume --batch 4 --quiet > /dev/null
same_losses "$TMP/one" "$TMP/killed1" "... resumed on 1 rank x batch 4"
# Another global batch is refused, with the reason.
cp -r "$TMP/two" "$TMP/refused"
if "$SWAN" train --out "$TMP/refused" --resume --steps 30 --quiet > "$TMP/refused.txt" 2>&1; then
  echo "a resume at another global batch was not refused"; exit 1
fi
grep -q "global batch of 4 sequences per step; this run has 1 rank(s) x --batch 2" "$TMP/refused.txt" ||
  { cat "$TMP/refused.txt"; exit 1; }
echo "kill -9 and resume: ok"

# 3. Ranks that disagree.
for case in "--data $TMP/other.bin:data" "--attn full:attention_plan"; do
  flag=${case%:*}
  name=${case##*:}
  set +e
  timeout 120 $MPIRUN -np 1 "$SWAN" train $COMMON --batch 2 --out "$TMP/d" : \
    -np 1 "$SWAN" train $COMMON --batch 2 --out "$TMP/d" $flag > "$TMP/disagree.txt" 2>&1
  rc=$?
  set -e
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then echo "ranks with other $name: rc $rc"; exit 1; fi
  grep -q "rank 1: $name is" "$TMP/disagree.txt" || { cat "$TMP/disagree.txt"; exit 1; }
  rm -rf "$TMP/d"
done
echo "ranks that disagree stop at start-up: ok"
