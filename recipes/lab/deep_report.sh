#!/bin/sh
# The lab at depth, measured: `swan compare` and `swan route-stats` on the
# deep arms (recipes/lab/deep.sh), then docs/lab/depth.md and its charts
# (recipes/lab/deep_report.mjs). Every figure is kept as the JSON the
# command printed, under docs/lab/data/deep_*.json.
#   recipes/lab/deep_report.sh [DOCS]   (DOCS default: docs/lab; minutes on 2 cores)
# Environment: SWAN, MODELS (see common.sh), SAMPLES held-out sequences per
# plan (default 64), THREADS (default 2 here).
THREADS=${THREADS:-2}
. "$(dirname "$0")/common.sh"
DOCS=${1:-docs/lab}
SAMPLES=${SAMPLES:-64}
command -v node >/dev/null 2>&1 || { echo "deep_report.sh needs node (scripts/setup.sh installs it)" >&2; exit 1; }
MIX_ARMS="d4-routed-mix d4-routed-mix-g3e-3 d4-routed-mix-g6e-3 d4-routed-mix-g1e-2 d4-routed-mix-g1e-2-more"
ARMS="d4-full d4-swa64 d4-swa64-sinks4 d4-hybrid31 d4-hybrid31-nope d4-routed $MIX_ARMS d4-swa64-sinks4-ft
d4-swa64-chunked d4-swa64-staggered d4-full-heads4 d4-per-head25 d4-per-head12 d8-swa64 d8-hybrid31"
for arm in $ARMS; do
  [ -f "$MODELS/$arm/config.json" ] || { echo "no $MODELS/$arm: run recipes/lab/deep.sh $arm first" >&2; exit 1; }
done
# The linearized arm is measured when it has been made (its fine-tune is the
# slowest run of all: recipes/lab/deep.sh d4-linear).
[ -f "$MODELS/d4-linear/config.json" ] && ARMS="$ARMS d4-linear"
mkdir -p "$DOCS/data"
compare() {  # compare OUT.json MODEL [flags...]
  out=$1; shift
  echo "swan compare -m $*" >&2
  "$SWAN" compare -m "$@" --samples "$SAMPLES" --json --quiet -t "$THREADS" > "$DOCS/data/$out"
}
# Bins: inside one window (64), within 2 windows, within 4 layers' relay of
# 4 x 63 = 252 keys, and beyond it (8 layers relay 504: all of 512).
DEEP_BINS=1,16,64,128,252,513
for arm in $ARMS; do
  compare "deep_$arm.json" "$MODELS/$arm" --attn model --distances $DEEP_BINS
done
# Other seeds of the headline arms (recipes/lab/deep_seeds.sh), where run.
for arm in d4-full d4-swa64 d4-hybrid31 d4-hybrid31-nope d4-swa64-staggered d4-swa64-sinks4 d4-swa64-chunked; do
  for seed in 2 3; do
    run="$LAB/$arm-seed$seed"
    [ -f "$run/finished" ] && compare "deep_${arm}_seed$seed.json" "$run/model" --attn model --distances $DEEP_BINS
  done
done
# Other seeds of the routed arm that meets the bar and of the fair test's
# two sides (SEED=S recipes/lab/deep.sh ...), where run: recall under
# their plan, the routed one's routes and its weights under full attention.
for seed in 2 3; do
  run="$LAB/d4-routed-mix-g1e-2-more-seed$seed"
  if [ -f "$run/finished" ]; then
    compare "deep_d4-routed-mix-g1e-2-more_seed$seed.json" "$run/model" --attn model --distances $DEEP_BINS
    compare "deep_d4-routed-mix-g1e-2-more_seed${seed}_full.json" "$run/model" --attn full --distances $DEEP_BINS
    "$SWAN" route-stats -m "$run/model" --recall --samples 32 --json --quiet -t "$THREADS" \
      > "$DOCS/data/deep_routes_d4-routed-mix-g1e-2-more_seed$seed.json"
  fi
  for arm in d4-swa64-sinks4-ft d4-linear; do
    run="$LAB/$arm-seed$seed"
    [ -f "$run/finished" ] && compare "deep_${arm}_seed$seed.json" "$run/model" --attn model --distances $DEEP_BINS
  done
