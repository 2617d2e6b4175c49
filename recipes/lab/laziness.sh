#!/bin/sh
# Lab arm 7, large-window laziness: the 1:1 hybrid (layer 0 a window of W,
# layer 1 full) trained from scratch, identically, at W = 4, 8, 16, 64 and
# 256; W = 2 is the base model itself. Held-out recall by distance every 100
# steps is the result: models/lab/laziness/recall_wW.csv.
# With SEED=S (not 1234, the shipped runs' seed: the initialization and the
# data order) the runs go to $LAB/lazy-wW-seedS and their logs to
# models/lab/laziness/recall_wW_seedS.csv, W = 2 included, for the spread.
#   recipes/lab/laziness.sh [W...]   (default: 2 4 8 16 64 256)
#   SEED=2 recipes/lab/laziness.sh 4 8 16
. "$(dirname "$0")/common.sh"
lab_task
mkdir -p "$MODELS/laziness"
SEED=${SEED:-1234}
for w in ${*:-2 4 8 16 64 256}; do
  if [ "$SEED" != 1234 ]; then
    run="$LAB/lazy-w$w-seed$SEED" out="recall_w${w}_seed$SEED" segments="segments_w${w}_seed$SEED"
    lab_train "$run" $SHAPE --attn "full,layer0:swa:$w" $SCRATCH --seed "$SEED"
  elif [ "$w" = 2 ]; then
    lab_base; run="$LAB/base" out="recall_w$w" segments="segments_w$w"
  else
    run="$LAB/lazy-w$w" out="recall_w$w" segments="segments_w$w"
    lab_train "$run" $SHAPE --attn "full,layer0:swa:$w" $SCRATCH
  fi
  [ -f "$run/finished" ] || { echo "$run is not finished: run recipes/lab/laziness.sh $w again" >&2; exit 1; }
  cp "$run/recall_log.csv" "$MODELS/laziness/$out.csv"
  cp "$run/segments.txt" "$MODELS/laziness/$segments.txt"
done
