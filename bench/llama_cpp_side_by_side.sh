#!/usr/bin/env bash
# swan against llama.cpp on the same GGUF file: prefill (pp) and decode (tg)
# tokens/s per weight type and depth, and each process's peak RSS.
#
# 1. Builds llama.cpp's llama-bench (CPU backend only, Release, native ISA)
#    from the sources node-llama-cpp@3.21.1 ships in its npm package
#    (llama/gitRelease.bundle, a git bundle of llama.cpp), under
#    .cache/llama.cpp/. The npm registry is the only network it needs.
# 2. Writes random-weight models once (scripts/random_model.mjs), a Llama
#    (8 layers, hidden 512, 8 heads / 2 KV heads of 64, MLP 1536, vocab
#    32000, untied: 57M parameters) and a Gemma 3 hybrid (12 layers, the same
#    widths, tied: 3 window-512 layers per global layer, 53M) (with --models
#    hybrid also the Llama as a 3:1 hybrid of window 1024, as swan trains
#    them, which `swan convert` writes as llama.cpp's granite_swa), and
#    converts each to GGUF per type with `swan convert` (a model without a
#    tokenizer gets llama.cpp's tokenizer "none"); both programs read that
#    one file. The models of the sizes people run, llama1b (Llama 3.2 1B's
#    shape, 1.24B parameters) and llama8b (Llama 3.1 8B's, 8.03B; its f16
#    file is 16 GB), are written by llama.cpp's own tools instead: the f16
#    file by its gguf-py (bench/write_llama_gguf.py), every other type by
#    its llama-quantize from that (q8_0, q4_0, q4_k_m, ...).
# 3. Per model, type and depth, runs llama-bench and `swan bench` back to
#    back (their order alternating), each with the same threads, prompt,
#    decode length and repeats, under /usr/bin/time. For the peak RSS, one
#    more run of each doing the same job: a prompt of depth + p tokens, then
#    n decoded (`llama-bench -pg`, `swan generate --ids`; not with
#    --no-rss-runs).
# 4. Prints one markdown table (and writes it to --out): pp and tg tokens/s
#    of both with the ratio swan / llama.cpp, swan's decode as a share of its
#    roofline in each round (swan bench's: the bytes a token reads over the
#    rate of a plain read of the weights between the decode's tokens), both
#    peak RSS figures, and the
#    cores other programs kept busy meanwhile (0 on an idle machine), under a
#    line with the date, CPU, ISA and both commits; below it, what the cores
#    can multiply at best as swan runs (build/bench/peak_bench: float32 FMAs,
#    and AVX2's exact 8-bit products where swan's Q8_0 kernel is the AVX2
#    one) and, per f16 and Q8_0 row, the share of the cores' time each
#    program's prefill and 1.5x llama.cpp's would take at those bounds.
#
# usage: bench/llama_cpp_side_by_side.sh [options]
#   --models LIST    llama,gemma3 (default both), hybrid, llama1b, llama8b
#   --types LIST     f16,q8_0,q4_0 (default all three), any other type `swan
#                    convert --dtype` writes (q5_0, q4_k, ...), or one of
#                    llama.cpp's mixtures (q4_k_m, q3_k_m, q5_k_s, ...):
#                    llama.cpp's llama-quantize makes it from the f16 file
#                    (q4_k_m: Q4_K and Q6_K, which swan holds as they are;
#                    q3_k_m: Q3_K, which swan holds as Q6_K, Q4_K, Q5_K)
#   --depths LIST    tokens already in the cache (default 0,4096,16384,32768)
#   --reps N         timed repeats per figure, after a warm-up (default 3)
#   -p N / -n N      prompt tokens timed as prefill / tokens timed as decode
#                    (default 512 / 128, llama-bench's defaults)
#   --threads N      threads for both programs (default 2)
#   --swan PATH      the swan program (default build/swan)
#   --out FILE       where the table goes as well (default
#                    .cache/side_by_side/table-DATE.md)
#   --adapt-threads  let swan pick threads by idle cores per step (swan's
#                    default); without it both use exactly --threads
#   --rounds K       run every pair K times, rounds outermost; the table gives
#                    the median over rounds of each figure and of the ratio of
#                    each round's pair, with the ratio's range (default 1)
#   --wait-idle S    before each run, wait up to S seconds for the other
#                    programs to leave the cores (default 0: don't)
#   --prepare-only   fetch, build, write the models, then stop
#   --no-rss-runs    skip the extra runs for the peak RSS (at a depth each is
#                    a real prefill of depth + p tokens in both programs, a
#                    quarter of an hour on an 8B file at 8 tokens/s): the RSS
#                    columns then give the timed runs' peaks (llama-bench's
#                    with its saved copy of the KV cache, swan bench's with
#                    its probes)
#   --fresh-models   write the models and GGUF files again
#   --isa avx2       measure both programs as they run on an AVX2-only CPU
#                    (Zen 3, Haswell): llama.cpp built without GGML_NATIVE
#                    (AVX2, FMA, F16C, BMI2; no AVX-512, no AVX-VNNI), under
#                    .cache/llama.cpp/build-avx2/, and swan with
#                    SWAN_SIMD_TARGET=AVX2 DNNL_MAX_CPU_ISA=AVX2. The cores
#                    stay the machine's: a proxy for such a CPU, not one.
#
# Not a test: absolute figures move with the machine's load, so compare the
# ratios of back-to-back runs. Figures are medians of the repeats for both
# programs (llama-bench's per-run samples; swan bench's own median).
# Differences in method that remain: llama-bench fills the depth with a real
# prefill, swan bench with random K/V rows (the timed work is the same);
# both decode at depth .. depth+n in a cache of their own (swan bench
# before 2026-12-06: after its prompt, at depth+p .. depth+p+n); KV is f16
# in llama.cpp and bf16 in swan (both 2 bytes). Under contention (busy > 0) the ratios say as much about how each
# program's threads wait as about its kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

