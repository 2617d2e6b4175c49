#!/bin/sh
# Continual pretraining refuses what it would silently get wrong: a model of
# another family than Llama/Mistral/Qwen2 (Gemma 3: its export as Llama
# would drop its norms and GELU), and a checkpoint holding tensors the
# trainer has no place for (q/k/v biases under a Llama config, which says
# nothing of them). Qwen2 trains and exports as Qwen2, biases and all.
#   usage: other_families_test.sh SWAN SOURCE_DIR SHARED_DIR
set -eu
SWAN=$1
SRC=$2
SHARED=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$SWAN" tokenize -t "$SHARED/data/stories260K" --out "$TMP/data.bin" --holdout 0 "$SHARED/data/stories260K/README.md" \
  > /dev/null 2>&1
SHAPE="--hidden 64 --layers 2 --inter 128 --heads 4 --vocab 600 --qkv-bias"

refused() {  # model dir, expected message
  if "$SWAN" train --init "$1" --data "$TMP/data.bin" --context 32 --steps 1 --out "$TMP/run" --quiet \
       > "$TMP/out.txt" 2>&1; then
    echo "continual pretraining of $1 was not refused"; exit 1
  fi
  grep -q "$2" "$TMP/out.txt" || { cat "$TMP/out.txt"; exit 1; }
  [ ! -e "$TMP/run/model" ] || { echo "an export was written"; exit 1; }
  rm -rf "$TMP/run"
}
node "$SRC/scripts/random_model.mjs" --out "$TMP/gemma3" --hidden 64 --layers 2 --inter 128 --heads 4 --vocab 600 \
  --arch Gemma3ForCausalLM > /dev/null
refused "$TMP/gemma3" "support Llama, Mistral and Qwen2 models; this one is Gemma3ForCausalLM"
node "$SRC/scripts/random_model.mjs" --out "$TMP/biased" $SHAPE > /dev/null
refused "$TMP/biased" "holds 6 tensors the trainer has no place for (model.layers.0.self_attn.k_proj.bias"
# The same shape without the biases trains and exports.
node "$SRC/scripts/random_model.mjs" --out "$TMP/llama" --hidden 64 --layers 2 --inter 128 --heads 4 --vocab 600 > /dev/null
"$SWAN" train --init "$TMP/llama" --data "$TMP/data.bin" --context 32 --steps 1 --out "$TMP/run" --quiet > /dev/null
[ -e "$TMP/run/model/model.safetensors" ]
rm -rf "$TMP/run"
# Qwen2: its 6 biases train and come back, under its own architecture.
node "$SRC/scripts/random_model.mjs" --out "$TMP/qwen2" $SHAPE --arch Qwen2ForCausalLM > /dev/null
"$SWAN" train --init "$TMP/qwen2" --data "$TMP/data.bin" --context 32 --steps 1 --out "$TMP/run" --quiet > /dev/null
grep -q '"Qwen2ForCausalLM"' "$TMP/run/model/config.json" || { echo "Qwen2 exported as another architecture"; exit 1; }
"$SWAN" inspect -m "$TMP/run/model" > "$TMP/inspect.txt"
grep -q "Qwen2ForCausalLM" "$TMP/inspect.txt" || { cat "$TMP/inspect.txt"; exit 1; }
biases=$(node -e '
  const b = require("fs").readFileSync(process.argv[1]), n = Number(b.readBigUInt64LE(0));
  console.log(Object.keys(JSON.parse(b.subarray(8, 8 + n).toString())).filter((k) => k.endsWith("_proj.bias")).length);
' "$TMP/run/model/model.safetensors")
[ "$biases" = 6 ] || { echo "the Qwen2 export holds $biases q/k/v biases, not 6"; exit 1; }
echo "other families and dropped tensors are refused; the Llama twin and Qwen2 train"
