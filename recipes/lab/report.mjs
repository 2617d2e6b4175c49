// The retrieval lab's pages: reads what recipes/lab/report.sh left in
// DOCS/data (the JSON of `swan compare`, `swan heads`, `swan route-stats`
// the laziness runs' recall logs and the per-head arms' selected heads) and
// writes DOCS/README.md,
// DOCS/index.html and DOCS/laziness.svg, DOCS/recall_by_distance.svg.
// Every number on the pages is read from those files; the verdicts are
// computed from them with the thresholds written beside each claim.
//   node recipes/lab/report.mjs DOCS
import fs from 'node:fs';
import path from 'node:path';

import { groupedBars } from './charts.mjs';
import { accuracy, pct } from './recall.mjs';

const docs = process.argv[2];
if (!docs) {
  console.error('usage: node recipes/lab/report.mjs DOCS   (DOCS/data from recipes/lab/report.sh)');
  process.exit(2);
}
const data = path.join(docs, 'data');
const readJson = (name) => JSON.parse(fs.readFileSync(path.join(data, name), 'utf8'));
const readText = (name) => fs.readFileSync(path.join(data, name), 'utf8').trim();

// --- Figures ------------------------------------------------------------------

const ARMS = [
  ['full', 'full', '1. full attention (the reference)'],
  ['swa64', 'swa:64', '2. window of 64'],
  ['swa64-sinks4', 'swa:64,sinks:4', '3. window of 64 + 4 sinks'],
  ['hybrid', 'hybrid:1:1,window:64', '4. hybrid, full layer last'],
  ['hybrid-nope', 'hybrid:1:1,window:64,nope:full', '5. hybrid, NoPE on the full layer'],
  ['routed', 'routed:64,sinks:4', '6. routed (Switch Attention)'],
];
const WINDOW = 64, RELAY = 128;  // the window, and the 2-layer relay reach of two windows

const acc = (plan, lo, hi) => pct(accuracy(plan, lo, hi).value);
const mib = (bytes) => (bytes / 1048576).toFixed(3);

const arms = {};
for (const [name] of ARMS) {
  arms[name] = {
    at512: readJson(`arm_${name}.json`),
    at1024: readJson(`arm_${name}_1024.json`),
    at2048: readJson(`arm_${name}_2048.json`),
  };
}
const plan = (name, at = 'at512') => arms[name][at].plans[0];
const conversion = readJson('conversion.json');
const heads = { full: readJson('heads_full.json'), hybrid: readJson('heads_hybrid.json') };
const routes = readJson('routes.json');
// Arm 9: per-head plans on the 4-head twin.
const perHeadFree = readJson('per_head_free.json');
const PER_HEAD_ARMS = [['per-head25', 'heads_selected_per-head25.json'], ['per-head12', 'heads_selected_per-head12.json']];
const perHeadArms = PER_HEAD_ARMS.map(([name, sel]) => ({ name, result: readJson(`arm_${name}.json`).plans[0], selected: readJson(sel) }));
const heads4 = readJson('heads_full-heads4.json');
// Arm 9's heads chosen two ways (attention scores, trained gates) at three shares.
const perHeadSelect = readJson('per_head_select.json');
const SELECT_SHARES = ['0.25', '0.375', '0.5'];
const SELECT_BY = [['scores', 'attention scores (`swan heads --select`)'],
  ['gates0.05', 'DuoAttention gates, λ 0.05 (`swan train --head-gates`)'], ['gates0.2', 'DuoAttention gates, λ 0.2']];
const selected = (by, share) => {
  const file = `select_${by}_${share}.json`;
  return { file, heads: readJson(file), result: perHeadSelect.plans.find((p) => p.plan.endsWith('/' + file)) };
};
// Arm 10: the full arm linearized, against it under a window + sinks untrained.
// Each bench row: the median of three interleaved rounds (by decode tok/s).
const benchMedian = (arm) => {
  const rounds = [1, 2, 3].map((r) => readJson(`linear_bench_${arm}.${r}.json`));
  return { rows: rounds[0].rows.map((_, i) => rounds.map((b) => b.rows[i])
    .sort((x, y) => x.decode_tokens_per_s - y.decode_tokens_per_s)[1]) };
};
const linear = {
  at512: readJson('linear_512.json'), at2048: readJson('linear_2048.json'),
  transfer: readJson('arm_linear-transfer.json').plans[0], transfer2048: readJson('arm_linear-transfer_2048.json').plans[0],
  tuned: readJson('arm_linear.json').plans[0], tuned2048: readJson('arm_linear_2048.json').plans[0],
  hybrid: readJson('arm_linear64.json').plans[0], hybrid2048: readJson('arm_linear64_2048.json').plans[0],
  benchFull: benchMedian('full'), benchLinear: benchMedian('linear'), benchHybrid: benchMedian('linear64'),
};
const cpu = readText('cpu.txt');
const task = arms.full.at512;
const chance = `chance: ${pct(task.chance_guess)} guessing among the values, ${pct(task.chance_pick)} picking one of the sequence's`;

