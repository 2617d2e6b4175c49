#!/bin/sh
# The lab's headline, measured now: each shipped lab model (models/lab)
# under the plan it was trained under, recall inside the window of 64,
# within the 2-layer relay reach (64-127) and beyond it, and what each plan
# costs (keys visited per query, KV MiB, decode tok/s at 512). Under a
# minute on 2 cores. The full report: recipes/lab/report.sh -> docs/lab.
#   recipes/lab/headline.sh   (SWAN, MODELS, SAMPLES (default 16) from the environment)
THREADS=${THREADS:-2}
. "$(dirname "$0")/common.sh"
SAMPLES=${SAMPLES:-16}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for arm in full swa64 swa64-sinks4 hybrid hybrid-nope routed full-heads4 per-head25 per-head12 linear linear64; do
  [ -f "$MODELS/$arm/config.json" ] || { echo "no $MODELS/$arm (recipes/lab/$arm.sh makes it)" >&2; exit 1; }
  "$SWAN" compare -m "$MODELS/$arm" --attn model --distances 1,64,128,513 --samples "$SAMPLES" \
    --json --quiet -t "$THREADS" > "$TMP/$arm.json"
done
node - "$TMP" "$MODELS" <<'JS'
const fs = require('fs'), path = require('path');
const [dir, models] = process.argv.slice(2);
const arms = ['full', 'swa64', 'swa64-sinks4', 'hybrid', 'hybrid-nope', 'routed', 'full-heads4', 'per-head25',
  'per-head12', 'linear', 'linear64'];
const rows = [['model', 'plan', 'key inside the window', '64-127 back', '128+ back', 'keys/query', 'KV MiB @ 512', 'decode tok/s']];
let chance = 0;
for (const arm of arms) {
  const j = JSON.parse(fs.readFileSync(path.join(dir, arm + '.json'), 'utf8'));
  const p = j.plans[0];
  chance = j.chance_pick;
  const acc = (lo) => { const b = p.bins.find((b) => b.lo === lo); return b && b.items ? (100 * b.correct / b.items).toFixed(1) + '%' : '-'; };
  // bins [1,64), [64,128), [128,513)
  const stored = JSON.parse(fs.readFileSync(path.join(models, arm, 'attention_plan.json'), 'utf8'));
  // A per-head arm was trained with a heads file of the run: show the plan as stored.
  const spec = stored.trained_with && !stored.trained_with.includes('heads:') ? stored.trained_with : stored.spec;
  rows.push([path.join(models, arm), spec, acc(1), acc(64), acc(128),
    p.keys_per_query.toFixed(1), (p.kv_bytes / 1048576).toFixed(3), p.decode_tokens_per_s.toFixed(0)]);
}
const width = rows[0].map((_, c) => Math.max(...rows.map((r) => String(r[c]).length)));
for (const r of rows) console.log(r.map((x, c) => (c < 2 ? String(x).padEnd(width[c]) : String(x).padStart(width[c]))).join('  '));
console.log(`MQAR at context 512 (32 pairs, then 32 queries), recall of every answer token by how far back its key lies; chance ${(100 * chance).toFixed(1)}%`);
JS
