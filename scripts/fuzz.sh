#!/usr/bin/env bash
# Builds swan's libFuzzer targets with clang (AddressSanitizer and
# UndefinedBehaviorSanitizer) and runs each for a short time.
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   (default 20 s, every target)
# Targets (FOLDER/fuzz/NAME_fuzz.cc), each with the sources it links:
#   load, encode        tokenizer.json loading; encode/decode of arbitrary bytes
#   plan                the attention plan parser and resolver
#   config              config.json parsing and safetensors headers
#   gguf                GGUF files: header, metadata, tensor table, hyperparameters, tokenizer
#   chat_template       the Jinja chat-template parser and renderer
#   request             OpenAI request bodies to validated requests
# Corpora are kept in build-fuzz/ between runs, seeded from checked-in
# files; a crash leaves its input in build-fuzz/ and makes this script fail.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(load encode plan config gguf chat_template request)
cxx=$(command -v clang++-14 || command -v clang++ || true)
[ -n "$cxx" ] || { echo "fuzz: clang++ not found (run scripts/setup.sh)" >&2; exit 1; }
# Through ccache when it is installed: another clone compiles only what changed.
launcher=()
if command -v ccache > /dev/null; then
  launcher=(ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
fi
# The fuzzers read models/stories260K from the checkout.
export SWAN_SOURCE_DIR=${SWAN_SOURCE_DIR:-$(pwd)}
stories=$SWAN_SOURCE_DIR/models/stories260K

out=build-fuzz
mkdir -p "$out/obj"
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
       -I. $(pkg-config --cflags libpcre2-8 icu-uc))
libs=($(pkg-config --libs libpcre2-8 icu-uc))

# compile SRC...: the object of each source (rebuilt when it or a header is newer).
compile() {
  for src in "$@"; do
    obj="$out/obj/$(echo "${src%.cc}" | tr / _).o"
    if [ ! -e "$obj" ] || [ "$src" -nt "$obj" ] || [ -n "$(find . -path ./build\* -prune -o -name '*.h' -newer "$obj" -print -quit)" ]; then
      "${launcher[@]}" "$cxx" "${flags[@]}" -c "$src" -o "$obj"
    fi
    echo "$obj"
  done
}
tokenizer_srcs=$(ls tokenizer/*.cc | grep -v _test.cc)
# GGUF files with their tokenizer and chat template (serve reads templates from them too).
gguf_srcs="model/gguf.cc model/gguf_split.cc model/gguf_config.cc model/gguf_tokenizer.cc model/safetensors.cc ops/rope.cc util/memory.cc"

for target in "${targets[@]}"; do
  corpus="$out/corpus-$target"
  mkdir -p "$corpus"
  case "$target" in
    load | encode) dir=tokenizer; srcs=$tokenizer_srcs ;;
    plan) dir=model; srcs="model/plan.cc attention/span.cc ops/rope.cc" ;;
    config) dir=model; srcs="model/config.cc model/safetensors.cc ops/rope.cc util/memory.cc" ;;
    gguf) dir=model; srcs="$gguf_srcs $tokenizer_srcs" ;;
    chat_template) dir=serve; srcs="serve/chat_template.cc serve/jinja_parse.cc serve/jinja_eval.cc $gguf_srcs $tokenizer_srcs" ;;
    request) dir=serve; srcs="serve/openai_api.cc serve/tool_calls.cc serve/finish_reason.cc serve/chat_template.cc serve/jinja_parse.cc serve/jinja_eval.cc $gguf_srcs $tokenizer_srcs" ;;
    *) echo "fuzz: unknown target $target" >&2; exit 2 ;;
  esac
  cp -f "$dir/fuzz/seeds/$target"/* "$corpus/" 2>/dev/null || true
  [ "$target" = load ] && cp -f "$stories/tokenizer.json" "$corpus/stories260K.json" 2>/dev/null || true
  [ "$target" = config ] && cp -f "$stories/config.json" "$corpus/stories260K.json" 2>/dev/null || true
  # shellcheck disable=SC2046
  "${launcher[@]}" "$cxx" "${flags[@]}" -fsanitize=fuzzer "$dir/fuzz/${target}_fuzz.cc" $(compile $srcs) "${libs[@]}" \
    -o "$out/${target}_fuzz"
  echo "fuzz: running ${target}_fuzz for ${seconds}s"
  if ! (cd "$out" && ASAN_OPTIONS=detect_leaks=1 "./${target}_fuzz" \
          -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=65536 "corpus-${target}" \
          >"${target}.log" 2>&1); then
    tail -60 "$out/${target}.log"
    echo "fuzz: ${target}_fuzz failed; the input is in $out/ (crash-* or timeout-*)" >&2
    exit 1
  fi
  grep -E "^Done|runs in" "$out/${target}.log" | tail -1
done
echo "fuzz: no crashes"
