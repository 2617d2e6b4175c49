#!/usr/bin/env bash
# Do swan and llama.cpp continue a prompt the same way on the same GGUF file?
# Greedy ids of both, side by side, on:
#   - the side by side's random-weight Llama and Gemma 3 files (f16, Q8_0,
#     Q4_0; bench/llama_cpp_side_by_side.sh --prepare-only writes them and
#     builds llama.cpp), prompts of random ids;
#   - swan's own trained Python model (models/swan-7m-full; prompts from
#     argparse.py where /usr/lib/python3.11 has it) with Llama 3.1's
#     RoPE scaling put into its config.json (llama3, factor 8, original
#     context 64, so that a prompt of a few hundred tokens reaches the scaled
#     frequencies), written by `swan convert` with the rope_freqs tensor
#     llama.cpp reads, and the same model without the scaling: where the two
#     files' llama.cpp ids differ the factors matter, so agreement on the
#     scaled file shows swan applies them as llama.cpp does;
#   - swan's 3:1 hybrid (models/swan-7m: window 256 on 6 of 8 layers),
#     which `swan convert` writes as llama.cpp's granite_swa (a window flag
#     per layer; its 4 sink tokens have no place in GGUF, so both programs
#     run the file without them), and the ids swan gives the same file
#     under full attention: where those differ from llama.cpp's, the
#     windows matter, so agreement shows llama.cpp runs the hybrid as swan;
#   - the retrieval lab's NoPE hybrid (models/lab/hybrid-nope: a window-64
#     layer, then a full layer without RoPE, which granite_swa's per-layer
#     RoPE flags hold), against swan's ids with RoPE on both layers.
# llama.cpp's side is bench/llama_cpp_greedy.cc, compiled here against the
# llama.cpp the side by side built. Not a test (it needs that build); it
# prints one markdown table: per file and prompt length, how many of the
# first N ids agree, where they first differ, and by how much llama.cpp's
# pick there led its runner-up, against the median lead of its N picks (in
# logits: a near tie is rounding's to break).
#
# usage: bench/llama_cpp_agreement.sh [--isa native|avx2] [-n N] [--prompts LIST]
#   -n N           ids to continue each prompt by (default 32)
#   --prompts LIST prompt lengths (default 16,400,1200)
#   --isa          as the side by side's option (default native)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
n=32 prompts=16,400,1200 isa=native
while [ $# -gt 0 ]; do
  case "$1" in
    -n) n=$2; shift 2 ;;
    --prompts) prompts=$2; shift 2 ;;
    --isa) isa=$2; shift 2 ;;
    -h|--help) sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option $1 (--help)" >&2; exit 2 ;;
  esac
done
swan=$repo/build/swan
[ -x "$swan" ] || { echo "no $swan: build swan first" >&2; exit 1; }
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

bash bench/llama_cpp_side_by_side.sh --prepare-only --isa "$isa" --types f16,q8_0,q4_0
llama_build=$repo/.cache/llama.cpp/$([ "$isa" = avx2 ] && echo build-avx2 || echo build)
src=$repo/.cache/llama.cpp/src
greedy=$llama_build/llama_cpp_greedy
swan_env=()
[ "$isa" = avx2 ] && swan_env=(SWAN_SIMD_TARGET=AVX2 DNNL_MAX_CPU_ISA=AVX2)
if [ ! -x "$greedy" ] || [ bench/llama_cpp_greedy.cc -nt "$greedy" ]; then
  log "compiling llama_cpp_greedy against $llama_build"
  g++ -std=c++17 -O2 -I"$src/include" -I"$src/ggml/include" bench/llama_cpp_greedy.cc -o "$greedy" \
    "$llama_build/src/libllama.a" "$llama_build/ggml/src/libggml.a" "$llama_build/ggml/src/libggml-cpu.a" \
    "$llama_build/ggml/src/libggml-base.a" -fopenmp -lpthread -ldl -lm
fi

