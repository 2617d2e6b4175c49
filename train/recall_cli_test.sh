#!/bin/sh
# Recall in token ids end to end with the swan program: `swan train recall`
# writes labelled data, `swan train` learns on it with a context curriculum
# and logs recall by distance, and the export carries its task to `swan
# compare`, `swan heads` and `swan train --head-gates` (and per-head plans),
# `swan route-stats --recall` and `swan score`.
#   usage: recall_cli_test.sh SWAN
set -eu
SWAN=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

"$SWAN" train recall --out "$TMP/data" --context 48 --pairs 4 --queries 6 --keys 16 --values 16 \
  --filler 8 --bins 2-16,16-43 --sequences 64 --val-sequences 8 > "$TMP/gen.txt"
grep -q "wrote 64 training and 8 held-out mqar sequences of 48 tokens (vocab 44" "$TMP/gen.txt"
for f in train.bin train.labels train.val.bin train.val.labels recall.json; do test -s "$TMP/data/$f"; done

"$SWAN" train --data "$TMP/data/train.bin" --out "$TMP/run" --preset tiny --attn hybrid:1:1,window:8 \
  --context 48 --context-schedule 24:2 --batch 4 --steps 4 --eval-every 2 --eval-seqs 8 --quiet \
  > "$TMP/train.txt"
grep -q "held-out recall by key->query distance: \[1,2) .* \[8,49) [0-9.]*% (chance 6.25%)" "$TMP/train.txt"
test "$(wc -l < "$TMP/run/recall_log.csv")" -eq 3   # header and two evaluations
grep -q "<svg" "$TMP/run/recall.svg"
test -s "$TMP/run/model/recall.json"
# --resume needs no other flags (the run keeps them), and a larger --steps
# extends it at the final rate (lr 3e-3 * 0.1 after the 4 scheduled steps).
"$SWAN" train --out "$TMP/run" --resume --steps 6 --quiet > "$TMP/resume.txt" 2>&1
test "$(tail -n 1 "$TMP/run/train_log.csv" | cut -d, -f1)" = 6
test "$(awk -F, '$1 == 5 || $1 == 6 { print $5 }' "$TMP/run/train_log.csv" | sort -u)" = 0.0003

# Growing the trained 2-layer model to 3 layers: its layers first and last,
# the new one in between; the grown model trains and exports at 3 layers.
"$SWAN" train --data "$TMP/data/train.bin" --out "$TMP/grown" --init "$TMP/run/model" --grow 3 \
  --attn hybrid:2:1,window:8 --context 48 --batch 4 --steps 2 --eval-every 0 > "$TMP/grow.txt" 2>&1
grep -q "grown from $TMP/run/model: its layers at 0,new,1; new layers start as the identity" "$TMP/grow.txt"
grep -q '"num_hidden_layers": 3' "$TMP/grown/model/config.json"
for bad in "--grow 3" "--grow 2 --attn full"; do
  if "$SWAN" train --data "$TMP/data/train.bin" --out "$TMP/bad" --init "$TMP/run/model" $bad --context 48 --steps 1 \
    > "$TMP/bad.txt" 2>&1; then echo "swan train $bad was not refused"; exit 1; fi
done
grep -q "error: --grow 2 must be more layers than the model's 2" "$TMP/bad.txt"

"$SWAN" compare -m "$TMP/run/model" --window 8 --samples 4 --quiet > "$TMP/compare.txt"
grep -q "recall, distance \[8,14) " "$TMP/compare.txt"   # tiny: 2 layers, relay 2 * 7
grep -q "chance: 6.25% guessing among 16 values; 25.00% picking one of the sequence's 4 values" "$TMP/compare.txt"
# Keys each query visits, from the spans: full (1+...+48)/48 = 24.5; a window
# of 8: (1+...+8 + 40*8)/48 = 7.4; with 4 sinks too: (356 + 154)/48 = 10.6.
grep -q "keys visited per query  *24.5  *7.4  *10.6 " "$TMP/compare.txt"
grep -q "answer perplexity  *[0-9.]* " "$TMP/compare.txt"
grep -q "KV MiB @ 48 " "$TMP/compare.txt"
"$SWAN" compare -m "$TMP/run/model" --window 8 --samples 2 --quiet --json | grep -q '"chance_pick": 0.25'

"$SWAN" heads -m "$TMP/run/model" --samples 2 --svg "$TMP/heads.svg" > "$TMP/heads.txt"
grep -q "strongest: layer" "$TMP/heads.txt"
grep -q "<svg" "$TMP/heads.svg"

# Per-head plans: training under one (2 KV heads, layer 1 with KV head 1
# full), the stored plan shown by `swan inspect`, the heads chosen by
# `swan heads --select` and run from their file.
"$SWAN" train --recall "$TMP/data/recall.json" --out "$TMP/per-head" --preset tiny --heads 4 --kv-heads 2 \
  --attn full,window:8,sinks:1,layer1:heads:1 --context 48 --batch 2 --steps 2 --eval-every 2 --eval-seqs 4 \
  --quiet > "$TMP/per-head.txt"
