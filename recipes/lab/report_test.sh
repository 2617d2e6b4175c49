#!/bin/sh
# The lab's pages: report.mjs rebuilt from the committed figures
# (docs/lab/data) gives the committed README.md, and headless Chromium
# renders index.html to a picture that is not blank.
#   usage: report_test.sh SOURCE_DIR
# Exits 77 (skipped) when chromium or node is missing.
set -eu
SRC=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
command -v node >/dev/null 2>&1 || { echo "skipped: no node"; exit 77; }
cp -r "$SRC/docs/lab" "$TMP/lab"
rm -f "$TMP/lab/README.md" "$TMP/lab/index.html" "$TMP/lab/depth.md" "$TMP/lab/data/deep_headline.json"
# The deep arms' page first: it writes the headline the main page shows.
node "$SRC/recipes/lab/deep_report.mjs" "$TMP/lab" > /dev/null
cmp "$TMP/lab/depth.md" "$SRC/docs/lab/depth.md" || {
  echo "docs/lab/depth.md is not what deep_report.mjs writes from docs/lab/data (run recipes/lab/deep_report.sh)"; exit 1; }
cmp "$TMP/lab/depth_recall.svg" "$SRC/docs/lab/depth_recall.svg"
node "$SRC/recipes/lab/report.mjs" "$TMP/lab" > "$TMP/report.txt"
grep -q "^## Headline" "$TMP/lab/README.md"
cmp "$TMP/lab/README.md" "$SRC/docs/lab/README.md" || {
  echo "docs/lab/README.md is not what report.mjs writes from docs/lab/data (run recipes/lab/report.sh)"; exit 1; }
cmp "$TMP/lab/index.html" "$SRC/docs/lab/index.html"
grep -q "## The published claims" "$TMP/lab/README.md"
test "$(grep -c -E '^- \*\*(reproduced|not reproduced|mixed)\*\*' "$TMP/lab/README.md")" -eq 13
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || {
  echo "skipped the rendering: chromium is not installed (scripts/setup.sh installs it)"; exit 77; }
bash "$SRC/scripts/render_report.sh" "$TMP/lab/index.html" "$TMP/page.png" 1200x2400 > /dev/null
# A blank page compresses to a few KB; tables, charts and heatmaps do not.
size=$(wc -c < "$TMP/page.png")
echo "index.html rendered: $size bytes of PNG"
test "$size" -gt 60000
