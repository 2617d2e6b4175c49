#!/usr/bin/env bash
# Checks that C++ files follow .clang-format (clang-format 14, Debian's).
#   scripts/check_format.sh            every tracked .cc/.h file
#   scripts/check_format.sh BASE       only those changed since commit BASE
#   scripts/check_format.sh --fix ...  rewrites them in place instead
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
if [ "${1:-}" = "--fix" ]; then fix=1; shift; fi
cf=$(command -v clang-format-14 || command -v clang-format || true)
[ -n "$cf" ] || { echo "check_format: clang-format not found (run scripts/setup.sh)" >&2; exit 1; }
if [ $# -gt 0 ]; then
  mapfile -t files < <(git diff --name-only --diff-filter=d "$1" -- '*.cc' '*.h')
else
  mapfile -t files < <(git ls-files '*.cc' '*.h')
fi
[ ${#files[@]} -gt 0 ] || { echo "check_format: no C++ files to check"; exit 0; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ $fix = 1 ]; then
  "$cf" -i "${files[@]}"
  echo "check_format: formatted ${#files[@]} files"
elif ! "$cf" --dry-run --Werror "${files[@]}" 2> "$log"; then
  grep -E '^[^ ].*(error|warning):' "$log" | cut -d: -f1 | sort -u | sed 's/^/  not formatted: /'
  echo "check_format: run scripts/check_format.sh --fix (clang-format -i) on these files" >&2
  exit 1
else
  echo "check_format: ${#files[@]} files follow .clang-format"
fi
