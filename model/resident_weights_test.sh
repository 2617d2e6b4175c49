#!/bin/sh
# Weights resident once: a float32 checkpoint is used in place from its
# mapping (a tied lm_head shares the embedding's bytes), so the peak RSS of
# `swan generate` and `swan bench` stays within the weights' bytes x 1.1 +
# the KV cache + 64 MiB (before: the weights twice); converted as it loads,
# within the converted bytes.
#   usage: resident_weights_test.sh SWAN SOURCE_DIR
set -eu
SWAN=$1
SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# "peak RSS X MiB" of a command's output against the bound.
check() {  # name, weight MiB, KV MiB, output file
  peak=$(grep -o 'peak RSS [0-9.]* MiB' "$4" | awk '{print $3}')
  [ -n "$peak" ] || { echo "$1: no peak RSS in its output"; cat "$4"; exit 1; }
  awk -v name="$1" -v peak="$peak" -v w="$2" -v kv="$3" 'BEGIN {
    bound = w * 1.1 + kv + 64
    printf "%s: peak RSS %.1f MiB, weights %.1f MiB, bound %.1f MiB\n", name, peak, w, bound
    exit !(peak <= bound) }'
}

for tied in "" "--tied"; do
  node "$SRC/scripts/random_model.mjs" --out "$TMP/m" --hidden 512 --layers 4 --inter 1536 --vocab 16384 $tied \
    > /dev/null
  weights=$(wc -c < "$TMP/m/model.safetensors" | awk '{print $1 / 1048576}')
  "$SWAN" generate -m "$TMP/m" --ids 1,2,3 -n 8 -c 256 > "$TMP/gen.txt" 2>&1
  kv=$(grep -o 'KV cache [0-9.]* KiB' "$TMP/gen.txt" | awk '{print $3 / 1024}')
  check "generate${tied:+ (tied)}" "$weights" "$kv" "$TMP/gen.txt"
  "$SWAN" bench -m "$TMP/m" -p 64 -n 8 -r 1 --kv f32 -d 0 > "$TMP/bench.txt" 2>&1
  check "bench${tied:+ (tied)}" "$weights" 4 "$TMP/bench.txt"
  rm -rf "$TMP/m"
done

# Converted as it loads (--weights q8_0): each f32 tensor is quantized from
# the mapping, whose pages are then let go, so the peak holds the q8_0
# weights (34 bytes per 32 values, the embedding table too), not the f32
# file besides (measured: 132 MiB with the pages let go, 423 without).
node "$SRC/scripts/random_model.mjs" --out "$TMP/m" --hidden 1024 --layers 4 --inter 4096 --vocab 16384 > /dev/null
weights=$(wc -c < "$TMP/m/model.safetensors" | awk '{print $1 / 1048576 * 34 / 128}')
"$SWAN" generate -m "$TMP/m" --ids 1,2,3 -n 8 -c 256 --weights q8_0 > "$TMP/gen.txt" 2>&1
kv=$(grep -o 'KV cache [0-9.]* KiB' "$TMP/gen.txt" | awk '{print $3 / 1024}')
check "generate --weights q8_0" "$weights" "$kv" "$TMP/gen.txt"