// Laziness runs: recall_wW.csv (the shipped seed) and recall_wW_seedS.csv
// (other seeds), one row per evaluation.
const lazyRuns = [];
for (const file of fs.readdirSync(data).filter((f) => /^recall_w\d+(_seed\d+)?\.csv$/.test(f))) {
  const [, w, seed] = /^recall_w(\d+)(?:_seed(\d+))?/.exec(file).map(Number);
  const [header, ...rows] = fs.readFileSync(path.join(data, file), 'utf8').trim().split('\n');
  const cols = header.split(',');
  const points = rows.map((line) => {
    const v = line.split(',').map(Number);
    let correct = 0, items = 0;
    for (let c = 2; c < cols.length; c += 2) {
      const [, lo] = cols[c].split('_').map(Number);
      // Beyond the window: bins that start at or after W (for W < 16: after the first bin).
      if (lo >= Math.max(w, 16)) {
        correct += v[c];
        items += v[c + 1];
      }
    }
    return { step: v[0], value: items ? correct / items : NaN };
  });
  const cross = (t) => (points.find((p) => p.value >= t) || { step: null }).step;
  lazyRuns.push({ w, seed: seed || 1234, points, cross50: cross(0.5), cross90: cross(0.9) });
}
// Per window: the shipped seed's run (the chart) and every seed's steps.
// The median step orders the windows: a run that never gets there counts
// as later than any that does.
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const lazy = lazyRuns.filter((r) => r.seed === 1234).sort((a, b) => a.w - b.w).map((l) => {
  const runs = lazyRuns.filter((r) => r.w === l.w).sort((a, b) => a.seed - b.seed);
  return { ...l, runs, median90: median(runs.map((r) => r.cross90 ?? Infinity)) };
});
const stepText = (s) => (s === null || s === Infinity ? 'never' : String(s));

// --- Tables (markdown and HTML from the same rows) ----------------------------

