#!/usr/bin/env bash
# Makes `import swan` work for the current user: writes swan.pth into the
# user site-packages of each Python 3 given (default: python3, and Debian's
# /usr/bin/python3 when it is another), pointing at BUILD/python, so the
# package follows every rebuild. Remove that file to uninstall.
# Usage: scripts/install_python.sh [BUILD_DIR] [PYTHON...]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build="$(cd "${1:-build}" && pwd)"
shift || true
if [ ! -d "$build/python/swan" ] || ! ls "$build"/python/swan/_swan*.so > /dev/null 2>&1; then
  echo "install_python: no built module in $build/python/swan: build swan with pybind11 installed first" >&2
  echo "  (bash scripts/setup.sh && cmake -S . -B build -G Ninja && cmake --build build)" >&2
  exit 1
fi
pythons=("$@")
if [ ${#pythons[@]} -eq 0 ]; then
  pythons=(python3)
  [ -x /usr/bin/python3 ] && [ "$(command -v python3)" != /usr/bin/python3 ] && pythons+=(/usr/bin/python3)
fi
for py in "${pythons[@]}"; do
  site="$("$py" -m site --user-site)"
  mkdir -p "$site"
  echo "$build/python" > "$site/swan.pth"
  if "$py" -c "import swan" 2> /dev/null; then
    echo "install_python: $py imports swan from $build/python ($site/swan.pth)"
  else
    echo "install_python: wrote $site/swan.pth, but $py cannot import swan:" >&2
    "$py" -c "import swan" 2>&1 | tail -1 >&2
  fi
done
