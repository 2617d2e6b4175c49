#!/bin/sh
# Lab arm 7, large-window laziness: the 1:1 hybrid (layer 0 a window of W,
# layer 1 full) trained from scratch, identically, at W = 4, 8, 16, 64 and
# 256; W = 2 is the base model itself. Held-out recall by distance every 100
# steps is the result: models/lab/laziness/recall_wW.csv.
#   recipes/lab/laziness.sh [W...]   (default: 2 4 8 16 64 256)
. "$(dirname "$0")/common.sh"
lab_task
mkdir -p "$MODELS/laziness"
for w in ${*:-2 4 8 16 64 256}; do
  if [ "$w" = 2 ]; then lab_base; run="$LAB/base"
  else run="$LAB/lazy-w$w"; lab_train "$run" $SHAPE --attn "full,layer0:swa:$w" $SCRATCH; fi
  [ -f "$run/finished" ] || { echo "$run is not finished: run recipes/lab/laziness.sh $w again" >&2; exit 1; }
  cp "$run/recall_log.csv" "$MODELS/laziness/recall_w$w.csv"
  cp "$run/segments.txt" "$MODELS/laziness/segments_w$w.txt"
done
