#!/bin/sh
# Continual pretraining of every family: Qwen2 trains and exports as Qwen2,
# biases and all; Gemma 3 as Gemma 3, with its QK-norms and sandwich norms,
# under its own 5:1 plan and routed; a checkpoint holding tensors the
# trainer has no place for (q/k/v biases under a Llama config, which says
# nothing of them) is refused rather than dropped.
#   usage: other_families_test.sh SWAN SOURCE_DIR STORIES260K_DIR
set -eu
SWAN=$1
SRC=$2
STORIES=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$SWAN" tokenize -t "$STORIES" --out "$TMP/data.bin" --holdout 0 "$STORIES/README.md" \
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
node "$SRC/scripts/random_model.mjs" --out "$TMP/biased" $SHAPE > /dev/null
refused "$TMP/biased" "holds 6 tensors the trainer has no place for (model.layers.0.self_attn.k_proj.bias"
# The same shape without the biases trains and exports.
node "$SRC/scripts/random_model.mjs" --out "$TMP/llama" --hidden 64 --layers 2 --inter 128 --heads 4 --vocab 600 > /dev/null
"$SWAN" train --init "$TMP/llama" --data "$TMP/data.bin" --context 32 --steps 1 --out "$TMP/run" --quiet > /dev/null
[ -e "$TMP/run/model/model.safetensors" ]
rm -rf "$TMP/run"
# The tensors of a safetensors file whose names end with $2.
count_tensors() {
  node -e '
    const b = require("fs").readFileSync(process.argv[1]), n = Number(b.readBigUInt64LE(0));
    console.log(Object.keys(JSON.parse(b.subarray(8, 8 + n).toString())).filter((k) => k.endsWith(process.argv[2])).length);
  ' "$1" "$2"
}
# Qwen2: its 6 biases train and come back, under its own architecture.
node "$SRC/scripts/random_model.mjs" --out "$TMP/qwen2" $SHAPE --arch Qwen2ForCausalLM > /dev/null
"$SWAN" train --init "$TMP/qwen2" --data "$TMP/data.bin" --context 32 --steps 1 --out "$TMP/run" --quiet > /dev/null
grep -q '"Qwen2ForCausalLM"' "$TMP/run/model/config.json" || { echo "Qwen2 exported as another architecture"; exit 1; }
"$SWAN" inspect -m "$TMP/run/model" > "$TMP/inspect.txt"
grep -q "Qwen2ForCausalLM" "$TMP/inspect.txt" || { cat "$TMP/inspect.txt"; exit 1; }
biases=$(count_tensors "$TMP/run/model/model.safetensors" _proj.bias)
[ "$biases" = 6 ] || { echo "the Qwen2 export holds $biases q/k/v biases, not 6"; exit 1; }
rm -rf "$TMP/run"
# Gemma 3 (6 layers, 5 local : 1 global): under its own plan and routed, its
# 4 norms a layer beside the input norm come back and the export generates.
node "$SRC/scripts/random_model.mjs" --out "$TMP/gemma3" --hidden 64 --layers 6 --inter 128 --heads 4 --vocab 600 \
  --arch Gemma3ForCausalLM --sliding-window 8 --tied > /dev/null
for attn in model routed:8; do
  "$SWAN" train --init "$TMP/gemma3" --attn $attn --data "$TMP/data.bin" --context 32 --steps 2 --out "$TMP/run" \
    --quiet > /dev/null
  grep -q '"Gemma3ForCausalLM"' "$TMP/run/model/config.json" || { echo "Gemma 3 exported as another family"; exit 1; }
  for t in q_norm.weight k_norm.weight post_attention_layernorm.weight pre_feedforward_layernorm.weight \
           post_feedforward_layernorm.weight; do
    n=$(count_tensors "$TMP/run/model/model.safetensors" "$t")
    [ "$n" = 6 ] || { echo "the Gemma 3 export ($attn) holds $n tensors $t, not 6"; exit 1; }
  done
  "$SWAN" generate -m "$TMP/run/model" --ids 1,2,3 -n 4 > "$TMP/gen.txt"
  grep -q '^1,2,3 | [0-9]* [0-9]* [0-9]* [0-9]*' "$TMP/gen.txt" || { cat "$TMP/gen.txt"; exit 1; }
  rm -rf "$TMP/run"
done
# From scratch: --arch makes a Gemma 3 under its own plan (5 window layers : 1 full).
"$SWAN" train --arch Gemma3ForCausalLM --preset tiny --layers 6 --data "$TMP/data.bin" --context 32 --steps 1 \
  --out "$TMP/run" --quiet > /dev/null
grep -q '"Gemma3ForCausalLM"' "$TMP/run/model/config.json" || { echo "--arch Gemma3ForCausalLM made another family"; exit 1; }
"$SWAN" inspect -m "$TMP/run/model" > "$TMP/inspect.txt"
grep -q "4  window" "$TMP/inspect.txt" && grep -q "5  full" "$TMP/inspect.txt" || { cat "$TMP/inspect.txt"; exit 1; }
if "$SWAN" train --arch FalconForCausalLM --preset tiny --data "$TMP/data.bin" --steps 1 --out "$TMP/bad" --quiet \
     > "$TMP/out.txt" 2>&1; then
  echo "an unknown --arch was taken"; exit 1
fi
grep -q "FalconForCausalLM' is not supported (supported: LlamaForCausalLM" "$TMP/out.txt" || { cat "$TMP/out.txt"; exit 1; }
echo "dropped tensors are refused; the Llama twin, Qwen2 and Gemma 3 train and export as themselves"
