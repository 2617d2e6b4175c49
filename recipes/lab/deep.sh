#!/bin/sh
# The lab at depth: the base model grown to 4 or 8 layers (swan train
# --grow: its layer 0 stays first, its layer 1 goes last, the new layers in
# between start as the identity), then continued under each arm's plan with
# the 2-layer arms' budget (CONTINUED in common.sh). From scratch, 4-layer
# shapes stay at chance in this budget (docs/lab/depth.md says what was
# tried); grown ones retrieve.
# Arms that start from another deep arm instead (the routed arm, and the
# fair test of a window + sinks against linear attention) train 300 steps
# at context 512 (FINETUNE), as the 2-layer linear arm does.
# The d4-routed-mix arms train on another task (MIX_TASK), where half the
# queries find their key inside the window (2-48 tokens back) and half
# outside it (96-500), in the same token types: a router saves work only by
# looking at the context. They continue d4-full with the 2-layer arms'
# curriculum (CONTINUED), since the layout is new to it, at four weights
# of the routers' regularizer. The -more arm gives the strongest weight
# another 600 steps at context 512 and half the rates (MIX_MORE).
# The chunked and staggered arms run block windows of 64 (docs/design.md
# §1): the same blocks in every layer, or blocks moved by 16 per layer.
# Per-head at depth: the 4-head lab model (models/lab/full-heads4, from
# recipes/lab/per-head.sh) grown to 4 layers under full attention, then,
# as recipes/lab/per-head.sh does at 2 layers, `swan heads --select` keeps
# the given share of its 16 KV heads full and the arm trains FINETUNE
# under that per-head plan (the other heads a window of 64 + 4 sinks).
# Output: models/lab/ARM for each arm below.
#   recipes/lab/deep.sh [ARM...]   (default: every arm, in the table's order)
# Other seeds of the arms continued from another deep arm (routed, the fair
# test): SEED=S recipes/lab/deep.sh ARM..., from FROM-seedS (d4-full's other
# seeds come from recipes/lab/deep_seeds.sh); runs only, not shipped.
. "$(dirname "$0")/common.sh"

FINETUNE="--context 512 --batch 32 --steps 300 --lr 5e-4 --warmup 20 --eval-every 50 --eval-seqs 64
  --eval-bins $BINS --log-every 10"
# arm  layers  plan  from (base: grown from the 2-layer base; else a deep arm)  [flags]
ARMS="d4-full 4 full base
d4-swa64 4 swa:64 base
d4-swa64-sinks4 4 swa:64,sinks:4 base
d4-hybrid31 4 hybrid:3:1,window:64 base
d4-hybrid31-nope 4 hybrid:3:1,window:64,nope:full base
d4-routed 4 routed:64,sinks:4 d4-full --router-lr 1e-2 --router-gamma 1e-3
d4-routed-mix 4 routed:64,sinks:4 d4-full --router-lr 1e-2 --router-gamma 1e-3
d4-routed-mix-g3e-3 4 routed:64,sinks:4 d4-full --router-lr 1e-2 --router-gamma 3e-3
d4-routed-mix-g6e-3 4 routed:64,sinks:4 d4-full --router-lr 1e-2 --router-gamma 6e-3
d4-routed-mix-g1e-2 4 routed:64,sinks:4 d4-full --router-lr 1e-2 --router-gamma 1e-2
d4-routed-mix-g1e-2-more 4 routed:64,sinks:4 d4-routed-mix-g1e-2 --router-lr 5e-3 --router-gamma 1e-2
d4-swa64-sinks4-ft 4 swa:64,sinks:4 d4-full
d4-linear 4 linear d4-full
d4-swa64-chunked 4 swa:64,chunked base
d4-swa64-staggered 4 swa:64,staggered base
d4-full-heads4 4 full models:full-heads4
d4-per-head25 4 per-head:0.25 d4-full-heads4
d4-per-head12 4 per-head:0.125 d4-full-heads4
d8-swa64 8 swa:64 base
d8-hybrid31 8 hybrid:3:1,window:64 base"

MIX_TASK="$LAB/task-mix/recall.json"
MIX_MORE="--context 512 --batch 32 --steps 600 --lr 2.5e-4 --warmup 20 --eval-every 50 --eval-seqs 64
  --eval-bins $BINS --log-every 10"
mix_task() {
  [ -f "$MIX_TASK" ] && return 0
  "$SWAN" train recall --out "$LAB/task-mix" --context 512 --pairs 32 --queries 32 --keys 64 --values 64 \
    --filler 124 --bins 2-48:0.5,96-500:0.5 --sequences 16 --val-sequences 256
}

