#!/bin/sh
# The spread of the deep headline arms: each grown again from the same base
# with other seeds (the new layers' initialization and the data order;
# --seed), trained exactly as recipes/lab/deep.sh trains it. The runs stay
# under $LAB/ARM-seedS (not shipped); recipes/lab/deep_report.sh measures
# them beside the shipped seed.
#   recipes/lab/deep_seeds.sh [SEED...]   (default: 2 3)
. "$(dirname "$0")/common.sh"
# arm  layers  plan (as in deep.sh)
ARMS="d4-full 4 full
d4-swa64 4 swa:64
d4-hybrid31 4 hybrid:3:1,window:64
d4-hybrid31-nope 4 hybrid:3:1,window:64,nope:full
d4-swa64-staggered 4 swa:64,staggered
d4-swa64-sinks4 4 swa:64,sinks:4
d4-swa64-chunked 4 swa:64,chunked"
lab_base
for seed in ${*:-2 3}; do
  echo "$ARMS" | while read -r arm layers plan; do
    lab_train "$LAB/$arm-seed$seed" --init "$LAB/base/model" --grow "$layers" --attn "$plan" $CONTINUED --seed "$seed"
  done
done
