#!/bin/sh
# A run killed with SIGKILL and resumed from its last checkpoint reaches the
# same losses (to 1e-6) as an uninterrupted run; then continual pretraining
# of stories260K under a different attention plan, and `swan generate` on
# the exported directory; then under a routed plan (Switch Attention), whose
# export keeps its routers and plan.
#   usage: resume_kill_test.sh SWAN STORIES260K_DIR
set -eu
SWAN=$1
MODEL=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

"$SWAN" tokenize -t "$MODEL" --out "$TMP/data.bin" --holdout 0 "$MODEL/README.md" > /dev/null
COMMON="--data $TMP/data.bin --preset tiny --attn hybrid:1:1,window:8,sinks:2 --context 32 \
  --batch 2 --accum 2 --steps 8 --lr 1e-2 --checkpoint-every 3 --eval-every 0 --quiet"

"$SWAN" train $COMMON --out "$TMP/a" > /dev/null
set +e
"$SWAN" train $COMMON --out "$TMP/b" --debug-kill-after 5 > /dev/null 2>&1
rc=$?
set -e
if [ "$rc" -ne 137 ]; then echo "expected the run to die of SIGKILL (137), got $rc"; exit 1; fi
"$SWAN" train $COMMON --out "$TMP/b" --resume > /dev/null

# Compare the loss column step by step.
paste -d, "$TMP/a/train_log.csv" "$TMP/b/train_log.csv" | tail -n +2 | awk -F, '
  { d = $3 - $11; if (d < 0) d = -d; if (d > max) max = d; n++ }
  END { if (n != 8) { print "expected 8 rows, got " n; exit 1 }
        printf "resume after SIGKILL: %d steps, max loss difference %.3g\n", n, max
        if (max > 1e-6) exit 1 }'

# Continual pretraining under another plan, then generation from the export.
"$SWAN" train --init "$MODEL" --attn hybrid:3:1,window:32,sinks:2,nope:full --data "$TMP/data.bin" \
  --context 64 --batch 2 --steps 2 --lr 1e-4 --eval-every 0 --quiet --out "$TMP/c" > /dev/null
grep -q '"swan_attention_plan"' "$TMP/c/model/config.json"
"$SWAN" generate -m "$TMP/c/model" -p "Once upon a time" -n 8 > "$TMP/gen.txt"
grep -q "Once upon a time" "$TMP/gen.txt"
echo "continual pretraining and export: ok"

"$SWAN" train --init "$MODEL" --attn routed:32,sinks:2 --router-alpha 0 --data "$TMP/data.bin" \
  --context 64 --batch 2 --steps 2 --lr 1e-4 --eval-every 0 --quiet --out "$TMP/r" > "$TMP/r.txt"
grep -q 'full attention 100.0%' "$TMP/r.txt"
grep -q '"swan_attention_plan": "full,layer0:routed:32,.*sinks:2"' "$TMP/r/model/config.json"
grep -q 'router.weight' "$TMP/r/model/model.safetensors"
head -1 "$TMP/r/train_log.csv" | grep -q 'router_loss,full_ratio'
echo "routed continual pretraining and export: ok"