models=llama,gemma3 types=f16,q8_0,q4_0 depths=0,4096,16384,32768 reps=3
prompt=512 gen=128 threads=2 swan=build/swan out="" adapt=0 prepare_only=0 fresh=0 wait_idle=0 rounds=1 isa_cap=native rss_runs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --models) models=$2; shift ;;
    --types) types=$2; shift ;;
    --depths) depths=$2; shift ;;
    --reps) reps=$2; shift ;;
    -p) prompt=$2; shift ;;
    -n) gen=$2; shift ;;
    --threads) threads=$2; shift ;;
    --swan) swan=$2; shift ;;
    --out) out=$2; shift ;;
    --adapt-threads) adapt=1 ;;
    --wait-idle) wait_idle=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --prepare-only) prepare_only=1 ;;
    --fresh-models) fresh=1 ;;
    --no-rss-runs) rss_runs=0 ;;
    --isa) isa_cap=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option $1 (--help lists them)" >&2; exit 2 ;;
  esac
  shift
done
# The llama.cpp build and swan's environment per ISA.
case "$isa_cap" in
  native) llama_build=build ggml_isa=(-DGGML_NATIVE=ON) swan_isa_env=() ;;
  avx2)
    grep -qw avx2 /proc/cpuinfo || { echo "--isa avx2: this CPU has no AVX2" >&2; exit 2; }
    llama_build=build-avx2 ggml_isa=(-DGGML_NATIVE=OFF -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF)
    swan_isa_env=(SWAN_SIMD_TARGET=AVX2 DNNL_MAX_CPU_ISA=AVX2) ;;
  *) echo "--isa: native or avx2, not $isa_cap" >&2; exit 2 ;;
esac

npm_pkg=node-llama-cpp@3.21.1
llama_dir=$repo/.cache/llama.cpp
work=$repo/.cache/side_by_side
mkdir -p "$llama_dir" "$work/models" "$work/gguf" "$work/runs"
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# --- 1. llama.cpp from the npm package's bundle -----------------------------
tarball=$llama_dir/node-llama-cpp-3.21.1.tgz
if [ ! -f "$tarball" ]; then
  log "fetching $npm_pkg from the npm registry"
  (cd "$llama_dir" && npm pack --silent "$npm_pkg" >/dev/null)