const tables = [];
function table(head, rows) {
  tables.push({ head, rows });
  return tables.length - 1;
}
const md = (t) => {
  const { head, rows } = tables[t];
  return [head, head.map(() => '---'), ...rows].map((r) => '| ' + r.join(' | ') + ' |').join('\n');
};
const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const prose = (s) => esc(s).replace(/`([^`]+)`/g, '<code>$1</code>');  // markdown's code spans in HTML
const html = (t) => {
  const { head, rows } = tables[t];
  return '<table><tr>' + head.map((h) => `<th>${esc(h)}</th>`).join('') + '</tr>' +
    rows.map((r) => '<tr>' + r.map((c, i) => `<td${i ? ' class="n"' : ''}>${esc(c)}</td>`).join('') + '</tr>').join('') +
    '</table>';
};

const binHeads = task.plans[0].bins.map((b) => `[${b.lo},${b.hi})`);
const mainTable = table(
  ['arm', 'plan', ...binHeads, `beyond ${RELAY}`, 'answer perplexity', 'keys / query', 'KV MiB @ 512', 'KV MiB @ 2048', 'decode tok/s @ 512'],
  ARMS.map(([name, spec, label]) => {
    const p = plan(name);
    return [label, spec, ...p.bins.map((b) => pct(b.accuracy)), acc(p, RELAY), p.answer_perplexity.toFixed(3),
      p.keys_per_query.toFixed(1), mib(p.kv_bytes), mib(plan(name, 'at2048').kv_bytes), p.decode_tokens_per_s.toFixed(0)];
  }));
const lengthTable = table(
  ['arm', '@512: [128,513)', '@1024: [128,513)', '@1024: [513,1025)', '@2048: [513,1025)', '@2048: [1025,2049)'],
  ARMS.map(([name, , label]) => [label, acc(plan(name), 128, 513), acc(plan(name, 'at1024'), 128, 513),
    acc(plan(name, 'at1024'), 513, 1025), acc(plan(name, 'at2048'), 513, 1025), acc(plan(name, 'at2048'), 1025, 2049)]));
const conversionTable = table(
  ['plan at inference (arm 1, no retraining)', `inside the window [1,${WINDOW})`, `[${WINDOW},${RELAY})`, `beyond ${RELAY}`, 'answer perplexity', 'keys / query', 'trained under it (arms 2-5), beyond ' + RELAY],
  conversion.plans.map((p) => {
    const arm = ARMS.find(([, spec]) => spec === p.plan);
    return [p.plan, acc(p, 1, WINDOW), acc(p, WINDOW, RELAY), acc(p, RELAY), p.answer_perplexity.toFixed(3), p.keys_per_query.toFixed(1),
      arm ? acc(plan(arm[0]), RELAY) : '-'];
  }));
const CLASSES = ['far query', 'near query', 'key', 'value', 'answer', 'filler'];
const routeTable = table(
  ['layer', 'window branch', ...CLASSES.map((c) => `${c}`)],
  routes.layers.map((l) => [String(l.layer), `${l.window} + ${l.sinks} sinks`,
    ...CLASSES.map((c) => (l.classes[c].tokens ? `${pct(l.classes[c].ratio)} (${l.classes[c].tokens})` : '-'))]));
const lazyTable = table(
  ['window W of layer 0', 'seeds', 'first step >= 50% beyond W (each seed)', 'first step >= 90% beyond W (each seed)',
    'median step to 90%', 'last evaluation (each seed)'],
  lazy.map((l) => [String(l.w), l.runs.map((r) => r.seed).join(', '), l.runs.map((r) => stepText(r.cross50)).join(', '),
    l.runs.map((r) => stepText(r.cross90)).join(', '), stepText(l.median90) + (l.median90 === Infinity ? ' (1600 steps)' : ''),
    l.runs.map((r) => `${pct(r.points.at(-1).value)}`).join(', ') + ` at step ${l.points.at(-1).step}`]));
const headTable = table(
  ['model', 'layer', 'mass on the value after the key', 'mass on the key', `far answers (key >= ${heads.full.far_distance} back): value`],
  ['full', 'hybrid'].flatMap((m) => heads[m].heads_mass.map((h) => [m === 'full' ? 'arm 1 (full)' : 'arm 4 (hybrid)',
    `${h.layer} head ${h.head}`, h.value.toFixed(3), h.key.toFixed(3), h.far_value.toFixed(3)])));

const nFull = (selected) => selected.full_heads.reduce((n, l) => n + l.length, 0);
const perHeadLabel = (spec) => {
  const arm = perHeadArms.find((a) => spec.includes(`/${a.name}/heads.json`));
  return arm ? `per-head, ${nFull(arm.selected)} of 8 KV heads full, no training` : spec;
};
const perHeadRow = (label, p) => [label, acc(p, 1, WINDOW), acc(p, WINDOW, RELAY), acc(p, RELAY), p.answer_perplexity.toFixed(3),
  p.keys_per_query.toFixed(1), mib(p.kv_bytes)];
const perHeadTable = table(
  ['model and plan', `inside the window [1,${WINDOW})`, `[${WINDOW},${RELAY})`, `beyond ${RELAY}`, 'answer perplexity', 'keys / query', 'KV MiB @ 512'],
  [...perHeadFree.plans.map((p) => perHeadRow(`full-heads4 under ${perHeadLabel(p.plan)}`, p)),
    ...perHeadArms.map((a) => perHeadRow(`${a.name}: trained 300 steps under its plan (${nFull(a.selected)} of 8 KV heads full)`, a.result))]);
const headList = (sel) => sel.full_heads.map((l, i) => (l.length ? `layer ${i}: ${l.join(', ')}` : '')).filter(Boolean).join('; ');
const selectTable = table(
  ['share of KV heads full', 'heads chosen by', 'full KV heads', `[${WINDOW},${RELAY})`, `beyond ${RELAY}`, 'answer perplexity', 'KV MiB @ 512'],
  [['100%', 'full attention', 'all', acc(perHeadSelect.plans[0], WINDOW, RELAY), acc(perHeadSelect.plans[0], RELAY),
    perHeadSelect.plans[0].answer_perplexity.toFixed(3), mib(perHeadSelect.plans[0].kv_bytes)],
  ...SELECT_SHARES.flatMap((share) => SELECT_BY.map(([by, label]) => {
    const s = selected(by, share);
    return [`${(100 * Number(share)).toFixed(1)}%`, label, headList(s.heads), acc(s.result, WINDOW, RELAY), acc(s.result, RELAY),
      s.result.answer_perplexity.toFixed(3), mib(s.result.kv_bytes)];
  }))]);
const LINEAR_DEPTHS = [1024, 4096, 16384];
const benchRow = (bench, plan, depth) => bench.rows.find((r) => r.plan === plan && r.depth === depth);
const linearRows = [
  ['arm 1 under full attention', linear.at512.plans[0], linear.at2048.plans[0], linear.benchFull, 'full'],
  ['arm 1 under swa:64,sinks:4, no training', linear.at512.plans[1], linear.at2048.plans[1], linear.benchFull, 'swa:64,sinks:4'],
  ['arm 1 linearized: attention transfer only (300 steps, feature maps alone)', linear.transfer, linear.transfer2048, null, null],
  ['arm 1 linearized: transfer + 300 steps fine-tuning (`linear`)', linear.tuned, linear.tuned2048, linear.benchLinear, 'model'],
  ['arm 1 linearized with a window (`linear:64`, LoLCATs\' hybrid): transfer + 300 steps', linear.hybrid, linear.hybrid2048,
    linear.benchHybrid, 'model'],
];
const linearTable = table(
  ['model and plan', `[1,${WINDOW})`, `[${WINDOW},${RELAY})`, `beyond ${RELAY}`, 'answer perplexity', '@2048: [513,2049)',
    ...LINEAR_DEPTHS.map((d) => `decode tok/s @ ${d / 1024}K`), ...LINEAR_DEPTHS.map((d) => `cache MiB @ ${d / 1024}K`)],
  linearRows.map(([label, p, p2048, bench, plan]) => [label, acc(p, 1, WINDOW), acc(p, WINDOW, RELAY), acc(p, RELAY),
    p.answer_perplexity.toFixed(3), acc(p2048, 513, 2049),
    ...LINEAR_DEPTHS.map((d) => (bench ? benchRow(bench, plan, d).decode_tokens_per_s.toFixed(0) : '-')),
    ...LINEAR_DEPTHS.map((d) => (bench ? benchRow(bench, plan, d).kv_mib.toFixed(3) : '-'))]));
const layerMass = (layer) => heads4.heads_mass.filter((h) => h.layer === layer).map((h) => h.far_value);

// --- Claims ---------------------------------------------------------------------

const claims = [];
// Every verdict here is for the lab's 2-layer shape; docs/lab/depth.md has the deeper ones.
const SCALE = '2 layers, d 128, 0.43M parameters';
function claim(text, verdict, numbers) { claims.push({ text, verdict, numbers: `${numbers} (${SCALE})` }); }
const b = (name, at = 'at512', lo = RELAY, hi = Infinity) => accuracy(plan(name, at), lo, hi).value;
{
  const v = b('full');
  claim('The full-attention reference retrieves beyond the relay reach (the lab needs >= 95%).',
    v >= 0.95 ? 'reproduced' : 'not reproduced', `arm 1: ${pct(v)} of the answers whose key is ${RELAY}+ tokens back.`);
}
{
  const v = b('swa64'), limit = 3 * task.chance_pick;
  claim(`A window of ${WINDOW} on every layer cannot retrieve beyond its reach (near chance: <= 3x the pick chance, ${pct(limit)}).`,
    v <= limit ? 'reproduced' : 'not reproduced', `arm 2: ${pct(v)} beyond ${RELAY}, inside the window ${acc(plan('swa64'), 1, WINDOW)}.`);
}
{
  const s = b('swa64-sinks4'), w = b('swa64');
  claim('StreamingLLM\'s attention sinks do not extend what a window model can retrieve (within 5 points of the window alone).',
    Math.abs(s - w) <= 0.05 ? 'reproduced' : 'not reproduced', `arm 3: ${pct(s)} beyond ${RELAY} against ${pct(w)} for arm 2.`);
}
{
  const h = b('hybrid'), f = b('full');
  claim('A static hybrid with its full layer last retrieves like full attention (>= 90% and within 5 points of arm 1).',
    h >= 0.9 && f - h <= 0.05 ? 'reproduced' : h >= 0.9 ? 'mixed' : 'not reproduced',
    `arm 4: ${pct(h)} beyond ${RELAY} with ${plan('hybrid').keys_per_query.toFixed(1)} keys per query against arm 1's ${pct(f)} with ${plan('full').keys_per_query.toFixed(1)}; KV ${mib(plan('hybrid', 'at2048').kv_bytes)} against ${mib(plan('full', 'at2048').kv_bytes)} MiB at 2048.`);
}
{
  const n2 = b('hybrid-nope', 'at1024', 513), r2 = b('hybrid', 'at1024', 513);
  const n4 = b('hybrid-nope', 'at2048', 1025), r4 = b('hybrid', 'at2048', 1025);
  const better = n2 - r2 > 0.05 || n4 - r4 > 0.05, worse = r2 - n2 > 0.05 || r4 - n4 > 0.05;
  claim('NoPE on the full layers helps long context: beyond the training length (2x and 4x), the NoPE hybrid retrieves more than the RoPE hybrid (by more than 5 points).',
    better && !worse ? 'reproduced' : better && worse ? 'mixed' : 'not reproduced',
    `distances 513-1024 at 2x: ${pct(n2)} NoPE against ${pct(r2)} RoPE; distances 1025-2048 at 4x: ${pct(n4)} against ${pct(r4)}; at the training length beyond ${RELAY}: ${pct(b('hybrid-nope'))} against ${pct(b('hybrid'))}.`);
}
{
  const p = plan('routed'), v = b('routed'), ratio = p.routed_full_ratio;
  const layers = routes.layers.filter((l) => l.classes['far query'].ratio > l.classes.filler.ratio).map((l) => l.layer);
  const ok = [v >= 0.9, ratio <= 0.25, layers.length > 0];
  claim('Switch Attention: a learned router keeps retrieval (>= 90% beyond the reach) while sending <= 25% of token-layer pairs to full attention, and sends far queries to full attention more often than filler in at least one layer.',
    ok.every(Boolean) ? 'reproduced' : ok.some(Boolean) ? 'mixed' : 'not reproduced',
    `arm 6: ${pct(v)} beyond ${RELAY}; full share ${pct(ratio)} of the routed token-layer pairs, ${p.keys_per_query.toFixed(1)} keys per query against ${plan('full').keys_per_query.toFixed(1)} for full; ` +
    routes.layers.map((l) => `layer ${l.layer}: P(full | far query) ${pct(l.classes['far query'].ratio)}, P(full | filler) ${pct(l.classes.filler.ratio)}`).join('; ') + '.');
}
{
  const steps = lazy.map((l) => l.median90);
  const increasing = steps.every((s, i) => i === 0 || s >= steps[i - 1]);
  const strictly = steps.some((s, i) => i > 0 && s > steps[i - 1]);
  // "3 seeds at W = 2, 4, 8, 16; 1 at W = 64, 256"
  const counts = [...new Set(lazy.map((l) => l.runs.length))].sort((a, b) => b - a);
  const seedCounts = counts.map((n) => `${n} seed${n > 1 ? 's' : ''} at W = ` +
    lazy.filter((l) => l.runs.length === n).map((l) => l.w).join(', ')).join('; ');
  claim('Bigger windows slow down how fast retrieval is learned: the step at which accuracy beyond the window reaches 90% grows with W.',
    increasing && strictly ? 'reproduced' : strictly ? 'mixed' : 'not reproduced',
    lazy.map((l) => `W=${l.w}: 90% at ${l.runs.map((r) => stepText(r.cross90)).join(' / ')} (median ${stepText(l.median90)})`)
      .join('; ') + ` (steps of 32 sequences; ${seedCounts}; 1,600 steps at most, so "never" means not within them).`);
}
{
  const f = conversion.plans[0], s = conversion.plans.find((p) => p.plan === 'swa:64,sinks:4');
  const inside = accuracy(s, 1, WINDOW).value / accuracy(f, 1, WINDOW).value;
  claim('Training-free SWA + 4 sinks keeps ~99% of a model\'s short-context quality (here: recall with the key inside the window, relative to full attention), and loses what lies beyond the window.',
    inside >= 0.99 ? 'reproduced' : 'not reproduced',
    `arm 1 under swa:64,sinks:4 without retraining: ${acc(s, 1, WINDOW)} inside the window (${(100 * inside).toFixed(1)}% of full's ${acc(f, 1, WINDOW)}), ${acc(s, RELAY)} beyond ${RELAY}; ` +
    `the same model under the hybrid plan without retraining: ${acc(conversion.plans.find((p) => p.plan === 'hybrid:1:1,window:64'), RELAY)} beyond ${RELAY}.`);
}

