#!/bin/sh
# swan's routed model, in one command: continual pretraining of the
# full-attention twin of the default model (recipes/default_model_full.sh)
# into Switch Attention, every layer `routed:256,sinks:4` (a learned router
# per layer sends each token to full attention or to the default model's
# window of 256 keys + 4 sinks). Half the sequences are synthetic passkey
# documents (1200 of 2400 characters, the key 650+ tokens before the
# question), so that routes to full attention have something to fetch. The
# routers start with every token on full attention (weight 0, bias +2),
# learn at their own rate (--router-lr 1e-2, 5x the model's 2e-3) and are
# pushed off full attention by the adaptive regularizer (--router-gamma
# 3e-3, 3x the default). Then `swan route-stats` on a held-out file and on
# passkey items: how often each layer chose full attention.
#
#   recipes/routed_model.sh [OUT]   (OUT default: runs/default; the run is OUT/run-routed)
#   ATTN=full recipes/routed_model.sh OUT   the control: the same continued
#                                           training under full attention (OUT/run-full-cpt)
#
# It needs what recipes/default_model_full.sh OUT leaves in OUT: the token
# file OUT/data/stdlib.bin, OUT/tokenizer, OUT/corpus/files.txt and the
# full-attention model OUT/run-full/model; it writes the passkey documents
# to OUT/passkey and OUT/data/passkey.bin.
#
# Environment (all optional):
#   SWAN      the swan program (default: build/swan)
#   INIT      the full-attention model to start from (default: OUT/run-full/model)
#   STEPS     optimizer steps of 4 x 2048 tokens (default 300: 2.5M tokens,
#             46 min at the ~900 tokens/s of one thread, the control beside it)
#   MINUTES   hard limit on the training itself (default 58): it stops,
#             checkpoints and exports when reached
#   LR        the model's peak learning rate (default 2e-3; cosine to half)
#   GAMMA     --router-gamma, the regularizer's base weight (default 3e-3)
#   HELDOUT   the text for route-stats (default: the largest held-out file,
#             every 100th line of OUT/corpus/files.txt, as `swan tokenize
#             --holdout 0.01` held them out)
#   LIMIT     route-stats windows of 2048 tokens of HELDOUT (default 4)
#   PASSKEYS  route-stats passkey items (default 10)
#   ATTN      the plan to continue under (default routed:256,sinks:4; full
#             gives the control run that the routed model is compared with)
#   SYNTH     share of synthetic passkey sequences (default 0.5)
#   EXTRA     more `swan train` flags, e.g. "--resume"
set -eu

OUT=${1:-runs/default}
SWAN=${SWAN:-build/swan}
INIT=${INIT:-$OUT/run-full/model}
STEPS=${STEPS:-300}
MINUTES=${MINUTES:-58}
LR=${LR:-2e-3}
GAMMA=${GAMMA:-3e-3}
LIMIT=${LIMIT:-4}
PASSKEYS=${PASSKEYS:-10}
EXTRA=${EXTRA:-}
ATTN=${ATTN:-routed:256,sinks:4}
SYNTH=${SYNTH:-0.5}
case "$ATTN" in
  routed*) RUN="$OUT/run-routed" ;;
  full) RUN="$OUT/run-full-cpt" ;;
  *) RUN="$OUT/run-cpt-$(echo "$ATTN" | tr -c 'a-zA-Z0-9\n' '_')" ;;
esac
# Threads that wait sleep instead of spinning (see recipes/default_model.sh).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
[ -x "$SWAN" ] || { echo "no swan program at $SWAN (build it, or set SWAN=...)" >&2; exit 1; }
[ -f "$INIT/config.json" ] || {
  echo "no full-attention model at $INIT: run recipes/default_model_full.sh $OUT first, or set INIT=DIR" >&2
  exit 1
}
for f in "$OUT/data/stdlib.bin" "$OUT/tokenizer/tokenizer.json"; do
  [ -f "$f" ] || { echo "no $f: run recipes/default_model_full.sh $OUT first" >&2; exit 1; }
done
start=$(date +%s)
if [ ! -f "$OUT/data/passkey.bin" ]; then
  "$SWAN" train synth --out "$OUT/passkey" --docs 1200 --chars 2400 --kinds passkey
  "$SWAN" tokenize -t "$OUT/tokenizer" --out "$OUT/data/passkey.bin" --holdout 0 --ext .txt \
    "$OUT/passkey" > /dev/null
fi

# 1. Continual pretraining: the model's data and batches (4 sequences of 2048
#    tokens per step, SYNTH of them passkey documents), the model rate LR
#    (warmup 10, cosine to half), 1e-2 for the routers.
"$SWAN" train --init "$INIT" --attn "$ATTN" --data "$OUT/data/stdlib.bin" \
  --synthetic "$OUT/data/passkey.bin" --synthetic-rate "$SYNTH" --tokenizer "$OUT/tokenizer" \
  --context 2048 --batch 1 --accum 4 --steps "$STEPS" --lr "$LR" --warmup 10 --min-lr-ratio 0.5 \
  --router-lr 1e-2 --router-gamma "$GAMMA" --eval-every 25 --eval-seqs 4 --checkpoint-every 25 --log-every 1 \
  --time-limit "$MINUTES" --out "$RUN" $EXTRA
echo "training done after $(( $(date +%s) - start )) s; model in $RUN/model, curve in $RUN/loss.svg"
case "$ATTN" in routed*) ;; *) exit 0 ;; esac

# 2. Where the routers send tokens: a held-out Python file (per layer, and a
#    heatmap of layers x tokens), then passkey items (answer tokens whose key
#    lies outside the window against those inside it).
if [ -z "${HELDOUT:-}" ]; then
  HELDOUT=$(awk 'NR % 100 == 0' "$OUT/corpus/files.txt" | xargs ls -S | head -1)
fi
echo "route stats on $HELDOUT"
"$SWAN" route-stats -m "$RUN/model" -f "$HELDOUT" -c 2048 --limit "$LIMIT" --svg "$RUN/routes.svg" --quiet
"$SWAN" route-stats -m "$RUN/model" --passkey -c 2048 --limit "$PASSKEYS" --quiet
echo "total $(( $(date +%s) - start )) s; routing heatmap in $RUN/routes.svg"