fi
bundle=$llama_dir/package/llama/gitRelease.bundle
if [ ! -f "$bundle" ]; then
  tar -xzf "$tarball" -C "$llama_dir" package/llama/gitRelease.bundle package/llama/binariesGithubRelease.json
fi
if [ ! -d "$llama_dir/src/.git" ]; then
  log "cloning llama.cpp from the bundle"
  git -c advice.detachedHead=false clone -q "$bundle" "$llama_dir/src"
fi
llama_commit=$(git -C "$llama_dir/src" rev-parse HEAD)
llama_release=$(sed -n 's/.*"release": *"\([^"]*\)".*/\1/p' "$llama_dir/package/llama/binariesGithubRelease.json")
llama_bench=$llama_dir/$llama_build/bin/llama-bench
llama_quantize=$llama_dir/$llama_build/bin/llama-quantize
if [ ! -x "$llama_bench" ] || [ ! -x "$llama_quantize" ]; then
  # CPU only, no network at build or run time: no OpenSSL (HTTPS model
  # downloads), no web UI, no server, tests or examples; static, so the
  # binary needs nothing from the build tree. (This llama.cpp has no
  # LLAMA_CURL any more; LLAMA_OPENSSL replaced it.)
  log "building llama-bench and llama-quantize ($llama_commit); this takes a while on 2 cores"
  start=$(date +%s)
  nice -n 10 cmake -S "$llama_dir/src" -B "$llama_dir/$llama_build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    "${ggml_isa[@]}" -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF \
    -DGGML_OPENMP=ON -DGGML_CCACHE=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF >"$llama_dir/$llama_build.cmake.log" 2>&1 ||
    { tail -20 "$llama_dir/$llama_build.cmake.log" >&2; exit 1; }
  nice -n 10 cmake --build "$llama_dir/$llama_build" --target llama-bench llama-quantize -j 2 \
    >"$llama_dir/$llama_build.log" 2>&1 || { tail -20 "$llama_dir/$llama_build.log" >&2; exit 1; }
  log "llama-bench and llama-quantize built in $(( $(date +%s) - start )) s"
fi

# --- 2. models, written once --------------------------------------------------
[ -x "$swan" ] || { echo "no swan program at $swan (build it first, or give --swan PATH)" >&2; exit 1; }
swan=$(realpath "$swan")
model_args() {
  case "$1" in
    llama) echo "--arch LlamaForCausalLM --layers 8 --hidden 512 --heads 8 --kv-heads 2 --inter 1536 --vocab 32000 --max-pos 32768" ;;
    gemma3) echo "--arch Gemma3ForCausalLM --layers 12 --hidden 512 --heads 8 --kv-heads 2 --inter 1536 --vocab 32000 --tied --sliding-window 512 --pattern 4" ;;
    hybrid) echo "--arch LlamaForCausalLM --layers 8 --hidden 512 --heads 8 --kv-heads 2 --inter 1536 --vocab 32000 --max-pos 32768 --sliding-window 1024 --pattern 4" ;;
    llama1b) echo "--shape llama3.2-1b" ;;  # llama.cpp's gguf-py writes these
    llama8b) echo "--shape llama3.1-8b" ;;
    *) echo "unknown model $1 (llama, gemma3, hybrid, llama1b, llama8b)" >&2; return 1 ;;
  esac
}