{
  const full = accuracy(perHeadFree.plans[0], RELAY).value;
  const quarter = perHeadFree.plans.find((p) => p.plan.includes('/per-head25/'));
  const q = accuracy(quarter, RELAY).value;
  const trained = perHeadArms.map((a) => `${a.name} (${nFull(a.selected)} of 8 full) ${acc(a.result, RELAY)}`).join(', ');
  claim('DuoAttention: with 25% of the KV heads full (retrieval heads) and the rest streaming (window + sinks), retrieval is kept without retraining the model.',
    full - q <= 0.05 ? 'reproduced' : 'not reproduced',
    `the 4-head twin of arm 1 keeps ${acc(quarter, RELAY)} beyond ${RELAY} with 2 of 8 KV heads full (chosen by \`swan heads --select 0.25\`) against ${pct(full)} under full attention: ` +
    `all four heads of its layer 1 retrieve (far mass on the value ${layerMass(1).map((x) => x.toFixed(2)).join(', ')}), so half of the work is cut off. ` +
    `Continued 300 steps under the per-head plan: ${trained} beyond ${RELAY}.`);
}

{
  const full = accuracy(perHeadSelect.plans[0], RELAY).value;
  const at = (by, share) => accuracy(selected(by, share).result, RELAY).value;
  // DuoAttention's own weight (0.05) decides; 0.2 is shown beside it.
  const diffs = SELECT_SHARES.map((share) => at('gates0.05', share) - at('scores', share));
  const smallest = (by) => SELECT_SHARES.find((share) => full - at(by, share) <= 0.05);
  const better = diffs.some((d) => d > 0.05), worse = diffs.some((d) => d < -0.05);
  const shareText = (share) => (share ? `${(100 * Number(share)).toFixed(1)}%` : `none of ${SELECT_SHARES.join(', ')}`);
  const row = (by, share) => `${pct(at(by, share))} (${headList(selected(by, share).heads)})`;
  claim('DuoAttention: retrieval heads found by optimization (a gate per KV head trained on synthetic retrieval items, the model frozen) keep more retrieval than heads picked from attention scores (RazorAttention\'s profiling) at the same share.',
    better && !worse ? 'reproduced' : better && worse ? 'mixed' : 'not reproduced',
    SELECT_SHARES.map((share) => `${shareText(share)} full: gates ${row('gates0.05', share)}, scores ${row('scores', share)}, gates at λ 0.2 ${row('gates0.2', share)}`).join('; ') +
    ` beyond ${RELAY}, against ${pct(full)} under full attention. The smallest share within 5 points of full: ${shareText(smallest('gates0.05'))} by gates (${shareText(smallest('gates0.2'))} at λ 0.2), ${shareText(smallest('scores'))} by scores.`);
}

