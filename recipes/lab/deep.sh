#!/bin/sh
# The lab at depth: the base model grown to 4 or 8 layers (swan train
# --grow: its layer 0 stays first, its layer 1 goes last, the new layers in
# between start as the identity), then continued under each arm's plan with
# the same budget as the 2-layer arms (CONTINUED in common.sh).
# From scratch, 4-layer shapes stay at chance in this budget (docs/lab,
# "Why the lab was 2 layers deep"); grown ones retrieve within 100 steps.
# Output: models/lab/dL-ARM for each arm below.
#   recipes/lab/deep.sh [ARM...]   (default: every arm, in the table's order)
. "$(dirname "$0")/common.sh"

# arm  layers  plan
ARMS="d4-full 4 full
d4-swa64 4 swa:64
d4-swa64-sinks4 4 swa:64,sinks:4
d4-hybrid31 4 hybrid:3:1,window:64
d4-hybrid31-nope 4 hybrid:3:1,window:64,nope:full
d8-swa64 8 swa:64
d8-hybrid31 8 hybrid:3:1,window:64"

deep_arm() {
  line=$(echo "$ARMS" | awk -v a="$1" '$1 == a')
  [ -n "$line" ] || { echo "no deep arm '$1'; the arms: $(echo "$ARMS" | cut -d' ' -f1 | tr '\n' ' ')" >&2; exit 1; }
  set -- $line
  lab_base
  lab_train "$LAB/$1" --init "$LAB/base/model" --grow "$2" --attn "$3" $CONTINUED
  lab_export "$1" "$LAB/$1" "recipes/lab/deep.sh $1"
}

for arm in ${*:-$(echo "$ARMS" | cut -d' ' -f1)}; do deep_arm "$arm"; done
