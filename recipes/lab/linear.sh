#!/bin/sh
# Lab arm 10: the full-attention arm linearized (LoLCATs, arXiv 2410.10254).
# Every layer becomes causal linear attention through a Hedgehog feature map
# (attention/linear_attention.h, attention/hedgehog.h): attention transfer
# first trains the new feature maps alone for 300 steps to reproduce each
# layer's softmax output on the full model's stream (every other weight
# frozen), then the whole model fine-tunes for 300 steps under the linear
# plan at context 512, as the per-head arms continue.
# The same again with LoLCATs' hybrid, linear:64 (each layer's newest 64
# keys by softmax, the older ones linear).
# Output: models/lab/linear-transfer, models/lab/linear (linear alone),
# models/lab/linear64 (linear + window 64).   recipes/lab/linear.sh
. "$(dirname "$0")/common.sh"
[ -f "$MODELS/full/config.json" ] || { echo "no $MODELS/full: run recipes/lab/full.sh first" >&2; exit 1; }
lab_task
lab_train "$LAB/linear-transfer" --init "$MODELS/full" --attn linear --attention-transfer --context 512 \
  --batch 8 --steps 300 --lr 1e-2 --warmup 20 --eval-every 50 --eval-seqs 16 --log-every 10
lab_train "$LAB/linear" --init "$LAB/linear-transfer/model" --context 512 --batch 32 --steps 300 --lr 5e-4 \
  --warmup 20 --eval-every 50 --eval-seqs 64 --eval-bins "$BINS" --log-every 10
LAB_BASE="$LAB/linear-transfer" lab_export linear "$LAB/linear" recipes/lab/linear.sh
# The transfer alone, too (it logs no recall: its stream is the softmax model's).
"$SWAN" convert -m "$LAB/linear-transfer/model" --out "$MODELS/linear-transfer" --dtype bf16 --force
{ echo "made by: recipes/lab/linear.sh (its attention-transfer stage)"
  echo "training segments:"; cat "$LAB/linear-transfer/segments.txt"; } > "$MODELS/linear-transfer/MADE_BY.txt"
for arm in linear linear-transfer; do
  { echo "the full arm it linearized ($MODELS/full):"; cat "$MODELS/full/MADE_BY.txt"; } >> "$MODELS/$arm/MADE_BY.txt"
done
lab_train "$LAB/linear64-transfer" --init "$MODELS/full" --attn linear:64 --attention-transfer --context 512 \
  --batch 8 --steps 300 --lr 1e-2 --warmup 20 --eval-every 50 --eval-seqs 16 --log-every 10
lab_train "$LAB/linear64" --init "$LAB/linear64-transfer/model" --context 512 --batch 32 --steps 300 --lr 5e-4 \
  --warmup 20 --eval-every 50 --eval-seqs 64 --eval-bins "$BINS" --log-every 10
LAB_BASE="$LAB/linear64-transfer" lab_export linear64 "$LAB/linear64" recipes/lab/linear.sh
{ echo "the full arm it linearized ($MODELS/full):"; cat "$MODELS/full/MADE_BY.txt"; } >> "$MODELS/linear64/MADE_BY.txt"
