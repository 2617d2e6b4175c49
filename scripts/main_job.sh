#!/usr/bin/env bash
# swan's main job on its built-in default model (models/stories260K):
#   1. a short generation, streamed as it comes;
#   2. what three attention plans cost on it: prefill and decode tokens/s
#      and KV MiB at depths 0 and 384 (full, sliding window 64, window 64
#      + 4 sinks);
#   3. the attention kernel table (full vs sliding window prefill up to 8K
#      tokens, decode over a full view vs a ring) against oneDNN's GEMM.
# Usage: scripts/main_job.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
swan="${1:-build}/swan"
model=models/stories260K

echo "== generate: $model, 60 tokens, greedy =="
"$swan" generate -m "$model" -p "Once upon a time" -n 60 --temp 0
echo
echo "== cost of three attention plans on $model =="
"$swan" bench -m "$model" --attn 'full;swa:64;swa:64,sinks:4' -p 128 -n 64 -d 0,384 --kv f32
echo
echo "== attention kernel table (swan bench attention; --help for the full 1K-32K table) =="
"$swan" bench attention --n 1024,2048,4096,8192
