#!/bin/sh
# The decode-roofline and prefill figures of swan's model benchmark, on
# random weights in the shapes of real models (no download). Run it on an
# otherwise idle machine: every figure is a ratio to the read bandwidth or
# the oneDNN GEMM rate that the same `swan bench` run measures.
#
#   bench/roofline.sh [SWAN]        (SWAN: the swan program, default build/swan)
#
# 1. Qwen2.5-0.5B shape, depth 0: decode tokens/s against its roofline.
# 2. Llama 3.2 1B shape, bf16 KV, depths 32K and 128K (random K/V rows),
#    full, swa:1024 and hybrid:3:1: each against its own roofline, and the
#    full / swa:1024 speed ratio against the byte ratio.
# 3. A window layer's decode time from depth 4K to 128K (all-window plan).
# 4. Prefill of 4K tokens at depth 0: the matrix products' GFLOP/s against
#    oneDNN's GEMM.
set -eu
SWAN=${1:-build/swan}
[ -x "$SWAN" ] || { echo "no swan program at $SWAN" >&2; exit 1; }
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}

echo "== 1. qwen2.5-0.5b decode, depth 0"
"$SWAN" bench --synthetic qwen2.5-0.5b -p 0 -n 32 -d 0
echo "== 2. llama3.2-1b decode at 32K and 128K, bf16 KV"
"$SWAN" bench --synthetic llama3.2-1b --attn 'full;swa:1024;hybrid:3:1,window:1024' -p 0 -n 8 \
  -d 32768,131072 --fill random
echo "== 3. window layers: decode from depth 4K to 128K"
"$SWAN" bench --synthetic llama3.2-1b --attn 'swa:1024' -p 0 -n 16 -d 4096,32768,131072 --fill random
echo "== 4. llama3.2-1b prefill of 4K tokens, depth 0"
"$SWAN" bench --synthetic llama3.2-1b -p 4096 -n 1 -d 0 --batch 512
