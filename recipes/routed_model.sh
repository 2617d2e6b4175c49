#!/bin/sh
# swan's routed model, in one command: continual pretraining of the
# full-attention twin of the default model (recipes/default_model_full.sh)
# into Switch Attention, every layer `routed:256,sinks:4` (a learned router
# per layer sends each token to full attention or to the default model's
# window of 256 keys + 4 sinks). The routers start with every token on full
# attention (weight 0, bias +2) and learn at their own rate (--router-lr
# 1e-2, 10x the model's 1e-3), so that the regularizer can move them off
# full attention within the run. Then `swan route-stats` on a held-out file
# and on passkey items: how often each layer chose full attention.
#
#   recipes/routed_model.sh [OUT]   (OUT default: runs/default; the run is OUT/run-routed)
#   ATTN=full recipes/routed_model.sh OUT   the control: the same continued
#                                           training under full attention (OUT/run-full-cpt)
#
# It needs what recipes/default_model_full.sh OUT leaves in OUT: the token
# files (OUT/data/stdlib.bin, synthetic.bin), OUT/tokenizer, OUT/corpus/files.txt
# and the full-attention model OUT/run-full/model.
#
# Environment (all optional):
#   SWAN      the swan program (default: build/swan)
#   INIT      the full-attention model to start from (default: OUT/run-full/model)
#   STEPS     optimizer steps of 4 x 2048 tokens (default 160: 1.3M tokens,
#             ~17 min at 1300 tokens/s, ~25 min at the ~870 tokens/s the
#             full twin trained at on the shared 2-core machine)
#   MINUTES   hard limit on the training itself (default 30): it stops,
#             checkpoints and exports when reached
#   HELDOUT   the text for route-stats (default: the largest held-out file,
#             every 100th line of OUT/corpus/files.txt, as `swan tokenize
#             --holdout 0.01` held them out)
#   LIMIT     route-stats windows of 2048 tokens of HELDOUT (default 4)
#   PASSKEYS  route-stats passkey items (default 10)
#   ATTN      the plan to continue under (default routed:256,sinks:4; full
#             gives the control run that the routed model is compared with)
#   SYNTH     share of synthetic retrieval sequences (default 0.3: more than
#             the first run's 0.1, so retrieval has more to learn from)
#   EXTRA     more `swan train` flags, e.g. "--resume"
set -eu

OUT=${1:-runs/default}
SWAN=${SWAN:-build/swan}
INIT=${INIT:-$OUT/run-full/model}
STEPS=${STEPS:-160}
MINUTES=${MINUTES:-30}
LIMIT=${LIMIT:-4}
PASSKEYS=${PASSKEYS:-10}
EXTRA=${EXTRA:-}
ATTN=${ATTN:-routed:256,sinks:4}
SYNTH=${SYNTH:-0.3}
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
for f in "$OUT/data/stdlib.bin" "$OUT/data/synthetic.bin" "$OUT/tokenizer/tokenizer.json"; do
  [ -f "$f" ] || { echo "no $f: run recipes/default_model_full.sh $OUT first" >&2; exit 1; }
done
start=$(date +%s)

# 1. Continual pretraining: the model's data and batches (4 sequences of 2048
#    tokens per step, SYNTH synthetic retrieval), a small model rate (1e-3,
#    warmup 10, cosine to half) so the twin's weights stay close to what they
#    learned, and 10x that for the routers.
"$SWAN" train --init "$INIT" --attn "$ATTN" --data "$OUT/data/stdlib.bin" \
  --synthetic "$OUT/data/synthetic.bin" --synthetic-rate "$SYNTH" --tokenizer "$OUT/tokenizer" \
  --context 2048 --batch 1 --accum 4 --steps "$STEPS" --lr 1e-3 --warmup 10 --min-lr-ratio 0.5 \
  --router-lr 1e-2 --eval-every 25 --eval-seqs 4 --checkpoint-every 25 --log-every 1 \
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