# gguf-py needs numpy: the first Python that has it (setup.sh installs
# Debian's python3-numpy; another python3 may come first on PATH).
numpy_python=""
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import numpy' 2>/dev/null; then numpy_python=$py; break; fi
done
IFS=, read -ra model_list <<<"$models"
IFS=, read -ra type_list <<<"$types"
IFS=, read -ra depth_list <<<"$depths"
for m in "${model_list[@]}"; do
  args=$(model_args "$m")
  dir=$work/models/$m
  # A model written with other arguments (or --fresh-models) is written again.
  by_llama_cpp=0
  [[ "$args" == --shape* ]] && by_llama_cpp=1
  if [ "$by_llama_cpp" = 1 ] && [ -z "$numpy_python" ]; then
    echo "$m: llama.cpp's gguf-py needs numpy (bash scripts/setup.sh installs it)" >&2
    exit 1
  fi
  # gguf-py's f16 file is the source of every type: written again when a
  # type is missing and it was deleted (an 8B one takes 16 GB).
  source_gone=0
  if [ "$by_llama_cpp" = 1 ] && [ ! -f "$work/gguf/$m-f16.gguf" ]; then
    for t in "${type_list[@]}"; do [ -f "$work/gguf/$m-$t.gguf" ] || source_gone=1; done
  fi
  if [ "$fresh" = 1 ] || [ "$(cat "$dir/.args" 2>/dev/null)" != "$args" ]; then
    rm -rf "$dir" "$work/gguf/$m"-*.gguf
  fi
  if [ "$source_gone" = 1 ] || [ ! -f "$dir/.args" ]; then
    log "writing the $m model"
    mkdir -p "$dir"
    if [ "$by_llama_cpp" = 1 ]; then
      # shellcheck disable=SC2086  # the arguments are words
      "$numpy_python" bench/write_llama_gguf.py --gguf-py "$llama_dir/src/gguf-py" --out "$work/gguf/$m-f16.gguf" $args >&2
    else
      # shellcheck disable=SC2086  # the arguments are words
      node scripts/random_model.mjs --out "$dir" $args >&2
    fi
    echo "$args" >"$dir/.args"
  fi
  # llama.cpp's mixtures (q4_k_m, q3_k_m, ...) come from the f16 file, so that is written first.
  for t in $(printf '%s\n' "${type_list[@]}" | sed -E 's/^(q[2-6]_k_[sml])$/f16\n\1/'); do
    f=$work/gguf/$m-$t.gguf
    [ -f "$f" ] && continue
    [ "$t" = f16 ] && [ "$by_llama_cpp" = 1 ] && continue  # written above when a type needs it
    log "converting $m to $t GGUF"
    if [[ "$t" =~ ^q[2-6]_k_[sml]$ ]] || [ "$by_llama_cpp" = 1 ]; then
      "$llama_quantize" "$work/gguf/$m-f16.gguf" "$f" "${t^^}" >"$f.log" 2>&1 || { tail -5 "$f.log" >&2; exit 1; }
      continue
    fi
    # No tokenizer.json in a random model: swan writes llama.cpp's tokenizer
    # "none" with the vocabulary size, and both programs run on token ids.
    "$swan" convert -m "$dir" --out "$f" --dtype "$t" --force >&2
  done
done
[ "$prepare_only" = 1 ] && { log "prepared: $llama_bench and $work/gguf"; exit 0; }

# --- 3. the runs, interleaved -------------------------------------------------
have_time=1
if [ ! -x /usr/bin/time ]; then have_time=0; log "no /usr/bin/time: no peak RSS of llama.cpp, swan's own"; fi
tck=$(getconf CLK_TCK)
# CPU ticks all cores spent busy so far (user, nice, system, irq, softirq, steal).
busy_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat; }
# Runs a command with its stdout to $1 and stderr to $1.err; writes $1.time
# ("elapsed user system maxrss_KiB", from /usr/bin/time) and $1.load (busy
# ticks before and after, ticks per second), from which the table gives the
# cores other programs kept busy meanwhile.
measured() {
  local outfile=$1; shift
  local b0 rc=0
  b0=$(busy_ticks)
  if [ "$have_time" = 1 ]; then
    /usr/bin/time -f '%e %U %S %M' -o "$outfile.time" "$@" >"$outfile" 2>"$outfile.err" || rc=$?
  else
    "$@" >"$outfile" 2>"$outfile.err" || rc=$?
  fi
  echo "$b0 $(busy_ticks) $tck" >"$outfile.load"
  return "$rc"
}
# With --wait-idle S: waits up to S seconds for the other programs to leave
# the cores (under a quarter of a core busy over 2 s), as both programs'
# speed under contention depends on how their threads wait.
wait_idle() {
  [ "$wait_idle" -gt 0 ] || return 0
  local deadline=$(( $(date +%s) + wait_idle )) b0 b1
  while [ "$(date +%s)" -lt "$deadline" ]; do
    b0=$(busy_ticks); sleep 2; b1=$(busy_ticks)
    [ $(( (b1 - b0) * 4 )) -lt $(( 2 * tck )) ] && return 0
  done
  log "  the machine stayed busy for ${wait_idle} s; running anyway"
}
# A prompt of n token ids for swan generate, "3,3,...": short enough that
# 60K of them fit in one argument.
ids() { local s; s=$(printf '3,%.0s' $(seq "$1")); echo "${s%,}"; }
# swan's commit as the runs start (the table comes later)
# The checkout's commit describes the program only if the program is newer
# than the commit (a copy kept from an older build is not).
swan_commit=$(git rev-parse --short=12 HEAD)
git diff --quiet HEAD -- 2>/dev/null || swan_commit="$swan_commit (with uncommitted changes)"
if [ "$(stat -c %Y "$swan")" -lt "$(git log -1 --format=%ct HEAD)" ]; then
  swan_commit="program built $(date -u -d "@$(stat -c %Y "$swan")" '+%H:%M UTC'), before $swan_commit"
