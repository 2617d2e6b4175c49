#!/bin/sh
# A small model that retrieves: multi-query associative recall (MQAR) at
# context 512, 32 key-value pairs then 32 queries (Zoology's layout), 64 key
# and 64 value ids, trained from scratch on sequences made on the fly.
#
# The shape: 2 layers, dim 128, 1 head of 128 (0.43M parameters). Layer 0
# is a window of 2 keys (each token sees itself and the one before it),
# layer 1 full attention. The window layer gives every value the key
# before it, which layer 1 then matches: with full attention on both
# layers this model stays on the "pick one of the values" plateau (see
# docs/training.md, "Recall tasks in token ids").
#
# Curriculum: context 64 (4 pairs) to step 600, 128 to 1000, 256 to 1400,
# then 512. Held-out recall by key->query distance is logged at context
# 512 every 100 steps (RUN/recall_log.csv, RUN/recall.svg).
#
#   recipes/recall_model.sh [OUT]   (OUT default: runs/recall; the runs are OUT/run
#                                    and OUT/run-full)
#
# Environment (all optional):
#   SWAN      the swan program (default: build/swan)
#   STEPS     stage 1 optimizer steps (default 1600)
#   FULL_STEPS stage 2 optimizer steps (default 600)
#   MINUTES   hard limit on the training (default 40): it stops, checkpoints
#             and exports when reached (EXTRA=--resume finishes)
#   THREADS   threads (default 1, so that the run can go in the background)
#   HEADS     attention heads, each its own KV head (default 1; dim 128 split
#             among them: HEADS=4 gives 4 heads of 32, for per-head plans)
#   EXTRA     more `swan train` flags for both stages
set -eu

OUT=${1:-runs/recall}
SWAN=${SWAN:-build/swan}
STEPS=${STEPS:-1600}
FULL_STEPS=${FULL_STEPS:-600}
MINUTES=${MINUTES:-40}
THREADS=${THREADS:-1}
EXTRA=${EXTRA:-}
HEADS=${HEADS:-1}
[ -x "$SWAN" ] || { echo "no swan program at $SWAN (build it, or set SWAN=...)" >&2; exit 1; }

if [ ! -f "$OUT/task/recall.json" ]; then
  "$SWAN" train recall --out "$OUT/task" --context 512 --pairs 32 --queries 32 --pairs-first \
    --keys 64 --values 64 --filler 124 --sequences 16 --val-sequences 256
fi
# Stage 1: the window-2 layer 0 and a full layer 1.
"$SWAN" train --recall "$OUT/task/recall.json" --out "$OUT/run" \
  --preset mini --layers 2 --dim 128 --heads $HEADS --kv-heads $HEADS --head-dim $((128 / HEADS)) --mlp 352 \
  --attn "full,layer0:swa:2" --context 512 --context-schedule 64:600,128:1000,256:1400 \
  --batch 32 --steps "$STEPS" --lr 1e-3 --eval-every 100 --eval-seqs 64 --eval-bins 1,64,256,513 \
  --log-every 20 --time-limit "$MINUTES" -t "$THREADS" $EXTRA
# Stage 2: the same model under full attention on both layers, through the
# curriculum again at a lower rate (at context 512 straight away, with
# --lr 1e-3, the circuit was lost: 6% beyond 256).
"$SWAN" train --init "$OUT/run/model" --recall "$OUT/task/recall.json" --out "$OUT/run-full" \
  --attn full --context 512 --context-schedule 64:150,128:300,256:450 \
  --batch 32 --steps "$FULL_STEPS" --lr 5e-4 --warmup 20 --eval-every 50 --eval-seqs 64 \
  --eval-bins 1,64,256,513 --log-every 10 --time-limit "$MINUTES" -t "$THREADS" $EXTRA
echo "models: $OUT/run/model (layer 0 a window of 2), $OUT/run-full/model (full attention);"
echo "  swan compare -m $OUT/run-full/model --attn 'full;swa:64;hybrid:1:1,window:64'"
