# Shared by the retrieval lab's recipes (sourced, not run). Every arm uses
# the same task, seed, shape and budget; see recipes/lab/README.md.
#
# Environment (all optional):
#   SWAN     the swan program (default: build/swan)
#   LAB      where the runs go (default: runs/lab)
#   MODELS   where the finished models are written, bf16 (default: models/lab)
#   THREADS  threads per run (default 1, so that runs can go in the background)
#   MINUTES  hard limit per training segment (default 30): it stops,
#            checkpoints and exports; run the same command again to go on
set -eu
# Threads that wait sleep instead of spinning (the machine is shared).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
SWAN=${SWAN:-build/swan}
LAB=${LAB:-runs/lab}
MODELS=${MODELS:-models/lab}
THREADS=${THREADS:-1}
MINUTES=${MINUTES:-30}
[ -x "$SWAN" ] || { echo "no swan program at $SWAN (build it, or set SWAN=...)" >&2; exit 1; }

# The task: MQAR at context 512, 32 key-value pairs then 32 queries, 64 key
# and 64 value ids (vocab 256), every training sequence made on the fly.
TASK="$LAB/task/recall.json"
# Recall is logged by key->query distance: inside the window of 64, within
# the 2-layer relay reach of two windows (128), and beyond it.
BINS=1,16,64,128,256,513
SHAPE="--preset mini --layers 2 --dim 128 --heads 1 --kv-heads 1 --head-dim 128 --mlp 352"
# From scratch: the curriculum 64 -> 128 -> 256 -> 512 of recipes/recall_model.sh.
SCRATCH="--context 512 --context-schedule 64:600,128:1000,256:1400 --batch 32 --steps 1600 --lr 1e-3
  --eval-every 100 --eval-seqs 64 --eval-bins $BINS --log-every 20"
# Continued from the base model: the curriculum again at half the rate.
CONTINUED="--context 512 --context-schedule 64:150,128:300,256:450 --batch 32 --steps 600 --lr 5e-4
  --warmup 20 --eval-every 50 --eval-seqs 64 --eval-bins $BINS --log-every 10"

lab_task() {
  [ -f "$TASK" ] && return 0
  "$SWAN" train recall --out "$LAB/task" --context 512 --pairs 32 --queries 32 --pairs-first \
    --keys 64 --values 64 --filler 124 --sequences 16 --val-sequences 256
}

# lab_train RUN ARGS...: one training segment (a first run, or --resume of
# an unfinished one), recorded in RUN/segments.txt with the commit.
lab_train() {
  run=$1; shift
  mkdir -p "$run"
  resume=""
  if [ -f "$run/checkpoint.bin" ]; then
    if [ -f "$run/finished" ]; then echo "$run: finished (delete it to train again)"; return 0; fi
    resume=--resume
  fi
  commit=$(git describe --always --dirty 2>/dev/null || echo unknown)
  start=$(date -u +%FT%TZ)
  "$SWAN" train --recall "$TASK" --out "$run" "$@" --time-limit "$MINUTES" -t "$THREADS" $resume
  step=$(tail -n 1 "$run/train_log.csv" | cut -d, -f1)
  echo "$start .. $(date -u +%FT%TZ)  commit $commit  to step $step  swan train $* -t $THREADS $resume" \
    >> "$run/segments.txt"
  if [ "$step" = "$(lab_steps "$@")" ]; then touch "$run/finished"; fi
}

# The --steps value among a run's flags.
lab_steps() {
  while [ $# -gt 1 ]; do [ "$1" = --steps ] && { echo "$2"; return; }; shift; done
  echo 0
}

# The base model every continued arm starts from: recipes/recall_model.sh's
# stage 1, i.e. the 1:1 hybrid with a window of 2 on layer 0 trained from
# scratch (it is also the W=2 point of the laziness arm).
lab_base() {
  lab_task
  lab_train "$LAB/base" $SHAPE --attn "full,layer0:swa:2" $SCRATCH
}

# lab_export ARM RUN RECIPE: the finished model in bf16 under MODELS/ARM,
# with the recipe, its segments and the commit, and those of the model it
# started from (LAB_BASE, default the lab's base).
lab_export() {
  arm=$1; run=$2; recipe=$3
  [ -f "$run/finished" ] || { echo "$run is not finished: run $recipe again to go on" >&2; exit 1; }
  "$SWAN" convert -m "$run/model" --out "$MODELS/$arm" --dtype bf16 --force
  { echo "made by: $recipe"
    echo "training segments:"; cat "$run/segments.txt"
    base=${LAB_BASE:-$LAB/base}  # the model the run started from
    [ -f "$base/segments.txt" ] && [ "$run" != "$base" ] && {
      echo "base model ($base) segments:"; cat "$base/segments.txt"; }
    true
  } > "$MODELS/$arm/MADE_BY.txt"
  cp "$run/recall_log.csv" "$MODELS/$arm/recall_log.csv"
  echo "model: $MODELS/$arm"
}

# lab_continued ARM PLAN [FLAGS...]: the base model continued under PLAN.
lab_continued() {
  arm=$1; plan=$2; shift 2
  lab_base
  lab_train "$LAB/$arm" --init "$LAB/base/model" --attn "$plan" $CONTINUED "$@"
  lab_export "$arm" "$LAB/$arm" "recipes/lab/$arm.sh"
}