fi
stamp=$(date -u +%Y%m%d-%H%M%S)
run_dir=$work/runs/$stamp
mkdir -p "$run_dir"
swan_env=(env SWAN_ADAPT_THREADS=0 "${swan_isa_env[@]}")
[ "$adapt" = 1 ] && swan_env=(env "${swan_isa_env[@]}")
i=0
for round in $(seq "$rounds"); do
  for m in "${model_list[@]}"; do
    for t in "${type_list[@]}"; do
      f=$work/gguf/$m-$t.gguf
      for d in "${depth_list[@]}"; do
        base=$run_dir/$m-$t-d$d
        run_llama() {
          wait_idle
          measured "$base.llama.r$round.json" "$llama_bench" -m "$f" -t "$threads" -fa on -p "$prompt" -n "$gen" \
            -d "$d" -r "$reps" -o json || log "  llama-bench failed on $f (see $base.llama.r$round.json.err)"
        }
        run_swan() {
          wait_idle
          measured "$base.swan.r$round.json" "${swan_env[@]}" "$swan" bench -m "$f" -t "$threads" -p "$prompt" \
            -n "$gen" -d "$d" -r "$reps" --json || log "  swan bench failed on $f (see $base.swan.r$round.json.err)"
        }
        log "round $round/$rounds: $m $t depth $d"
        # Alternating which goes first spreads a drift in the machine's load.
        if [ $((i % 2)) = 0 ]; then run_llama; run_swan; else run_swan; run_llama; fi
        i=$((i + 1))
        # Peak RSS from one more run of each doing the same job, once: a
        # prompt of depth + p tokens, then n decoded (swan bench's peak
        # includes its bandwidth and GEMM probes, tens of MiB, more than a
        # small model; llama-bench's at a depth holds a saved copy of the
        # KV cache, to restore it between repeats). swan generate's KV is f32
        # unless told: bf16, as swan bench's, the width of llama.cpp's f16.
        if [ "$round" = 1 ] && [ "$have_time" = 1 ] && [ "$rss_runs" = 1 ]; then
          if [ $((d + prompt)) -le 60000 ]; then
            measured "$base.swan_rss.txt" "${swan_env[@]}" "$swan" generate -m "$f" -t "$threads" --kv bf16 \
              --ids "$(ids $((d + prompt)))" -n "$gen" -c $((d + prompt + gen)) ||
              log "  swan generate failed on $f (see $base.swan_rss.txt.err)"
          fi
          measured "$base.llama_rss.json" "$llama_bench" -m "$f" -t "$threads" -fa on -p 0 -n 0 \
            -pg $((d + prompt)),"$gen" -r 1 --no-warmup -o json ||
            log "  llama-bench failed on $f (see $base.llama_rss.json.err)"
        fi
      done
    done
  done
done

