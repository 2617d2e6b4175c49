#!/usr/bin/env bash
# Decode speed under contention: swan's default model (bf16) and its f32
# copy, decoding 256 tokens with `swan generate`, on an idle machine and
# while a second process keeps every core busy (one busy loop per core,
# started and stopped by this script), in interleaved rounds; the median
# of the rounds. Settings: the default (up to every core, fewer while that
# leave idle), -t N fixed (SWAN_ADAPT_THREADS=0) and -t 1.
#
#   bench/contention.sh [SWAN] [ROUNDS]     (default build/swan, 5)
#
# Targets (issue "swan runs, fast, on every x86-64 machine"): loaded >= 0.4x
# idle, and never below the 1-thread loaded figure.
set -euo pipefail
cd "$(dirname "$0")/.."
SWAN=${1:-build/swan}
ROUNDS=${2:-5}
[ -x "$SWAN" ] || { echo "no swan program at $SWAN" >&2; exit 1; }
cores=$(nproc)
tmp=$(mktemp -d)
load_pids=()
stop_load() { for p in "${load_pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; load_pids=(); }
trap 'stop_load; rm -rf "$tmp"' EXIT
start_load() {
  for _ in $(seq "$cores"); do (while :; do :; done) & load_pids+=($!); done
  sleep 0.5
}

"$SWAN" convert -m models/swan-7m --out "$tmp/swan-7m-f32" --dtype f32 >/dev/null
prompt=$'import os\nimport sys\n\n\ndef main('

# decode tok/s of one run: MODEL then extra arguments and environment
decode_tps() {
  local model=$1; shift
  env "$@" "$SWAN" generate -m "$model" -p "$prompt" -n 256 --temp 0 --ignore-eos "${SWAN_ARGS[@]}" \
    2>&1 >/dev/null | sed -n 's/.*decode [0-9]* tokens [0-9.]* s (\([0-9.]*\) tok\/s).*/\1/p'
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A results
settings=("default" "fixed-$cores" "t1")
for round in $(seq "$ROUNDS"); do
  for state in idle loaded; do
    [ "$state" = loaded ] && start_load
    for model in models/swan-7m "$tmp/swan-7m-f32"; do
      # Each round starts the settings at another one, so none always runs
      # right after the load starts or after the same neighbour.
      n=${#settings[@]}
      for k in $(seq 0 $((n - 1))); do
        setting=${settings[$(((k + round) % n))]}
        case $setting in
          default) SWAN_ARGS=(); envs=(SWAN_ADAPT_THREADS=1) ;;
          fixed-*) SWAN_ARGS=(-t "$cores"); envs=(SWAN_ADAPT_THREADS=0) ;;
          t1) SWAN_ARGS=(-t 1); envs=(SWAN_ADAPT_THREADS=1) ;;
        esac
        key="$(basename "$model") $setting $state"
        results[$key]="${results[$key]:-} $(decode_tps "$model" "${envs[@]}")"
      done
    done
    stop_load
  done
  echo "round $round of $ROUNDS done" >&2
done

echo "decode tok/s, median of $ROUNDS rounds ($cores cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'))"
printf "%-14s %-10s %9s %9s %12s %16s\n" model setting idle loaded loaded/idle "loaded/t1-loaded"
for model in swan-7m swan-7m-f32; do
  t1_loaded=$(echo "${results[$model t1 loaded]}" | median)
  for setting in "${settings[@]}"; do
    idle=$(echo "${results[$model $setting idle]}" | median)
    loaded=$(echo "${results[$model $setting loaded]}" | median)
    printf "%-14s %-10s %9.1f %9.1f %12.2f %16.2f\n" "$model" "$setting" "$idle" "$loaded" \
      "$(awk "BEGIN{print $loaded / $idle}")" "$(awk "BEGIN{print $loaded / $t1_loaded}")"
  done
done
echo "all rounds:"
for key in "${!results[@]}"; do echo "  $key:${results[$key]}"; done | sort
