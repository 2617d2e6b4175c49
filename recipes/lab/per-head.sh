#!/bin/sh
# Lab arms 7 and 8: per-head plans (DuoAttention's cut, attention/head_groups.h).
# The lab's shape with 4 heads of 32 (each its own KV head) instead of 1 of
# 128: a base and a full-attention arm as recipes/lab/full.sh makes them,
# then `swan heads --select` keeps the SHARE of the 8 KV heads with the most
# attention on the answers' values full (training-free, RazorAttention's
# choice), the others a window of 64 + 4 sinks, and the full arm continues
# for 300 steps under that per-head plan at context 512.
# Output: models/lab/full-heads4, models/lab/per-head25 (2 of 8 KV heads
# full), models/lab/per-head12 (1 of 8).   recipes/lab/per-head.sh
. "$(dirname "$0")/common.sh"
SHAPE4="--preset mini --layers 2 --dim 128 --heads 4 --kv-heads 4 --head-dim 32 --mlp 352"
lab_task
lab_train "$LAB/base-heads4" $SHAPE4 --attn "full,layer0:swa:2" $SCRATCH
lab_train "$LAB/full-heads4" --init "$LAB/base-heads4/model" --attn full $CONTINUED
LAB_BASE="$LAB/base-heads4" lab_export full-heads4 "$LAB/full-heads4" recipes/lab/per-head.sh
for share in 25 12; do
  heads="$LAB/heads$share.json"
  [ -f "$heads" ] || "$SWAN" heads -m "$LAB/full-heads4/model" --attn full --samples 16 \
    --select "0.$share" --out "$heads" -t "$THREADS"
  cp "$heads" "$LAB/full-heads4/heads$share.json"
  lab_train "$LAB/per-head$share" --init "$LAB/full-heads4/model" \
    --attn "full,window:64,sinks:4,heads:$heads" --context 512 --batch 32 --steps 300 --lr 5e-4 \
    --warmup 20 --eval-every 50 --eval-seqs 64 --eval-bins "$BINS" --log-every 10
  LAB_BASE="$LAB/full-heads4" lab_export "per-head$share" "$LAB/per-head$share" recipes/lab/per-head.sh
  cp "$heads" "$MODELS/per-head$share/heads.json"
  { echo "its base ($LAB/base-heads4) segments:"; cat "$LAB/base-heads4/segments.txt"; } \
    >> "$MODELS/per-head$share/MADE_BY.txt"
done