# What the cores can multiply at best as swan runs (capped or not,
# bench/peak_bench.cc): float32 FMAs, which both programs multiply f16
# weights with, and AVX2's exact 8-bit products (the sign trick), which both
# multiply Q8_0 with below AVX-512 VNNI. No prefill of those beats them.
peak_bench=$(dirname "$swan")/bench/peak_bench
peaks=
if [ -x "$peak_bench" ]; then
  wait_idle
  peaks=$(env OMP_NUM_THREADS="$threads" "${swan_isa_env[@]}" "$peak_bench" --benchmark_filter='threads:0' \
    --benchmark_format=json 2>/dev/null | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{
      const r={};for(const b of JSON.parse(s).benchmarks){if(b.GFLOPS)r.fma=b.GFLOPS/1e9;if(b.GMACS)r.int8=b.GMACS/1e9;}
      console.log(JSON.stringify(r))})') || peaks=
fi
# The 8-bit bound applies where swan's Q8_0 kernel is the AVX2 one.
sign_trick=0
{ [ "$isa_cap" = avx2 ] || ! grep -qw avx512_vnni /proc/cpuinfo; } && sign_trick=1

# --- 4. the table ---------------------------------------------------------------
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
if grep -qw avx512f /proc/cpuinfo; then isa=AVX-512; elif grep -qw avx2 /proc/cpuinfo; then isa=AVX2; else isa="no AVX2"; fi
[ "$isa_cap" = avx2 ] && isa="$isa, both capped to AVX2 (llama.cpp built without GGML_NATIVE: AVX2 FMA F16C BMI2; swan SWAN_SIMD_TARGET=AVX2 DNNL_MAX_CPU_ISA=AVX2)"
[ -n "$out" ] || out=$work/table-$stamp.md
header="side by side, $(date -u '+%Y-%m-%d %H:%M UTC'): $cpu, $isa, $(nproc) cores, $threads threads each;"
header+=" swan $swan_commit; llama.cpp ${llama_commit:0:12} (node-llama-cpp 3.21.1, bundle $llama_release);"
header+=" pp$prompt / tg$gen tokens/s, medians of $reps runs (llama-bench -fa on; swan bench, bf16 KV"
[ "$adapt" = 1 ] && header+=", adaptive threads)" || header+=")"
if [ "$rss_runs" = 1 ]; then
  header+="; peak RSS: /usr/bin/time of one more run of each doing the same job, a prompt of depth + $prompt"
  header+=" tokens then $gen decoded (llama-bench -pg, swan generate)"
else
  header+="; peak RSS: the timed runs' (llama-bench's with its saved KV copy, swan bench's with its probes)"
fi
[ "$rounds" -gt 1 ] && header+="; medians over $rounds rounds, ratios per round's back-to-back pair (their range in brackets)"
header+="; busy: cores other programs kept busy during the two timed runs (the largest)"
# Where oneDNN has bf16 products (AVX-512 BF16, AMX) and swan is not capped,
# swan multiplies f16 weights as bf16 (ops/linear.cc): two products per
# lane and instruction, so its share can pass the float32 bound.
bf16_products=0
[ "$isa_cap" != avx2 ] && grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo && bf16_products=1
BF16_PRODUCTS=$bf16_products HEADER=$header node - "$run_dir" "$models" "$types" "$depths" "$rounds" "$prompt" \
  "$threads" "${peaks:-"{}"}" "$sign_trick" "$work/models" >"$out.tmp" <<'EOF'
const fs = require("fs");
const [dir, models, types, depths, roundsArg, promptArg, threads, peaksArg, signTrick, modelsDir] =
  process.argv.slice(2);
