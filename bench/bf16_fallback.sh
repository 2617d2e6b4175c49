#!/usr/bin/env bash
# bf16 weights where oneDNN has no bf16 product (AVX2 CPUs; on a bigger
# CPU this script caps oneDNN and Highway to AVX2 to get there):
#   1. swan's own bf16 GEMM against oneDNN's fp32 GEMM, same shapes, same run
#      (bench/gemm_bench: 512-token prefill products of swan-7m and Llama 3.2
#      1B, training's products, 2048^3);
#   2. swan-7m (bf16, the default model) against its f32 copy: prefill of
#      512 tokens and decode of 128, ROUNDS interleaved rounds;
#   3. the same on random weights in Qwen2.5-0.5B's shape (--weights bf16
#      against f32), which, unlike swan-7m, does not fit in the caches.
# Targets: prefill bf16 >= 0.8x f32; decode bf16 >= 1.5x f32.
#
#   bench/bf16_fallback.sh [BUILD_DIR] [ROUNDS]     (default build, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ROUNDS=${2:-3}
SWAN=$BUILD/swan
export DNNL_MAX_CPU_ISA=AVX2 SWAN_SIMD_TARGET=AVX2
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-}
[ -n "$OMP_WAIT_POLICY" ] || unset OMP_WAIT_POLICY
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$SWAN" --version | sed 's/^/  /'

echo "== 1. GEMM: swan bf16 (path 1) vs oneDNN fp32 (path 0), GFLOP/s"
"$BUILD/bench/gemm_bench" --benchmark_filter='path:[01]' --benchmark_min_time=0.3 2>/dev/null |
  awk '/GFLOPS=/ { split($1, p, "/"); key = p[2] " " p[3] " " p[4] " " p[6];
                   sub(/.*GFLOPS=/, "", $NF); sub(/G\/s/, "", $NF);
                   if (p[5] == "path:0") f32[key] = $NF; else { bf[key] = $NF; order[++n] = key } }
       END { printf "  %-36s %9s %9s %7s\n", "shape", "fp32", "swan bf16", "ratio";
             for (i = 1; i <= n; ++i) { k = order[i];
               printf "  %-36s %9.1f %9.1f %7.2f\n", k, f32[k], bf[k], bf[k] / f32[k] } }'

# "pp tg" of one `swan bench` row (plan model, depth 0).
pp_tg() { "$SWAN" bench "$@" -d 0 --kv f32 2>/dev/null | awk '$2 == "0" { print $3, $5; exit }'; }
"$SWAN" convert -m models/swan-7m --out "$tmp/swan-7m-f32" --dtype f32 >/dev/null
for shape in swan-7m qwen2.5-0.5b; do
  if [ "$shape" = swan-7m ]; then
    echo "== 2. swan-7m, prefill 512 / decode 128 tok/s, bf16 vs f32 copy"
    bf=(-m models/swan-7m -p 512 -n 128); f32=(-m "$tmp/swan-7m-f32" -p 512 -n 128)
  else
    echo "== 3. Qwen2.5-0.5B shape (random weights), prefill 512 / decode 16 tok/s, bf16 vs f32"
    bf=(--synthetic qwen2.5-0.5b --weights bf16 -p 512 -n 16); f32=(--synthetic qwen2.5-0.5b --weights f32 -p 512 -n 16)
  fi
  for r in $(seq "$ROUNDS"); do
    read -r bpp btg <<<"$(pp_tg "${bf[@]}")"
    read -r fpp ftg <<<"$(pp_tg "${f32[@]}")"
    awk -v r="$r" -v bpp="$bpp" -v btg="$btg" -v fpp="$fpp" -v ftg="$ftg" 'BEGIN {
      printf "  round %d: prefill bf16 %8.1f f32 %8.1f (%.2fx) | decode bf16 %8.1f f32 %8.1f (%.2fx)\n",
             r, bpp, fpp, bpp / fpp, btg, ftg, btg / ftg }'
  done
done
