#!/usr/bin/env bash
# Builds the tokenizer's libFuzzer targets with clang (AddressSanitizer and
# UndefinedBehaviorSanitizer) and runs each for a short time.
#   scripts/fuzz_tokenizer.sh [SECONDS_PER_TARGET]   (default 20)
# Targets: tokenizer/fuzz/load_fuzz.cc (tokenizer.json loading) and
# tokenizer/fuzz/encode_fuzz.cc (encode/decode of arbitrary bytes).
# Corpora are kept in build-fuzz/ between runs; a crash leaves its input
# in build-fuzz/ and makes this script fail.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
cxx=$(command -v clang++-14 || command -v clang++ || true)
[ -n "$cxx" ] || { echo "fuzz_tokenizer: clang++ not found (run scripts/setup.sh)" >&2; exit 1; }
export SWAN_SHARED_DIR=${SWAN_SHARED_DIR:-$(cd .. && pwd)/shared}

out=build-fuzz
mkdir -p "$out/obj" "$out/corpus-load" "$out/corpus-encode"
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
       -I. $(pkg-config --cflags libpcre2-8 icu-uc))
libs=($(pkg-config --libs libpcre2-8 icu-uc))

# Library sources: every tokenizer/*.cc but the tests, compiled once each.
objs=()
for src in tokenizer/*.cc; do
  case "$src" in *_test.cc) continue ;; esac
  obj="$out/obj/$(basename "${src%.cc}").o"
  if [ ! -e "$obj" ] || [ "$src" -nt "$obj" ] || [ -n "$(find tokenizer -name '*.h' -newer "$obj")" ]; then
    "$cxx" "${flags[@]}" -c "$src" -o "$obj"
  fi
  objs+=("$obj")
done

# Seeds: real tokenizer.json files and a few texts.
cp -f "$SWAN_SHARED_DIR/data/stories260K/tokenizer.json" "$out/corpus-load/stories260K.json" 2>/dev/null || true
printf '{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}}' > "$out/corpus-load/tiny.json"
printf 'Hello world <s> 123 \xf0\x9f\xa4\x96 caf\xc3\xa9\n\tdef f(x):' > "$out/corpus-encode/seed.txt"

for target in load encode; do
  "$cxx" "${flags[@]}" -fsanitize=fuzzer "tokenizer/fuzz/${target}_fuzz.cc" "${objs[@]}" "${libs[@]}" \
    -o "$out/${target}_fuzz"
  echo "fuzz_tokenizer: running ${target}_fuzz for ${seconds}s"
  if ! (cd "$out" && ASAN_OPTIONS=detect_leaks=1 "./${target}_fuzz" -max_total_time="$seconds" \
          -rss_limit_mb=4096 -max_len=65536 "corpus-${target}" >"${target}.log" 2>&1); then
    tail -60 "$out/${target}.log"
    echo "fuzz_tokenizer: ${target}_fuzz failed; the input is in $out/ (crash-*)" >&2
    exit 1
  fi
  grep -E "^Done|runs in" "$out/${target}.log" | tail -1
done
echo "fuzz_tokenizer: no crashes"