const rounds = Number(roundsArg), prompt = Number(promptArg);
const peaks = JSON.parse(peaksArg);  // {fma: GFLOP/s, int8: G products/s}
// A model's shape from the config.json written above, and the work a
// prefill token needs at a depth: its layers' products, and 4 x head dim
// FLOPs per key a head attends to (QK and PV; causal, a window layer its
// last W keys; window layers from layer_types, or every layer but each
// sliding_window_pattern-th (Gemma 3)).
const shape = (m) => {
  const c = read(`${modelsDir}/${m}/config.json`);
  if (!c) return null;
  const pattern = c.sliding_window_pattern || 1;  // Gemma 3: every pattern-th layer global
  const windowed = c.layer_types ? c.layer_types.map((t) => t === "sliding_attention")
                                 : Array.from({ length: c.num_hidden_layers }, (_, l) => (l + 1) % pattern !== 0);
  return { layers: c.num_hidden_layers, hidden: c.hidden_size, heads: c.num_attention_heads,
           kv: c.num_key_value_heads, hd: c.head_dim || c.hidden_size / c.num_attention_heads,
           inter: c.intermediate_size, window: c.sliding_window || 0, windowed };
};
const workPerToken = (m, depth) => {
  const s = shape(m);
  const weights = 2 * s.hidden * s.heads * s.hd + 2 * s.hidden * s.kv * s.hd + 3 * s.hidden * s.inter;
  let keys = 0;  // summed over layers, averaged over the prompt's tokens
  for (let l = 0; l < s.layers; ++l) {
    const window = s.window && s.windowed[l] ? s.window : Infinity;
    for (let i = 0; i < prompt; ++i) keys += Math.min(window, depth + i + 1) / prompt;
  }
  return { products: s.layers * weights, attention: 4 * s.heads * s.hd * keys };  // products, FLOPs
};
// The share of the cores' time a prefill at tps tokens/s takes with every
// product at its bound: f16 (bf16, f32) products as 2 FLOPs each against
// the FMA bound, Q8_0's against the 8-bit bound; attention against the FMA
// bound. null where no bound applies.
const boundShare = (m, t, depth, tps) => {
  const w = workPerToken(m, depth);
  let products = null;
  if (["f16", "bf16", "f32"].includes(t) && peaks.fma) products = 2 * w.products / (peaks.fma * 1e9);
  if (t === "q8_0" && signTrick === "1" && peaks.int8) products = w.products / (peaks.int8 * 1e9);
  if (products === null || !peaks.fma) return null;
  return tps * (products + w.attention / (peaks.fma * 1e9));
};
const needs = [];  // lines under the table: each prefill's share of the bounds
const text = (f) => { try { return fs.readFileSync(f, "utf8"); } catch { return null; } };
const read = (f) => { try { return JSON.parse(text(f)); } catch { return null; } };
// /usr/bin/time's last line: elapsed, user, system seconds, peak RSS KiB
const time = (f) => { const t = text(f); return t ? t.trim().split("\n").pop().split(" ").map(Number) : null; };
const rss = (f) => { const t = time(f); return t ? t[3] / 1024 : NaN; };
// cores other programs kept busy: all busy time less the run's own CPU time
const busy = (f) => {
  const t = time(f), l = text(f.replace(/\.time$/, ".load"));
  if (!t || !l) return NaN;
  const [b0, b1, tck] = l.trim().split(" ").map(Number);
  return Math.max(0, ((b1 - b0) / tck - t[1] - t[2]) / t[0]);
};
const median = (xs) => { const s = [...xs].sort((a, b) => a - b), n = s.length;
  return n ? (n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2) : NaN; };
const fmt = (x) => Number.isFinite(x) ? x.toFixed(x >= 100 ? 0 : 1) : "-";
const ratio = (a, b) => Number.isFinite(a) && Number.isFinite(b) && b > 0 ? (a / b).toFixed(2) + "x" : "-";
console.log(process.env.HEADER + "\n");
console.log("| model | type | depth | pp llama.cpp | pp swan | pp swan/llama | tg llama.cpp | tg swan | tg swan/llama " +
            "| tg swan, share of its roofline | RSS MiB llama.cpp | RSS MiB swan | busy |");