# swan's model with llama3 scaling, and without, as GGUF
work=$repo/.cache/agreement
mkdir -p "$work"
for scaled in plain llama3; do
  dir=$work/swan-7m-full-$scaled
  if [ ! -f "$dir/config.json" ] || [ models/swan-7m-full/config.json -nt "$dir/config.json" ]; then
    rm -rf "$dir" && cp -r models/swan-7m-full "$dir"
    [ "$scaled" = llama3 ] && node -e '
      const fs = require("fs"), f = process.argv[1], c = JSON.parse(fs.readFileSync(f, "utf8"));
      c.rope_scaling = {rope_type: "llama3", factor: 8.0, low_freq_factor: 1.0, high_freq_factor: 4.0,
                        original_max_position_embeddings: 64};
      fs.writeFileSync(f, JSON.stringify(c, null, 2) + "\n");' "$dir/config.json"
  fi
  for t in f32 q8_0; do
    [ -f "$work/swan-7m-$scaled-$t.gguf" ] || "$swan" convert -m "$dir" --out "$work/swan-7m-$scaled-$t.gguf" --dtype "$t" --force >&2
  done
done

for t in f32 q8_0; do
  [ -f "$work/swan-7m-hybrid-$t.gguf" ] || "$swan" convert -m models/swan-7m --out "$work/swan-7m-hybrid-$t.gguf" --dtype "$t" --force >&2
  [ -f "$work/lab-nope-$t.gguf" ] || "$swan" convert -m models/lab/hybrid-nope --out "$work/lab-nope-$t.gguf" --dtype "$t" --force >&2
done
# the plan each file's ids are also taken under, to show what the file's own
# plan changes: the hybrid under full attention, the NoPE one with RoPE on
declare -A other_plan=([swan-7m-hybrid]=full [lab-nope]=full,layer0:swa:64)

