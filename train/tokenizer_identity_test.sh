#!/bin/sh
# Token files carry the fingerprint of the tokenizer that wrote them:
# continuing a model on ids of another tokenizer is refused before any
# work; its own tokenizer's ids train.
#   usage: tokenizer_identity_test.sh SWAN STORIES260K_DIR SOURCE_DIR
set -eu
SWAN=$1
STORIES=$2
SRC=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$SWAN" tokenize -t "$STORIES" --out "$TMP/stories.bin" --holdout 0 \
  "$SRC/eval/testdata/stories.txt" > /dev/null
# swan-7m's tokenizer (4096 ids) is another: refused, naming both.
if "$SWAN" train --init "$SRC/models/swan-7m" --data "$TMP/stories.bin" --out "$TMP/other" --steps 1 \
     --context 32 --batch 1 --quiet > "$TMP/other.txt" 2>&1; then
  echo "training on another tokenizer's ids was not refused"; cat "$TMP/other.txt"; exit 1
fi
grep -q "stories.bin was tokenized with another tokenizer than .*swan-7m's" "$TMP/other.txt"
# stories260K's own: one step trains.
"$SWAN" train --init "$STORIES" --data "$TMP/stories.bin" --out "$TMP/own" --steps 1 \
  --context 32 --batch 1 --quiet > /dev/null
test -s "$TMP/own/model/model.safetensors"
echo "tokenizer identity: ok"