// Each claim is judged against both linearized forms: reproduced when it
// holds against both, mixed when against one.
const both = (holds) => { const n = [linear.tuned, linear.hybrid].filter(holds).length; return n === 2 ? 'reproduced' : n === 1 ? 'mixed' : 'not reproduced'; };
{
  const swa = linear.at512.plans[1];
  const inside = (p) => accuracy(p, 1, WINDOW).value;
  claim('SWA + 4 sinks with no training matches or beats post-trained linear attention (LoLCATs, linear alone and linear + window) on short-context quality (here: recall with the key inside the window, within 1 point or better).',
    both((lin) => inside(swa) >= inside(lin) - 0.01),
    `arm 1 under swa:64,sinks:4 untrained: ${acc(swa, 1, WINDOW)} inside the window, answer perplexity ${swa.answer_perplexity.toFixed(3)}; linearized (attention transfer + 300 steps): ${acc(linear.tuned, 1, WINDOW)}, ${linear.tuned.answer_perplexity.toFixed(3)}; with a window of 64: ${acc(linear.hybrid, 1, WINDOW)}, ${linear.hybrid.answer_perplexity.toFixed(3)}; attention transfer alone: ${acc(linear.transfer, 1, WINDOW)}.`);
}
{
  const swa = linear.at512.plans[1], swa2 = linear.at2048.plans[1];
  const far = (p, lo = RELAY) => accuracy(p, lo).value;
  claim('SWA + 4 sinks beats post-trained linear attention on long-context retrieval by 2-10x.',
    both((lin) => far(swa) >= 2 * far(lin)),
    `beyond ${RELAY} at 512: ${pct(far(swa))} under swa:64,sinks:4 against ${pct(far(linear.tuned))} linearized and ${pct(far(linear.hybrid))} linearized with a window of 64 (${pct(far(linear.transfer))} after transfer alone); distances 513-2048 at 2048: ${pct(far(swa2, 513))} against ${pct(far(linear.tuned2048, 513))} and ${pct(far(linear.hybrid2048, 513))}. ` +
    `A window of 64 on 2 layers cannot reach beyond ${RELAY} at all; the linear state keeps a blurred sum of every key.`);
}
{
  const d = LINEAR_DEPTHS.at(-1);
  const swa = benchRow(linear.benchFull, 'swa:64,sinks:4', d), full = benchRow(linear.benchFull, 'full', d);
  const lin = benchRow(linear.benchLinear, 'model', d), hyb = benchRow(linear.benchHybrid, 'model', d);
  const wins = (r) => (swa.decode_tokens_per_s > r.decode_tokens_per_s ? 1 : 0) + (swa.kv_mib < r.kv_mib ? 1 : 0);
  const score = wins(lin) + wins(hyb);
  claim(`SWA + 4 sinks decodes faster with less memory than linear attention (at ${d / 1024}K tokens).`,
    score === 4 ? 'reproduced' : score > 0 ? 'mixed' : 'not reproduced',
    `decode ${swa.decode_tokens_per_s.toFixed(0)} tok/s and ${swa.kv_mib.toFixed(3)} MiB of cache under swa:64,sinks:4 (bf16 ring) against ${lin.decode_tokens_per_s.toFixed(0)} tok/s and ${lin.kv_mib.toFixed(3)} MiB linearized (float32 state) and ${hyb.decode_tokens_per_s.toFixed(0)} tok/s and ${hyb.kv_mib.toFixed(3)} MiB with a window of 64 (ring + state); full attention ${full.decode_tokens_per_s.toFixed(0)} tok/s, ${full.kv_mib.toFixed(3)} MiB.`);
}

