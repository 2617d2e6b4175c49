#!/usr/bin/env bash
# Renders HTML or SVG files (the pictures of `swan compare --html/--svg`) to
# PNG screenshots with headless Chromium, to check that they display.
# Usage: scripts/render_report.sh FILE.html|FILE.svg [OUT.png] [WIDTHxHEIGHT]
# Needs Debian's `chromium` package (apt-get install -y chromium).
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 FILE.html|FILE.svg [OUT.png] [WIDTHxHEIGHT]" >&2
  exit 2
fi
in=$(realpath "$1")
out=${2:-${1%.*}.png}
size=${3:-1200x900}
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "$0: chromium is not installed (apt-get install -y chromium)" >&2
  exit 1
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --hide-scrollbars --screenshot="$(realpath -m "$out")" \
  --window-size="${size/x/,}" "file://$in" >/dev/null 2>&1
if [ ! -s "$out" ]; then
  echo "$0: chromium wrote no screenshot for $in" >&2
  exit 1
fi
echo "$out"
