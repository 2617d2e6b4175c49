#!/bin/sh
# Continual pretraining of a Gemma 3 model, as swan trains every family:
# a Gemma 3-style base (Gemma3ForCausalLM: QK-norms, sandwich norms, GELU,
# 5 local : 1 global layers with RoPE 10K / 1M) trained from scratch on the
# Python standard library under its 5:1 plan (window 128, context 1024),
# then continued from that base two ways on the same data:
#   cpt-5to1    under its own 5:1 plan
#   cpt-routed  under routed:128 (Switch Attention; new routers start with
#               every token on full attention)
# Each model's held-out perplexity (swan perplexity on standard-library
# files no run trained on) is printed before and after, in one table.
#
#   recipes/gemma3_cpt.sh [OUT]     (OUT default: runs/gemma3-cpt)
#
# Environment (all optional): SWAN (default build/swan), THREADS (default
# 1), BASE_STEPS (default 400), CPT_STEPS (default 200), SRC (Python
# sources, default /usr/lib/python3.11), TOKENIZER (default models/swan-7m).
# A finished stage is kept: running it again continues where it stopped.
set -eu

OUT=${1:-runs/gemma3-cpt}
SWAN=${SWAN:-build/swan}
THREADS=${THREADS:-1}
BASE_STEPS=${BASE_STEPS:-400}
CPT_STEPS=${CPT_STEPS:-200}
SRC=${SRC:-/usr/lib/python3.11}
TOKENIZER=${TOKENIZER:-models/swan-7m}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
[ -x "$SWAN" ] || { echo "no swan program at $SWAN (build it, or set SWAN=...)" >&2; exit 1; }
mkdir -p "$OUT"
start=$(date +%s)

# 1. Data: every 50th file held out as text for perplexity, the rest tokenized.
if [ ! -f "$OUT/train.bin" ]; then
  find "$SRC" -name '*.py' -not -path '*/test/*' -not -path '*/tests/*' -not -path '*/site-packages/*' \
    -not -path '*/dist-packages/*' | sort > "$OUT/files.txt"
  awk 'NR % 50 == 0' "$OUT/files.txt" > "$OUT/heldout_files.txt"
  awk 'NR % 50 != 0' "$OUT/files.txt" > "$OUT/train_files.txt"
  xargs cat < "$OUT/heldout_files.txt" > "$OUT/heldout.txt"
  xargs "$SWAN" tokenize -t "$TOKENIZER" --out "$OUT/train.bin" --holdout 0.01 < "$OUT/train_files.txt"
fi

PLAN_5TO1="hybrid:5:1,window:128"
common="--data $OUT/train.bin --tokenizer $TOKENIZER --context 1024 --batch 2 --accum 2 --eval-every 100
        --eval-seqs 4 --checkpoint-every 50 --quiet -t $THREADS"
# train RUN STEPS FLAGS...: a run, resumed when its checkpoint is there.
train() {
  run=$1 steps=$2
  shift 2
  [ -f "$run/model/model.safetensors" ] && [ ! -f "$run/checkpoint.bin" ] && return 0
  if [ -f "$run/checkpoint.bin" ]; then
    "$SWAN" train --out "$run" --resume --steps "$steps" -t "$THREADS" --quiet
  else
    # shellcheck disable=SC2086
    "$SWAN" train $common --steps "$steps" --out "$run" "$@"
  fi
  echo "$run: $steps steps after $(( $(date +%s) - start )) s"
}

# 2. The base, from scratch (6 layers, dim 128, 4/2 heads of 32).
train "$OUT/base" "$BASE_STEPS" --arch Gemma3ForCausalLM --preset mini --layers 6 --attn "$PLAN_5TO1" \
  --lr 3e-3 --warmup 40
# 3. The two continuations, at a third of the base's rate.
train "$OUT/cpt-5to1" "$CPT_STEPS" --init "$OUT/base/model" --attn model --lr 1e-3 --warmup 20
train "$OUT/cpt-routed" "$CPT_STEPS" --init "$OUT/base/model" --attn routed:128 --lr 1e-3 --warmup 20

# 4. Held-out perplexity of each, in windows of 1024 tokens.
ppl() {  # model dir, plan
  "$SWAN" perplexity -m "$1" -f "$OUT/heldout.txt" -c 1024 --attn "$2" --quiet -t "$THREADS" --json |
    node -e 'let s=""; process.stdin.on("data", (d) => s += d).on("end", () => {
      const j = JSON.parse(s); console.log(j.perplexity.toFixed(3));
    })'
}
{
  echo "| model | plan | held-out perplexity |"
  echo "| --- | --- | --- |"
  echo "| base | $PLAN_5TO1 (its own) | $(ppl "$OUT/base/model" model) |"
  echo "| base | full (where routed starts) | $(ppl "$OUT/base/model" full) |"
  echo "| cpt-5to1 | $PLAN_5TO1 | $(ppl "$OUT/cpt-5to1/model" model) |"
  echo "| cpt-routed | routed:128 (its routers) | $(ppl "$OUT/cpt-routed/model" model) |"
} | tee "$OUT/table.md"
echo "total $(( $(date +%s) - start )) s"