// --- Pictures -------------------------------------------------------------------

const COLORS = ['#1f77b4', '#d62728', '#ff7f0e', '#2ca02c', '#9467bd', '#8c564b', '#17becf'];
function lineChart({ title, xLabel, series, xs, xTicks, hlines = [] }) {
  const W = 760, H = 340, L = 56, R = 300, T = 34, B = 46;
  const xmin = Math.min(...xs), xmax = Math.max(...xs);
  const X = (x) => L + ((x - xmin) / (xmax - xmin || 1)) * (W - L - R);
  const Y = (y) => T + (1 - y) * (H - T - B);
  let s = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`;
  s += `<rect width="${W}" height="${H}" fill="white"/><text x="${L}" y="20" font-size="14">${esc(title)}</text>`;
  for (const y of [0, 0.25, 0.5, 0.75, 1])
    s += `<line x1="${L}" x2="${W - R}" y1="${Y(y)}" y2="${Y(y)}" stroke="#ddd"/><text x="${L - 6}" y="${Y(y) + 4}" text-anchor="end">${y * 100}%</text>`;
  for (const [x, label] of xTicks)
    s += `<text x="${X(x)}" y="${H - B + 16}" text-anchor="middle">${esc(label)}</text>`;
  s += `<text x="${(L + W - R) / 2}" y="${H - 8}" text-anchor="middle">${esc(xLabel)}</text>`;
  for (const [y, label] of hlines)
    s += `<line x1="${L}" x2="${W - R}" y1="${Y(y)}" y2="${Y(y)}" stroke="#888" stroke-dasharray="4 3"/><text x="${L + 4}" y="${Y(y) - 3}" fill="#666">${esc(label)}</text>`;
  // Lines drawn over one another: say so under the legend.
  const key = (line) => JSON.stringify(line.points.map((p) => [p.x, Number.isFinite(p.y) ? p.y.toFixed(4) : null]));
  const groups = {};
  for (const line of series) (groups[key(line)] ||= []).push(line.name);
  let note = T + 16 * series.length + 14;
  for (const names of Object.values(groups))
    if (names.length > 1) {
      s += `<text x="${W - R + 8}" y="${note}" fill="#666" font-size="11">one line, drawn over each other:</text>`;
      for (const name of names) s += `<text x="${W - R + 16}" y="${(note += 13)}" fill="#666" font-size="11">${esc(name)}</text>`;
      note += 17;
    }
  series.forEach((line, i) => {
    const pts = line.points.filter((p) => Number.isFinite(p.y));
    const c = COLORS[i % COLORS.length];
    s += `<polyline fill="none" stroke="${c}" stroke-width="2" points="${pts.map((p) => `${X(p.x).toFixed(1)},${Y(p.y).toFixed(1)}`).join(' ')}"/>`;
    for (const p of pts) s += `<circle cx="${X(p.x).toFixed(1)}" cy="${Y(p.y).toFixed(1)}" r="2.5" fill="${c}"/>`;
    s += `<rect x="${W - R + 8}" y="${T + 16 * i}" width="12" height="3" fill="${c}"/><text x="${W - R + 24}" y="${T + 16 * i + 5}">${esc(line.name)}</text>`;
  });
  return s + '</svg>\n';
}
const lazySvg = lineChart({
  title: 'hybrid 1:1 from scratch: recall beyond the window W by step',
  xLabel: 'optimizer step (32 sequences each; context 64, 128, 256, then 512)',
  xs: [0, 1600],
  xTicks: [0, 400, 800, 1200, 1600].map((x) => [x, String(x)]),
  hlines: [[0.5, '50%'], [0.9, '90%'], [task.chance_pick, 'pick chance']],
  series: lazy.map((l) => ({ name: `W = ${l.w}`, points: l.points.map((p) => ({ x: p.step, y: p.value })) })),
});
const bins = task.plans[0].bins;
// Bars, not lines: the bins are categories, and a line between them would
// suggest a gradual fall that is not there.
const distSvg = groupedBars({
  title: 'recall by key->query distance (tokens), each arm under its own plan (2 layers)',
  groups: bins.map((bin) => `${bin.lo}-${bin.hi - 1}`),
  hlines: [[task.chance_pick, 'pick chance']],
  series: ARMS.map(([name, spec]) => ({ name: spec, values: plan(name).bins.map((bin) => bin.accuracy ?? NaN) })),
});
fs.writeFileSync(path.join(docs, 'laziness.svg'), lazySvg);
fs.writeFileSync(path.join(docs, 'recall_by_distance.svg'), distSvg);

// --- Pages ----------------------------------------------------------------------

const madeBy = [...ARMS.map(([name]) => name), 'full-heads4', 'per-head25', 'per-head12', 'linear-transfer', 'linear', 'linear64']
  .map((name) => `- \`models/lab/${name}\`: ` + readText(`made_by_${name}.txt`).split('\n')[0].replace('made by: ', '`') + '`').join('\n');
