#!/usr/bin/env bash
# swan's main job on its built-in default model (models/swan-7m: a 7M-parameter
# Llama-family model that swan trained itself on the Python standard library,
# 3:1 hybrid attention, window 256 + 4 sinks, context 2048; see
# models/README.md and recipes/default_model.sh):
#   1. a short generation, streamed as it comes;
#   2. what three attention plans cost on it: prefill and decode tokens/s
#      and KV MiB at depths 0 and 1536 (its own 3:1 hybrid, full attention,
#      sliding window 256 + 4 sinks on every layer);
#   3. the retrieval lab's headline (recipes/lab/headline.sh): swan's own
#      small models that retrieve (models/lab), each under the plan it was
#      trained under: recall inside the window, within its relay reach and
#      beyond, and what each plan costs (keys visited, KV MiB, decode tok/s);
#   4. the attention kernel table (full vs sliding window prefill up to 8K
#      tokens, decode over a full view vs a ring) against oneDNN's GEMM.
# Usage: scripts/main_job.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
swan="${1:-build}/swan"
model=models/swan-7m

echo "== generate: $model, 80 tokens, greedy =="
"$swan" generate -m "$model" -p "import os
import sys


def main(" -n 80 --temp 0
echo
echo "== cost of three attention plans on $model =="
"$swan" bench -m "$model" --attn 'model;full;swa:256,sinks:4' -p 512 -n 64 -d 0,1536 --kv f32
echo
echo "== the retrieval lab: what each plan keeps, on models that retrieve (docs/lab/README.md) =="
SWAN="$swan" sh recipes/lab/headline.sh
echo
echo "== attention kernel table (swan bench attention; --help for the full 1K-32K table) =="
"$swan" bench attention --n 1024,2048,4096,8192