deep_arm() {
  line=$(echo "$ARMS" | awk -v a="$1" '$1 == a')
  [ -n "$line" ] || { echo "no deep arm '$1'; the arms: $(echo "$ARMS" | cut -d' ' -f1 | tr '\n' ' ')" >&2; exit 1; }
  set -- $line
  arm=$1 layers=$2 plan=$3 from=$4
  shift 4
  if [ "${SEED:-1234}" != 1234 ] && { [ "$from" = base ] || [ "${from#models:}" != "$from" ] ||
    [ "${plan#per-head:}" != "$plan" ]; }; then
    echo "SEED is for arms continued from another deep arm; recipes/lab/deep_seeds.sh grows the others" >&2; exit 1
  fi
  if [ "$from" = base ]; then
    lab_base
    lab_train "$LAB/$arm" --init "$LAB/base/model" --grow "$layers" --attn "$plan" $CONTINUED "$@"
  elif [ "${from#models:}" != "$from" ]; then
    small="$MODELS/${from#models:}"
    [ -f "$small/config.json" ] || { echo "$arm grows $small: make it first (recipes/lab/per-head.sh)" >&2; exit 1; }
    lab_train "$LAB/$arm" --init "$small" --grow "$layers" --attn "$plan" $CONTINUED "$@"
    lab_export "$arm" "$LAB/$arm" "recipes/lab/deep.sh $arm"
    { echo "grown from $small, made as:"; cat "$small/MADE_BY.txt"; } >> "$MODELS/$arm/MADE_BY.txt"
    return 0
  elif [ "${plan#per-head:}" != "$plan" ]; then
    [ -f "$LAB/$from/finished" ] || { echo "$arm starts from $from: run recipes/lab/deep.sh $from first" >&2; exit 1; }
    heads="$LAB/$arm.heads.json"
    [ -f "$heads" ] || "$SWAN" heads -m "$LAB/$from/model" --attn full --samples 16 --select "${plan#per-head:}" \
      --out "$heads" -t "$THREADS"
    lab_train "$LAB/$arm" --init "$LAB/$from/model" --attn "full,window:64,sinks:4,heads:$heads" $FINETUNE "$@"
    LAB_BASE="$LAB/$from" lab_export "$arm" "$LAB/$arm" "recipes/lab/deep.sh $arm"
    cp "$heads" "$MODELS/$arm/heads.json"
    return 0
  else
    # SEED=S (not 1234): runs only, $LAB/ARM-seedS from FROM-seedS, not shipped.
    # (arm_run, not run: lab_train sets run.)
    arm_run="$LAB/$arm" src="$LAB/$from" seed_flag=""
    if [ "${SEED:-1234}" != 1234 ]; then
      arm_run="$LAB/$arm-seed$SEED" src="$LAB/$from-seed$SEED" seed_flag="--seed $SEED"
    fi
    [ -f "$src/finished" ] || { echo "$arm starts from $src: make it first (deep.sh or deep_seeds.sh)" >&2; exit 1; }
    if [ "${arm#d4-routed-mix}" != "$arm" ]; then
      mix_task
      flags=$CONTINUED
      [ "${from#d4-routed-mix}" != "$from" ] && flags=$MIX_MORE
      (TASK=$MIX_TASK; lab_train "$arm_run" --init "$src/model" --attn "$plan" $flags "$@" $seed_flag)
    elif [ "$plan" = linear ]; then
      # LoLCATs as the 2-layer linear arm: the feature maps alone first.
      lab_train "$arm_run-transfer" --init "$src/model" --attn linear --attention-transfer --context 512 \
        --batch 8 --steps 300 --lr 1e-2 --warmup 20 --eval-every 50 --eval-seqs 16 --log-every 10 $seed_flag
      lab_train "$arm_run" --init "$arm_run-transfer/model" $FINETUNE $seed_flag
    else
      lab_train "$arm_run" --init "$src/model" --attn "$plan" $FINETUNE "$@" $seed_flag
    fi
    [ -n "$seed_flag" ] && return 0
  fi
  LAB_BASE="$LAB/$from" lab_export "$arm" "$LAB/$arm" "recipes/lab/deep.sh $arm"
  if [ "$plan" = linear ]; then
    { echo "attention transfer ($LAB/$arm-transfer) segments:"; cat "$LAB/$arm-transfer/segments.txt"; } \
      >> "$MODELS/$arm/MADE_BY.txt"
  fi
}

for arm in ${*:-$(echo "$ARMS" | cut -d' ' -f1)}; do deep_arm "$arm"; done