"$SWAN" inspect -m "$TMP/per-head/model" -c 48 > "$TMP/inspect.txt"
grep -q "1  per-head  KV heads 1 full | window 8 + 1 sinks" "$TMP/inspect.txt"
"$SWAN" heads -m "$TMP/per-head/model" --attn full --samples 2 --select 0.5 --out "$TMP/heads.json" \
  > "$TMP/select.txt"
grep -q "kept 2 of 4 KV heads full (share 0.5)" "$TMP/select.txt"
grep -q '"full_heads"' "$TMP/heads.json"
"$SWAN" compare -m "$TMP/per-head/model" --attn "full;full,window:8,heads:$TMP/heads.json" --samples 2 \
  --quiet > "$TMP/compare-heads.txt"
grep -q "recall, distance" "$TMP/compare-heads.txt"
if "$SWAN" heads -m "$TMP/per-head/model" --select 0 --out "$TMP/none.json" 2> "$TMP/err.txt"; then exit 1; fi
grep -q "select takes a share" "$TMP/err.txt"
# The same choice by DuoAttention's gates, at two shares from one training.
"$SWAN" train --head-gates -m "$TMP/per-head/model" --select 0.25,0.5 --out "$TMP/gates_{share}.json" \
  --window 8 --sinks 1 --steps 3 --batch 2 > "$TMP/gates.txt"
grep -q "kept 1 of 4 KV heads full (share 0.25)" "$TMP/gates.txt"
grep -q "kept 2 of 4 KV heads full (share 0.5)" "$TMP/gates.txt"
grep -q '"method": "gates"' "$TMP/gates_0.5.json"
"$SWAN" compare -m "$TMP/per-head/model" --attn "full,window:8,sinks:1,heads:$TMP/gates_0.25.json" --samples 2 \
  --quiet | grep -q "recall, distance"

# Linearizing (LoLCATs): attention transfer trains the new feature maps
# alone, then the whole model fine-tunes under the linear plan it keeps.
"$SWAN" train --init "$TMP/run/model" --attn linear --attention-transfer --data "$TMP/data/train.bin" \
  --out "$TMP/transfer" --context 48 --batch 2 --steps 2 --eval-every 2 --eval-seqs 4 > "$TMP/transfer.txt" 2>&1
grep -q "2 new linear layers: Hedgehog feature maps (F = 4) from the identity start" "$TMP/transfer.txt"
grep -q '"swan_attention_plan": "full,layer0:linear,layer1:linear"' "$TMP/transfer/model/config.json"
"$SWAN" train --init "$TMP/transfer/model" --data "$TMP/data/train.bin" --out "$TMP/linear" --context 48 \
  --batch 2 --steps 2 --eval-every 2 --eval-seqs 4 --quiet > "$TMP/linear.txt" 2>&1
grep -q "held-out recall by key->query distance" "$TMP/linear.txt"
# The linear model runs: its cache is a state of KV x P x (D + 1) floats (1 x 8 x 9).
"$SWAN" inspect -m "$TMP/linear/model" -c 48 > "$TMP/inspect-linear.txt"
grep -q "0  linear    linear .* 288 B" "$TMP/inspect-linear.txt"
grep -q "linear layers keep no keys" "$TMP/inspect-linear.txt"
"$SWAN" compare -m "$TMP/linear/model" --samples 2 --quiet | grep -q "recall, distance"
if "$SWAN" train --attn linear --attention-transfer --data "$TMP/data/train.bin" --out "$TMP/x" 2> "$TMP/err.txt"; then
  exit 1
fi
grep -q "attention-transfer linearizes a trained model" "$TMP/err.txt"

"$SWAN" route-stats -m "$TMP/run/model" --recall --attn routed:8 --route-ratio 0.5 --samples 2 \
  > "$TMP/routes.txt"
grep -q "far query" "$TMP/routes.txt"

# Sequences made on the fly from the task file, no token files.
"$SWAN" train --recall "$TMP/data/recall.json" --out "$TMP/fly" --preset tiny --context 48 --batch 2 \
  --steps 2 --eval-every 2 --eval-seqs 4 --quiet > "$TMP/fly.txt"
grep -q "held-out recall by key->query distance" "$TMP/fly.txt"
test -s "$TMP/fly/model/recall.json"

"$SWAN" generate -m "$TMP/run/model" --ids "<bos>,f0,f1,f2,k3,v5,f3,k3" -n 2 --temp 0 2>/dev/null \
  | grep -q "^<bos>,f0,f1,f2,k3,v5,f3,k3 | [kvf<N][a-z0-9>]* "

printf '[0, 4, 20, 4]\n' > "$TMP/ids.jsonl"
"$SWAN" score -m "$TMP/run/model" --ids "$TMP/ids.jsonl" 2>/dev/null | grep -q '"position":3,"token":4'
echo "recall data, training, compare, heads (and per-head plans, gates), route-stats and score: ok"
