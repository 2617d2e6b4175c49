#!/usr/bin/env bash
# swan's Vulkan backend on a machine with a GPU and no network (an H100
# with NVIDIA's driver, PyTorch and transformers, say), in one command of
# under 8 minutes. Two steps:
#
#   bench/gpu_check.sh pack [DIR]   here, where swan builds: DIR (default
#       .gpu_check, ignored by git) gets build/swan and build/gpu/gpu_test,
#       the shared libraries they load but glibc's (the Vulkan loader among
#       them), the files the GPU tests read (stories260K, swan-7m, three lab
#       models, gpu/testdata) and this script with gpu_check.py; then
#       DIR.tar.xz of it all, its size printed.
#   bench/gpu_check.sh run [DIR|DIR.tar.xz] [--smoke]   there:
#       1. the GPU (nvidia-smi -L) and the Vulkan devices swan finds (swan
#          --version); NVIDIA's Vulkan driver is looked for where its
#          containers mount it when the loader's own folders have none;
#       2. the Vulkan tests (gpu_test, SWAN_REQUIRE_VULKAN=1): every shader
#          and plan kind against the CPU, now on the GPU;
#       3. the GPU's copy bandwidth through PyTorch (bytes read + written per
#          second), which swan bench's roofline columns divide (--bandwidth);
#       4. swan bench --synthetic llama3.2-1b --device vulkan in bf16, Q8_0
#          and Q4_0 weights, bf16 KV, depths 0, 4K and 32K (random rows), full
#          attention and a 3:1 hybrid of window 1024; decode of 16 tokens,
#          the median of 2 runs after a warm-up;
#       5. the same shape with random bf16 weights in transformers (its
#          default attention, full), decoding from the same depths;
#       6. one markdown table: swan's decode, its roofline and share of it,
#          the KV cache, and transformers' decode beside swan's bf16 full row.
#       The JSON of every run and the table go to $OUT (or ./gpu_check_out).
#       --smoke: stories260K instead of the 1B shape, depths 0 and 300, f32
#       weights only: a minute on lavapipe, to check the script itself.
#
# With the device tool: run `pack` here, name DIR in `carry`, and run
# `bench/gpu_check.sh run DIR` there. The tool sends the checkout too, and
# at most 64 MiB in all: when the tracked files pass that, carry
# DIR.tar.xz from a folder of its own and run the script inside it.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)

pack() {
  local dir=${1:-.gpu_check}
  for program in build/swan build/gpu/gpu_test; do
    [ -x "$here/$program" ] || { echo "no $program: build it first (cmake --build build)" >&2; exit 1; }
  done
  rm -rf "$dir"
  mkdir -p "$dir/bin" "$dir/lib" "$dir/src/models/lab" "$dir/src/gpu" "$dir/src/bench"
  cp "$here/build/swan" "$here/build/gpu/gpu_test" "$dir/bin/"
  # Every library the programs load but glibc's own, which the GPU machine has.
  ldd "$here/build/swan" "$here/build/gpu/gpu_test" | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
    case $(basename "$lib") in
      libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
      *) cp -L "$lib" "$dir/lib/" ;;
    esac
  done
  cp -r "$here/models/stories260K" "$here/models/swan-7m" "$dir/src/models/"
  for m in full linear routed; do cp -r "$here/models/lab/$m" "$dir/src/models/lab/"; done
  cp -r "$here/gpu/testdata" "$dir/src/gpu/"
  cp "$here/bench/gpu_check.sh" "$here/bench/gpu_check.py" "$dir/src/bench/"
  tar -C "$(dirname "$dir")" -cJf "$dir.tar.xz" "$(basename "$dir")"
  echo "$dir: $(du -sh "$dir" | cut -f1); $dir.tar.xz: $(du -h "$dir.tar.xz" | cut -f1)"
}

run() {
  local bundle="" smoke=0
  while [ $# -gt 0 ]; do
    case $1 in
      --smoke) smoke=1 ;;
      *) bundle=$1 ;;
    esac
    shift
  done
  bundle=${bundle:-.gpu_check}
  if [ "${bundle%.tar.xz}" != "$bundle" ]; then
    mkdir -p /tmp/gpu_check_bundle
    tar -C /tmp/gpu_check_bundle -xJf "$bundle"
    bundle=/tmp/gpu_check_bundle/$(basename "${bundle%.tar.xz}")
  fi
  [ -x "$bundle/bin/swan" ] || { echo "no swan in $bundle: run bench/gpu_check.sh pack first" >&2; exit 1; }
  bundle=$(cd "$bundle" && pwd)
  local out=${OUT:-$PWD/gpu_check_out}
  mkdir -p "$out"
  export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export SWAN_SOURCE_DIR="$bundle/src"
  # NVIDIA's containers mount the driver's Vulkan manifest outside the loader's folders.
  if [ -z "${VK_DRIVER_FILES:-}" ] && ! ls /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json >/dev/null 2>&1; then
    for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json; do
      [ -f "$icd" ] && export VK_DRIVER_FILES=$icd && break
    done
  fi
  local swan="$bundle/bin/swan" started=$SECONDS
  echo "== the machine"
  command -v nvidia-smi >/dev/null && nvidia-smi -L || echo "(no nvidia-smi)"
  "$swan" --version | tee "$out/version.txt"

  echo "== the Vulkan tests on device 0"
  SWAN_REQUIRE_VULKAN=1 "$bundle/bin/gpu_test" --gtest_brief=1 2>&1 | tee "$out/gpu_test.txt" | tail -n 30

  echo "== copy bandwidth"
  local bandwidth="" py="python3 $bundle/src/bench/gpu_check.py"
  if bandwidth=$($py bandwidth); then
    echo "$bandwidth GB/s (bytes read + written per second, PyTorch)"
  else
    bandwidth=""
    echo "(no PyTorch on a CUDA device: no roofline)"
  fi
  local bw_flag=""
  [ -n "$bandwidth" ] && bw_flag="--bandwidth $bandwidth"

  echo "== swan bench on the device"
  local files=() source types depths plans
  if [ "$smoke" = 1 ]; then
    source="-m $bundle/src/models/stories260K" types="f32" depths=0,300 plans="full;hybrid:3:1,window:8"
  else
    source="--synthetic llama3.2-1b" types="bf16 q8_0 q4_0" depths=0,4096,32768 plans="full;hybrid:3:1,window:1024"
  fi
  for type in $types; do
    # shellcheck disable=SC2086
    "$swan" bench $source --device vulkan --weights "$type" --kv bf16 -p 0 -n 16 -r 2 -d "$depths" \
      --attn "$plans" $bw_flag --json > "$out/swan_$type.json"
    files+=("$out/swan_$type.json")
    echo "  $type done at $((SECONDS - started)) s"
  done

  echo "== transformers, the same shape"
  local hf=()
  if [ "$smoke" = 1 ]; then
    echo "(skipped with --smoke)"
  elif $py transformers "$out/transformers.json" "$depths" 16; then
    hf=(--hf "$out/transformers.json")
  else
    echo "(no transformers on a CUDA device)"
  fi

  echo "== the table ($(date -u +%F), $((SECONDS - started)) s)"
  $py table "${files[@]}" "${hf[@]}" | tee "$out/table.md"
}

case ${1:-} in
  pack) shift; pack "$@" ;;
  run) shift; run "$@" ;;
  *) sed -n '2,38p' "$0" >&2; exit 2 ;;
esac