# swan's models continue Python: their prompts are the start of argparse.py
# (where the machine has Python 3.11's library), the others random ids
python_ids=""
text=/usr/lib/python3.11/argparse.py
[ -f "$text" ] && python_ids=$("$swan" tokenize -t models/swan-7m-full --text "$(head -c 20000 "$text")")
# a prompt of `len` ids below `vocab`, the same for both programs
prompt_ids() { node -e '
  let s = 12345; const [len, vocab] = process.argv.slice(1).map(Number), ids = [];
  for (let i = 0; i < len; ++i) { s = (s * 1103515245 + 12345) % 2147483648; ids.push(s % vocab); }
  console.log(ids.join(","));' "$1" "$2"; }
vocab_of() { "$swan" inspect -m "$1" 2>/dev/null | sed -n 's/.*vocab[ :=]*\([0-9][0-9]*\).*/\1/p' | head -1; }
context_of() { "$swan" inspect -m "$1" 2>/dev/null | sed -n 's/^positions *max \([0-9][0-9]*\).*/\1/p' | head -1; }

out=$work/table-$(date +%Y%m%d-%H%M).md
{
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p'), ISA $isa; swan $(git rev-parse --short HEAD), llama.cpp $(git -C "$src" rev-parse --short HEAD); greedy, $n ids per prompt"
  echo
  echo "| file | prompt | ids agreeing | first difference (llama.cpp / swan) | llama.cpp's margin there | its median margin |"
  echo "| --- | ---: | ---: | --- | ---: | ---: |"
} | tee "$out"
IFS=, read -ra lengths <<<"$prompts"
files=()
for m in llama gemma3; do for t in f16 q8_0 q4_0; do files+=("$repo/.cache/side_by_side/gguf/$m-$t.gguf"); done; done
files+=("$work/swan-7m-plain-f32.gguf" "$work/swan-7m-llama3-f32.gguf" "$work/swan-7m-plain-q8_0.gguf" "$work/swan-7m-llama3-q8_0.gguf")
files+=("$work/swan-7m-hybrid-f32.gguf" "$work/swan-7m-hybrid-q8_0.gguf" "$work/lab-nope-f32.gguf" "$work/lab-nope-q8_0.gguf")
declare -A llama_ids swan_other_ids
# swan's greedy ids: file, prompt ids, then swan's options
swan_ids() { env "${swan_env[@]}" "$swan" generate -m "$1" --ids "$2" -n "$n" --temp 0 -t 2 "${@:3}" 2>/dev/null |
  sed -n 's/.* | //p' | tr ' ' ','; }  # "prompt | id id ...": the ids after the bar
for f in "${files[@]}"; do
  vocab=$(vocab_of "$f") context=$(context_of "$f")
  [ -n "$vocab" ] || { echo "no vocabulary size from swan inspect -m $f" >&2; exit 1; }
  name=$(basename "$f" .gguf)
  for len in "${lengths[@]}"; do
    [ -n "$context" ] && [ $((len + n)) -gt "$context" ] && continue  # past what the model was trained for
    if [[ "$f" == */swan-7m-* && -n "$python_ids" ]]; then
      ids=$(echo "$python_ids" | cut -d, -f"1-$len")
    else
      ids=$(prompt_ids "$len" "$vocab")
    fi
    both=$("$greedy" "$f" "$ids" "$n" 2)  # ids, then each pick's margin over the runner-up
    theirs=$(echo "$both" | sed -n 1p) margins=$(echo "$both" | sed -n 2p)
    ours=$(swan_ids "$f" "$ids")
    other=${other_plan[${name%-*}]:-}
    [ -n "$other" ] && swan_other_ids[$(basename "$f"):$len]=$(swan_ids "$f" "$ids" --attn "$other")
    llama_ids[$(basename "$f"):$len]=$theirs
    same=$(node -e '
      const [a, b, m] = process.argv.slice(1).map((s) => s.trim().split(","));
      let k = 0; while (k < a.length && a[k] === b[k]) ++k;
      const sorted = m.map(Number).sort((x, y) => x - y), median = sorted[sorted.length >> 1].toPrecision(3);
      console.log(k === a.length && a.length === b.length ? `${k} of ${a.length} | - | - | ${median}`
                  : `${k} of ${a.length} | ${a[k]} / ${b[k]} | ${m[k]} | ${median}`);' "$theirs" "$ours" "$margins")
    echo "| $(basename "$f") | $len | $same |" | tee -a "$out"
  done
done
echo
# contrast A TABLE_A B TABLE_B ALIKE APART: per type and prompt length, one
# line saying whether the ids of file A in TABLE_A (llama_ids or
# swan_other_ids) match those of B in TABLE_B; TYPE and LEN in the file
# names and lines stand for the type and length
contrast() {
  local -n first=$2 second=$4
  for t in f32 q8_0; do for len in "${lengths[@]}"; do
    [ -n "${first[${1//TYPE/$t}:$len]:-}" ] || continue  # a prompt past the model's context
    local a=${first[${1//TYPE/$t}:$len]} b=${second[${3//TYPE/$t}:$len]}
    if [ "$a" = "$b" ]; then echo "$5"; else echo "$6"; fi | sed "s/TYPE/$t/; s/LEN/$len/"
  done; done
}
contrast swan-7m-plain-TYPE.gguf llama_ids swan-7m-llama3-TYPE.gguf llama_ids \
  "swan-7m TYPE, prompt LEN: llama.cpp continues the scaled and the plain file alike (the factors do not show here)" \
  "swan-7m TYPE, prompt LEN: llama.cpp continues the scaled and the plain file differently (the factors show)" |
  tee -a "$out"
contrast swan-7m-hybrid-TYPE.gguf llama_ids swan-7m-hybrid-TYPE.gguf swan_other_ids \
  "swan-7m hybrid TYPE, prompt LEN: llama.cpp's ids are also swan's under full attention (the windows do not show here)" \
  "swan-7m hybrid TYPE, prompt LEN: llama.cpp's ids differ from swan's under full attention (the windows show)" |
  tee -a "$out"
contrast lab-nope-TYPE.gguf llama_ids lab-nope-TYPE.gguf swan_other_ids \
  "lab NoPE hybrid TYPE, prompt LEN: llama.cpp's ids are also swan's with RoPE on every layer (NoPE does not show here)" \
  "lab NoPE hybrid TYPE, prompt LEN: llama.cpp's ids differ from swan's with RoPE on every layer (NoPE shows)" |
  tee -a "$out"
log "table written to $out"
