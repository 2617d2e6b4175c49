#!/usr/bin/env bash
# Installs every Debian package swan needs to build, test and benchmark.
# Idempotent: packages already present are left alone.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  ccache            # scripts/test.sh: rebuilds only what changed, across clones
  libdnnl-dev       # oneDNN 2.6: matrix products
  libhwy-dev        # Google Highway 1.0.3: SIMD with runtime dispatch
  libomp-dev        # OpenMP runtime (gcc's libgomp comes with g++)
  nlohmann-json3-dev
  libcpp-httplib-dev
  libopenmpi-dev openmpi-bin  # data-parallel training: mpirun -np N swan train
  libpcre2-dev      # tokenizer pre-split regexes
  libicu-dev        # tokenizer Unicode normalization (NFC, NFKC)
  clang-14 libclang-rt-14-dev  # libFuzzer targets (scripts/fuzz.sh)
  clang-format-14   # scripts/check_format.sh: the C++ style of .clang-format
  libgtest-dev libgmock-dev
  libbenchmark-dev
  chromium          # renders the HTML reports in tests (scripts/render_report.sh)
  pybind11-dev python3-numpy  # the Python module (python/, `import swan`)
  python3-torch     # its tests: PyTorch forwards that swan's logits must match
  libvulkan-dev glslc  # the Vulkan backend (gpu/): loader, headers, shader compiler
  mesa-vulkan-drivers  # lavapipe: a Vulkan device on the CPU, that the gpu/ tests run on
  vulkan-validationlayers  # the gpu/ tests' pass with the validation layer on
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js + npm run the reference tokenizers in tests; machines often ship
# them from another source, so only install Debian's when none is present.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=""
[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo_cmd apt-get update -qq
$sudo_cmd apt-get install -y -qq "${missing[@]}"
