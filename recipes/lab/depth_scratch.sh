#!/bin/sh
# Why the lab was 2 layers deep: short from-scratch runs of the lab's shape
# at context 64 (the curriculum's first stage), 400 steps of 32 sequences at
# a constant learning rate after 100 warmup steps, with 2, 3 and 4 layers
# and what might let 4 layers learn (learning rate, NoPE, weight decay,
# clipping, more windows of 2). A run's answer loss below 0.1 retrieves.
# recipes/lab/deep_report.sh puts the losses in docs/lab/depth.md.
# Output: $LAB/scratch/RUN (a few minutes each on one core).
#   recipes/lab/depth_scratch.sh [RUN...]   (default: all)
. "$(dirname "$0")/common.sh"
lab_task
scratch() {  # scratch RUN FLAGS...
  run=$1; shift
  [ -f "$LAB/scratch/$run/train_log.csv" ] && return 0
  "$SWAN" train --recall "$TASK" --out "$LAB/scratch/$run" --preset mini --dim 128 --heads 1 --kv-heads 1 \
    --head-dim 128 --mlp 352 --context 512 --context-schedule 64:400 --steps 400 --warmup 100 --min-lr-ratio 1 \
    --batch 32 --eval-every 0 --log-every 20 -t "$THREADS" --quiet "$@" > /dev/null
}
RUNS="L2 --layers 2 --attn full,layer0:swa:2 --lr 1e-3
L3 --layers 3 --attn full,layer0:swa:2 --lr 1e-3
L4 --layers 4 --attn full,layer0:swa:2 --lr 1e-3
L4-lr3 --layers 4 --attn full,layer0:swa:2 --lr 3e-3
L4-lr3e-4 --layers 4 --attn full,layer0:swa:2 --lr 3e-4
L4-nope --layers 4 --attn full,layer0:swa:2,nope:full --lr 1e-3
L4-wd0 --layers 4 --attn full,layer0:swa:2 --lr 1e-3 --weight-decay 0
L4-clip0 --layers 4 --attn full,layer0:swa:2 --lr 1e-3 --clip 0
L4-w2x2 --layers 4 --attn full,layer0:swa:2,layer1:swa:2 --lr 1e-3
L4-w2x3 --layers 4 --attn full,layer0:swa:2,layer1:swa:2,layer2:swa:2 --lr 1e-3
L2-seed2 --layers 2 --attn full,layer0:swa:2 --lr 1e-3 --seed 2
L4-seed2 --layers 4 --attn full,layer0:swa:2 --lr 1e-3 --seed 2
L2-seed3 --layers 2 --attn full,layer0:swa:2 --lr 1e-3 --seed 3
L4-seed3 --layers 4 --attn full,layer0:swa:2 --lr 1e-3 --seed 3"
for run in ${*:-$(echo "$RUNS" | cut -d' ' -f1)}; do
  line=$(echo "$RUNS" | awk -v r="$run" '$1 == r')
  [ -n "$line" ] || { echo "no run '$run'" >&2; exit 1; }
  scratch $line
  echo "$run: answer loss at step 400 $(tail -n 1 "$LAB/scratch/$run/train_log.csv" | cut -d, -f3)"
done
# The whole base curriculum (1600 steps to context 512) at 4 layers.
lab_train "$LAB/scratch4" $(echo "$SHAPE" | sed 's/--layers 2/--layers 4/') --attn "full,layer0:swa:2" $SCRATCH
