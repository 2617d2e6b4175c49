#!/bin/sh
# The retrieval lab's report: runs `swan compare`, `swan heads` and `swan
# route-stats` on the shipped lab models (models/lab, made by the arms'
# recipes) and writes docs/lab/: README.md, index.html, the pictures and,
# under data/, every figure as the JSON the commands printed.
#   recipes/lab/report.sh [DOCS]   (DOCS default: docs/lab; a few minutes on 2 cores)
# Environment: SWAN, MODELS (see common.sh), SAMPLES held-out sequences per
# plan (default 64), THREADS (default 2 here).
THREADS=${THREADS:-2}
. "$(dirname "$0")/common.sh"
DOCS=${1:-docs/lab}
SAMPLES=${SAMPLES:-64}
command -v node >/dev/null 2>&1 || { echo "report.sh needs node (scripts/setup.sh installs it)" >&2; exit 1; }
for arm in full swa64 swa64-sinks4 hybrid hybrid-nope routed; do
  [ -f "$MODELS/$arm/config.json" ] || { echo "no $MODELS/$arm: run recipes/lab/$arm.sh first" >&2; exit 1; }
done
for arm in full-heads4 per-head25 per-head12; do
  [ -f "$MODELS/$arm/config.json" ] || { echo "no $MODELS/$arm: run recipes/lab/per-head.sh first" >&2; exit 1; }
done
for arm in linear-transfer linear linear64; do
  [ -f "$MODELS/$arm/config.json" ] || { echo "no $MODELS/$arm: run recipes/lab/linear.sh first" >&2; exit 1; }
done
mkdir -p "$DOCS/data"
compare() {  # compare OUT.json MODEL [flags...]
  out=$1; shift
  echo "swan compare -m $*" >&2
  "$SWAN" compare -m "$@" --samples "$SAMPLES" --json --quiet -t "$THREADS" > "$DOCS/data/$out"
}
# Each arm under the plan it was trained under, at the training context and
# at 2x and 4x (the longer sequences: the same 32 pairs, more filler).
for arm in full swa64 swa64-sinks4 hybrid hybrid-nope routed; do
  compare "arm_$arm.json" "$MODELS/$arm" --attn model --distances $BINS
  compare "arm_${arm}_1024.json" "$MODELS/$arm" --attn model -c 1024 --distances 1,64,128,513,1025
  compare "arm_${arm}_2048.json" "$MODELS/$arm" --attn model -c 2048 --distances 1,64,128,513,1025,2049
done
# Arm 8: the full-attention model under window plans, without retraining.
compare conversion.json "$MODELS/full" --attn "full;swa:64;swa:64,sinks:4;hybrid:1:1,window:64;hybrid:1:1,window:64,nope:full" \
  --distances $BINS
for arm in full hybrid; do
  "$SWAN" heads -m "$MODELS/$arm" --samples 32 --json -t "$THREADS" > "$DOCS/data/heads_$arm.json"
done
# Arm 9: per-head plans on the 4-head twin, with the heads `swan heads
# --select` chose: without training (the full arm under them, beside its
# window and hybrid plans), and the arms trained under them.
compare per_head_free.json "$MODELS/full-heads4" --attn "full;swa:64,sinks:4;full,window:64,sinks:4,heads:$MODELS/per-head12/heads.json;full,window:64,sinks:4,heads:$MODELS/per-head25/heads.json;hybrid:1:1,window:64,sinks:4" \
  --distances $BINS
for arm in per-head25 per-head12; do
  compare "arm_$arm.json" "$MODELS/$arm" --attn model --distances $BINS
  cp "$MODELS/$arm/heads.json" "$DOCS/data/heads_selected_$arm.json"
done
"$SWAN" heads -m "$MODELS/full-heads4" --attn full --samples 32 --json -t "$THREADS" > "$DOCS/data/heads_full-heads4.json"
# Choosing the heads at 25%, 37.5% and 50% of the KV heads: from attention
# scores (`swan heads --select`, as the arms above) and by DuoAttention's
# gates trained with the model frozen (`swan train --head-gates`), at its
# L1 weight of 0.05 and at 0.2; the full arm under each plan, untrained.
SHARES="0.25 0.375 0.5"
for lambda in 0.05 0.2; do
  echo "swan train --head-gates -m $MODELS/full-heads4 --lambda $lambda" >&2
  "$SWAN" train --head-gates -m "$MODELS/full-heads4" --lambda $lambda --select "$(echo $SHARES | tr ' ' ,)" \
    --out "$DOCS/data/select_gates${lambda}_{share}.json" -t "$THREADS" > /dev/null
done
select_plans=full
for share in $SHARES; do
  "$SWAN" heads -m "$MODELS/full-heads4" --attn full --samples 16 --select $share \
    --out "$DOCS/data/select_scores_$share.json" -t "$THREADS" > /dev/null
  for by in scores gates0.05 gates0.2; do
    select_plans="$select_plans;full,window:64,sinks:4,heads:$DOCS/data/select_${by}_$share.json"
  done
done
compare per_head_select.json "$MODELS/full-heads4" --attn "$select_plans" --distances $BINS
# Arm 10: the full arm linearized (LoLCATs) against the same arm under a
# window of 64 + 4 sinks without training: recall at 512 and beyond the
# training length, then decode speed and cache at depth.
compare linear_512.json "$MODELS/full" --attn "full;swa:64,sinks:4" --distances $BINS
compare linear_2048.json "$MODELS/full" --attn "full;swa:64,sinks:4" -c 2048 --distances 1,64,128,513,1025,2049
for arm in linear-transfer linear linear64; do
  compare "arm_$arm.json" "$MODELS/$arm" --attn model --distances $BINS
  compare "arm_${arm}_2048.json" "$MODELS/$arm" --attn model -c 2048 --distances 1,64,128,513,1025,2049
done
# Decode speed drifts by tens of percent from one minute to the next on a
# shared machine: three rounds, the models interleaved in each, and the
# report takes each row's median round.
echo "swan bench (decode at depth) -m $MODELS/full, $MODELS/linear and $MODELS/linear64, 3 rounds" >&2
for round in 1 2 3; do
  "$SWAN" bench -m "$MODELS/full" --attn "full;swa:64,sinks:4" -p 64 -n 32 -d 1024,4096,16384 --json \
    -t "$THREADS" 2>/dev/null > "$DOCS/data/linear_bench_full.$round.json"
  for arm in linear linear64; do
    "$SWAN" bench -m "$MODELS/$arm" --attn model -p 64 -n 32 -d 1024,4096,16384 --json -t "$THREADS" 2>/dev/null \
      > "$DOCS/data/linear_bench_$arm.$round.json"
  done
done
"$SWAN" route-stats -m "$MODELS/routed" --recall --samples 32 --json --quiet -t "$THREADS" > "$DOCS/data/routes.json"
cp "$MODELS"/laziness/recall_w*.csv "$DOCS/data/"
for arm in full swa64 swa64-sinks4 hybrid hybrid-nope routed full-heads4 per-head25 per-head12 linear-transfer linear linear64; do
  cp "$MODELS/$arm/MADE_BY.txt" "$DOCS/data/made_by_$arm.txt"
done
lscpu | sed -n 's/^Model name: *//p' | head -n 1 > "$DOCS/data/cpu.txt"
node "$(dirname "$0")/report.mjs" "$DOCS"