const sections = [
  ['What was run', `Twelve models trained by swan on one task (six of the lab's shape, three of its 4-head twin for the per-head plans of arm 9, three linearized from arm 1 for arm 10), each shipped under \`models/lab/\` (bf16) with its recipe and the commit that made it, and evaluated by \`recipes/lab/report.sh\` on ${task.sequences} held-out sequences per plan (seed ${task.seed}, which no training run used). ` +
    `The task: multi-query associative recall (MQAR) at context ${task.context}, 32 key-value pairs then 32 queries, 64 key and 64 value ids; ${chance}. ` +
    `The shape: 2 layers, dim 128, 1 head of 128, MLP 352 (0.43M parameters). Every arm except 7 continues one base model (a 1:1 hybrid with a window of 2 on layer 0, trained from scratch: the window gives every value the key before it, which the later layer matches) for 600 steps under its own plan, with the same data, seed, curriculum and rate. ` +
    `Window W = ${WINDOW}: with 2 window layers a fact can be relayed at most about ${RELAY} tokens, so "beyond ${RELAY}" is out of every window plan's reach. CPU: ${cpu}.`, null],
  ['Each arm under its plan', 'Recall accuracy by key->query distance bin (every answer the greedy choice), the perplexity of the answer tokens, the keys each query visits (averaged over token-layer pairs, routed layers by the route each token took), the KV cache at 512 and 2048 tokens and decode speed at 512.', mainTable],
  ['Recall by sequence length', `The same 32 pairs with more filler at 2x and 4x the training context, so that keys lie further back than training ever showed (MQAR's analogue of the needle grid: the keys all sit at the start, so depth is distance).`, lengthTable],
  ['Training-free conversion (arm 8)', 'Arm 1, trained under full attention, run under window plans with no retraining, beside the arms trained under them.', conversionTable],
  ['Switch Attention: where the router sends tokens (arm 6)', 'For each class of token, the share that each layer\'s router sends to full attention (tokens in parentheses); a query is far when the key it needs lies outside the layer\'s window.', routeTable],
  ['Large-window laziness (arm 7)', 'The 1:1 hybrid (layer 0 a window of W, layer 1 full) trained from scratch, identically, at each W (W = 2 is the base model). Accuracy beyond the window: the held-out answers whose key lies W or more tokens back (16 or more for W = 2).', lazyTable],
  ['Per-head plans (arm 9)', 'The lab\'s shape with 4 heads of 32 (each its own KV head) instead of 1 of 128, trained the same way (`full-heads4`). Per-head plans keep the KV heads `swan heads --select` ranks highest full and give the others a window of 64 + 4 sinks: first without training, beside the window and hybrid plans, then after 300 steps at context 512 under the plan (`per-head25`, `per-head12`).', perHeadTable],
  ['Choosing the heads (arm 9)', 'The same per-head plans on `full-heads4` without training, with their full KV heads chosen two ways at each share: from attention scores (each KV head\'s largest mass on the answer\'s value, RazorAttention\'s profiling) and by DuoAttention\'s gates (one per KV head mixing full attention with the window, trained 200 steps with the model frozen to keep the final hidden states of full attention on the answer queries, + λ x the sum of the gates, at DuoAttention\'s λ = 0.05 and at 0.2; one training per λ, binarized at each share; equal gates ordered by how hard the distillation still pulls them open).', selectTable],
  ['Linear attention against a window + sinks (arm 10)', 'Arm 1 linearized as LoLCATs does it: every layer becomes causal linear attention through a Hedgehog feature map (F = 64, so φ has 128 entries), whose cache is a state of 128 x 129 floats per layer at any length. Attention transfer trains the feature maps alone for 300 steps (batch 8, lr 1e-2) to reproduce each layer\'s softmax output on the full model\'s stream, then the whole model fine-tunes 300 steps at context 512 (batch 32, lr 5e-4; `recipes/lab/linear.sh`). LoLCATs\' hybrid (`linear:64`: each layer\'s newest 64 keys by softmax with weights γ e^{s - max s} <= γ, γ learned per head from 0.1, the older ones linear with weights φ(q)·φ(k) <= 2) is made the same way, its attention transfer taught by full attention (`linear64`). Beside them, the same arm 1 under a window of 64 + 4 sinks with no training at all. Decode speed: `swan bench` with 32 decode tokens after random context of that depth, the median of three rounds with the models interleaved (bf16 KV for the softmax plans and the hybrid\'s window, the float32 state for the linear parts).', linearTable],
  ['Retrieval heads (arms 1 and 4)', 'Each head\'s attention (from the query that predicts an answer) on the value right after the answer\'s key, where a retrieval head looks, and on the key itself (`swan heads`).', headTable],
];
const claimRows = claims.map((c) => `- **${c.verdict}**: ${c.text} ${c.numbers}`).join('\n');

