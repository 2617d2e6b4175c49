#!/bin/sh
# The default swan model, in one command: a byte-level BPE tokenizer
# (vocabulary 4096) and a ~7M-parameter Llama-family model (8 layers, dim
# 256, context 2048) trained on the Python standard library plus synthetic
# long-range retrieval documents (passkey, key-value, code), under a 3:1
# hybrid attention plan (window 256 + 4 sinks; layers 3 and 7 full), within
# 60 minutes on a 2-core machine. models/swan-7m is its output, as bf16:
#   swan convert -m OUT/run-hybrid/model --out models/swan-7m
#
#   recipes/default_model.sh [OUT]          the hybrid model (OUT default: runs/default)
#   PLAN=full recipes/default_model.sh OUT  its full-attention twin
#
# Environment (all optional):
#   SWAN      the swan program (default: build/swan)
#   PLAN      hybrid (default) or full, or any --attn spec
#   STEPS     optimizer steps (default 320: 2.6M tokens; measured on the
#             2-core machine while it was shared: hybrid 37 min at 1192
#             tokens/s, full 45 + 4 min at ~850 tokens/s)
#   MINUTES   hard limit on the training itself (default 45): it stops,
#             checkpoints and exports when reached (EXTRA=--resume finishes)
#   SRC       Python sources (default /usr/lib/python3.11)
#   EXTRA     more `swan train` flags, e.g. "--resume"
# The tokenizer and token files are reused when OUT already has them.
set -eu

OUT=${1:-runs/default}
SWAN=${SWAN:-build/swan}
PLAN=${PLAN:-hybrid}
STEPS=${STEPS:-320}
MINUTES=${MINUTES:-45}
SRC=${SRC:-/usr/lib/python3.11}
EXTRA=${EXTRA:-}
case "$PLAN" in
  hybrid) ATTN="hybrid:3:1,window:256,sinks:4" ;;
  full) ATTN="full" ;;
  *) ATTN="$PLAN" ;;
esac
# Threads that wait sleep instead of spinning: on a shared machine spinning
# OpenMP barriers cost a scheduler quantum each (3x slower measured).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
[ -x "$SWAN" ] || { echo "no swan program at $SWAN (build it, or set SWAN=...)" >&2; exit 1; }
mkdir -p "$OUT/corpus"
start=$(date +%s)

# 1. The corpus: the standard library without its test suites and vendored
#    packages, one file per document.
if [ ! -f "$OUT/corpus/.done" ]; then
  find "$SRC" -name '*.py' -not -path '*/test/*' -not -path '*/tests/*' -not -path '*/idlelib/idle_test/*' \
    -not -path '*/site-packages/*' -not -path '*/dist-packages/*' -not -path '*/lib2to3/tests/*' \
    > "$OUT/corpus/files.txt"
  echo "corpus: $(wc -l < "$OUT/corpus/files.txt") files from $SRC"
  touch "$OUT/corpus/.done"
fi

# 2. The tokenizer (vocabulary 4096, <|endoftext|> as end of document).
if [ ! -f "$OUT/tokenizer/tokenizer.json" ]; then
  xargs "$SWAN" tokenizer train --vocab 4096 --out "$OUT/tokenizer" < "$OUT/corpus/files.txt"
fi

# 3. Token files: training + held-out twin (1% of the files), synthetic mix.
if [ ! -f "$OUT/data/stdlib.bin" ]; then
  mkdir -p "$OUT/data"
  xargs "$SWAN" tokenize -t "$OUT/tokenizer" --out "$OUT/data/stdlib.bin" --holdout 0.01 \
    < "$OUT/corpus/files.txt"
fi
if [ ! -f "$OUT/data/synthetic.bin" ]; then
  "$SWAN" train synth --out "$OUT/synthetic" --docs 800 --chars 4400 --kinds passkey,kv,code
  "$SWAN" tokenize -t "$OUT/tokenizer" --out "$OUT/data/synthetic.bin" --holdout 0 --ext .txt \
    "$OUT/synthetic" > /dev/null
fi
echo "data ready after $(( $(date +%s) - start )) s"

# 4. Training: 4 sequences of 2048 tokens per step (accumulated one at a
#    time), AdamW 3e-3 warmup 50 + cosine, 10% synthetic retrieval sequences.
RUN="$OUT/run-$(echo "$PLAN" | tr -c 'a-zA-Z0-9\n' '_')"
"$SWAN" train --data "$OUT/data/stdlib.bin" --synthetic "$OUT/data/synthetic.bin" --synthetic-rate 0.1 \
  --tokenizer "$OUT/tokenizer" --preset small --attn "$ATTN" --context 2048 --batch 1 --accum 4 \
  --steps "$STEPS" --lr 3e-3 --warmup 50 --eval-every 50 --eval-seqs 4 --checkpoint-every 50 \
  --log-every 1 --time-limit "$MINUTES" --gemm-report --out "$RUN" $EXTRA

echo "total $(( $(date +%s) - start )) s; model in $RUN/model, curve in $RUN/loss.svg"
"$SWAN" generate -m "$RUN/model" -p "def " -n 48 || true
