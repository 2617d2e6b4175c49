#!/bin/sh
# Lab arm 6, Switch Attention: continual pretraining of arm 1 (models of
# recipes/lab/full.sh) with a router on both layers, `routed:64,sinks:4`,
# under the adaptive regularizer (docs/design.md §4). New routers start with
# every token on full attention (bias +2) and learn at --router-lr 1e-2.
# Then where they send each class of token (`swan route-stats --recall`).
# Output: models/lab/routed.   recipes/lab/routed.sh
#   GAMMA   --router-gamma (default 1e-3, swan's default)
. "$(dirname "$0")/common.sh"
GAMMA=${GAMMA:-1e-3}
[ -f "$LAB/full/finished" ] || sh "$(dirname "$0")/full.sh"
lab_train "$LAB/routed" --init "$LAB/full/model" --attn routed:64,sinks:4 $CONTINUED \
  --router-lr 1e-2 --router-gamma "$GAMMA"
lab_export routed "$LAB/routed" recipes/lab/routed.sh
"$SWAN" route-stats -m "$MODELS/routed" --recall --quiet -t "$THREADS"