console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const m of models.split(","))
  for (const t of types.split(","))
    for (const d of depths.split(",")) {
      const base = `${dir}/${m}-${t}-d${d}`;
      // Per round, the two programs' runs back to back: its figures and
      // their ratios. The table gives the median over rounds of each (a
      // machine shared with other programs, or a virtual machine's host,
      // moves both programs' speed from one round to the next; the ratio of
      // one round's pair moves less), and with several rounds the range of
      // the ratio.
      const per = [];  // [rounds] {lpp, ltg, spp, stg, sroof, busy, lrss, srss}
      for (let r = 1; r <= rounds; ++r) {
        const fl = `${base}.llama.r${r}.json`, fs = `${base}.swan.r${r}.json`;
        const l = read(fl) || [], s = read(fs);
        // llama-bench: one record per test (pp with n_gen 0, tg with
        // n_prompt 0), each with its runs' tokens/s in samples_ts
        const lp = l.find((x) => x.n_prompt > 0 && x.n_gen === 0), lg = l.find((x) => x.n_gen > 0 && x.n_prompt === 0);
        const row = s && s.rows ? s.rows[0] : null;
        per.push({
          lpp: lp ? median(lp.samples_ts) : NaN, ltg: lg ? median(lg.samples_ts) : NaN,
          spp: row ? row.prefill_tokens_per_s : NaN, stg: row ? row.decode_tokens_per_s : NaN,
          sroof: row ? row.decode_fraction_of_roofline : NaN,
          busy: Math.max(busy(fl + ".time"), busy(fs + ".time")), lrss: rss(fl + ".time"),
          srss: s ? s.peak_rss_bytes / 1048576 : NaN,
        });
      }
      const med = (key) => median(per.map((p) => p[key]).filter(Number.isFinite));
      const ratios = (a, b) => per.map((p) => p[a] / p[b]).filter((x) => Number.isFinite(x) && x > 0);
      const ratioCell = (a, b) => {
        const rs = ratios(a, b);
        if (!rs.length) return "-";
        const text = median(rs).toFixed(2) + "x";
        return rs.length > 1 ? `${text} (${Math.min(...rs).toFixed(2)}-${Math.max(...rs).toFixed(2)})` : text;
      };
      const lpp = med("lpp"), ltg = med("ltg"), spp = med("spp"), stg = med("stg");
      // each round's own: its roofline's read bandwidth is measured in that run
      const shares = per.map((p) => p.sroof).filter((x) => Number.isFinite(x) && x > 0);
      const shareCell = shares.length ? shares.map((x) => (100 * x).toFixed(0) + "%").join(", ") : "-";
      let srss = rss(base + ".swan_rss.txt.time"), lrss = rss(base + ".llama_rss.json.time");
      if (!Number.isFinite(lrss)) lrss = per[0].lrss;  // with the saved KV copy
      if (!Number.isFinite(srss)) srss = per[0].srss;  // with the probes
      const others = Math.max(...per.map((p) => p.busy).filter(Number.isFinite));
      if (shape(m) && Number.isFinite(lpp) && boundShare(m, t, Number(d), lpp) !== null) {
        const at = (tps) => (100 * boundShare(m, t, Number(d), tps)).toFixed(0) + "%";
        needs.push(`${m} ${t} at depth ${d}: llama.cpp ${at(lpp)}, swan ${at(spp)}, 1.5x llama.cpp ${at(1.5 * lpp)}`);
      }
      console.log(`| ${m} | ${t} | ${d} | ${fmt(lpp)} | ${fmt(spp)} | ${ratioCell("spp", "lpp")} | ${fmt(ltg)} | ${fmt(stg)} | ` +
                  `${ratioCell("stg", "ltg")} | ${shareCell} | ${fmt(lrss)} | ${fmt(srss)} | ` +
                  `${Number.isFinite(others) ? others.toFixed(2) : "-"} |`);
    }
if (needs.length)
  console.log(`\nBounds on ${threads} threads (build/bench/peak_bench, as swan ran): float32 FMAs ` +
              `${peaks.fma.toFixed(0)} GFLOP/s` + (signTrick === "1" && peaks.int8
                ? `, AVX2's signed 8-bit products ${peaks.int8.toFixed(0)} G/s` : "") +
              ". The share of the cores' time each prefill would take with every product and the attention " +
              "(4 x head dim FLOPs per key attended) at its bound" + (process.env.BF16_PRODUCTS === "1"
                ? " (swan multiplies f16 weights as bf16 here, two products per lane and instruction, so its " +
                  "share can pass 100%)" : "") +
              ":\n\n" + needs.map((n) => "- " + n).join("\n"));
EOF
mv "$out.tmp" "$out"
cat "$out"
log "table in $out; raw outputs in $run_dir"