// The headline: five lines from the deep arms (recipes/lab/deep_report.sh), when measured.
const headline = fs.existsSync(path.join(data, 'deep_headline.json')) ? readJson('deep_headline.json') : [];
let markdown = `# The retrieval lab\n\nWhat each attention plan keeps, measured on models swan trained. Written by \`recipes/lab/report.sh\`; every figure is in \`data/\`.\n\n`;
if (headline.length)
  markdown += `## Headline\n\n${headline.map((l) => `- ${l}`).join('\n')}\n\nThe deep arms, their charts and verdicts: [depth.md](depth.md). Below: the 2-layer arms.\n\n`;
markdown += `## The published claims\n\n${claimRows}\n\n`;
for (const [title, text, t] of sections) {
  markdown += `## ${title}\n\n${text}\n\n`;
  if (t !== null) markdown += md(t) + '\n\n';
  if (title.startsWith('Each arm')) markdown += '![recall by distance](recall_by_distance.svg)\n\n';
  if (title.startsWith('Large-window')) markdown += '![laziness](laziness.svg)\n\n';
}
markdown += `## The models\n\n${madeBy}\n\nThe learning curves of laziness are \`models/lab/laziness/recall_w*.csv\`.\n`;
fs.writeFileSync(path.join(docs, 'README.md'), markdown);

const verdictClass = (v) => v.replace(/ /g, '-');
let page = `<!doctype html><html><head><meta charset="utf-8"><title>swan: the retrieval lab</title><style>
body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 7px}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f4f4f4}
.reproduced{color:#1a7f37}.not-reproduced{color:#cf222e}.mixed{color:#9a6700}
</style></head><body><h1>The retrieval lab</h1>
<p>What each attention plan keeps, measured on models swan trained. Written by <code>recipes/lab/report.sh</code>; every figure is in <code>data/</code>.</p>
` + (headline.length ? `<h2>Headline</h2><ul>${headline.map((l) => `<li>${prose(l)}</li>`).join('')}</ul><p>The deep arms, their charts and verdicts: <a href="depth.md">depth.md</a>. Below: the 2-layer arms.</p>` : '') + `
<h2>The published claims</h2><ul>` +
  claims.map((c) => `<li><b class="${verdictClass(c.verdict)}">${c.verdict}</b>: ${prose(c.text)} ${prose(c.numbers)}</li>`).join('') + '</ul>';
for (const [title, text, t] of sections) {
  page += `<h2>${esc(title)}</h2><p>${prose(text)}</p>`;
  if (t !== null) page += html(t);
  if (title.startsWith('Each arm')) page += distSvg;
  if (title.startsWith('Large-window')) page += lazySvg;
}
page += '</body></html>\n';
fs.writeFileSync(path.join(docs, 'index.html'), page);
console.log(`wrote ${path.join(docs, 'README.md')} and ${path.join(docs, 'index.html')}`);
for (const c of claims) console.log(`  ${c.verdict}: ${c.text}`);