done
# The full arm at depth under window plans without training (StreamingLLM's
# claim at depth: does a window + sinks keep what the deep model retrieves?).
compare deep_conversion.json "$MODELS/d4-full" --attn "full;swa:64;swa:64,sinks:4;hybrid:3:1,window:64" \
  --distances $DEEP_BINS
# Block windows (chunked, staggered) against the sliding one, without training.
compare deep_blocks_conversion.json "$MODELS/d4-full" --attn "swa:64;swa:64,chunked;swa:64,staggered" \
  --distances $DEEP_BINS
# Length: 2x and 4x the training context (the same 32 pairs, more filler),
# with no RoPE scaling, YaRN on every layer, and YaRN on the full layers
# only (Mellum 2). YaRN comes from the config: a copy of each model whose
# config.json says rope_scaling yarn x F from 512 (the weights linked).
yarn_copy() {  # yarn_copy ARM FACTOR -> prints the copy's directory
  dir="$LAB/yarn/$1-x$2"
  mkdir -p "$dir"
  for f in "$MODELS/$1"/*; do ln -sf "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")" "$dir/"; done
  rm -f "$dir/config.json"
  node -e '
    const fs = require("fs");
    const c = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
    c.rope_scaling = { rope_type: "yarn", factor: Number(process.argv[3]), original_max_position_embeddings: 512 };
    c.max_position_embeddings = 512 * Number(process.argv[3]);
    fs.writeFileSync(process.argv[2], JSON.stringify(c, null, 2));' "$MODELS/$1/config.json" "$dir/config.json" "$2"
  echo "$dir"
}
for arm in d4-full d4-hybrid31 d4-hybrid31-nope d8-hybrid31; do
  for factor in 2 4; do
    ctx=$((512 * factor))
    plan=$(node -e 'console.log(require(process.argv[1]).swan_attention_plan || "full")' \
      "$(pwd)/$MODELS/$arm/config.json")
    compare "deep_${arm}_$ctx.json" "$MODELS/$arm" --attn model -c $ctx --distances 1,64,128,252,513,$((ctx + 1))
    yarn=$(yarn_copy "$arm" "$factor")
    compare "deep_${arm}_${ctx}_yarn.json" "$yarn" --attn "$plan;$plan,rope-scaling:full" -c $ctx \
      --distances 1,64,128,252,513,$((ctx + 1))
  done
done
"$SWAN" route-stats -m "$MODELS/d4-routed" --recall --samples 32 --json --quiet -t "$THREADS" \
  > "$DOCS/data/deep_routes.json"
# The routed arms of the mixed task (as many near queries as far ones)
# under their routers, and their weights under full attention: what
# routing costs.
for arm in $MIX_ARMS; do
  compare "deep_${arm}_full.json" "$MODELS/$arm" --attn full --distances $DEEP_BINS
  "$SWAN" route-stats -m "$MODELS/$arm" --recall --samples 32 --json --quiet -t "$THREADS" \
    > "$DOCS/data/deep_routes_$arm.json"
done
# The per-head arms' full KV heads, as `swan heads --select` chose them.
for arm in d4-per-head25 d4-per-head12; do cp "$MODELS/$arm/heads.json" "$DOCS/data/deep_heads_$arm.json"; done
for arm in $ARMS; do
  cp "$MODELS/$arm/MADE_BY.txt" "$DOCS/data/made_by_$arm.txt"
  "$SWAN" inspect -m "$MODELS/$arm" > "$DOCS/data/deep_inspect_$arm.txt"
done
# The from-scratch runs (recipes/lab/depth_scratch.sh), where they were made.
for run in "$LAB"/scratch/*/; do
  [ -f "$run/train_log.csv" ] || continue
  name=$(basename "$run")
  cp "$run/train_log.csv" "$DOCS/data/deep_scratch_$name.csv"
  cp "$run/train_args.json" "$DOCS/data/deep_scratch_$name.args.json"
done
[ -f "$LAB/scratch4/recall_log.csv" ] && cp "$LAB/scratch4/recall_log.csv" "$DOCS/data/deep_scratch4_recall.csv"
lscpu | sed -n 's/^Model name: *//p' | head -n 1 > "$DOCS/data/deep_cpu.txt"
node "$(dirname "$0")/deep_report.mjs" "$DOCS"
