#!/usr/bin/env node
// Load and fault test for `swan serve` over loopback: N concurrent
// streaming clients for a fixed time, random prompt lengths, random
// disconnects, a few malformed requests. Checks that every response is
// well formed, that no request that should succeed fails, and that the
// server's KV memory returns to its idle level afterwards. Prints
// requests/s and tokens/s. Exit code 0 = all checks passed.
//
//   node scripts/load_test_serve.mjs --swan build/swan --model DIR [--attn SPEC]
//        [--clients 32] [--duration 120] [--kv-budget 256] [--seed 1] [--threads N]
//        [--disconnect-rate 0.15] [--bad-rate 0.05] [--prompt-cache MiB | --no-prompt-cache]
//        [--rounds 2] [--max-429 N] [--max-growth-mib M]
// --rounds splits the run, with an idle look after each round; --max-429
// fails a run with more than N 429s, --max-growth-mib one whose allocator
// in-use bytes grow more than M MiB from the first round to the last.
//   node scripts/load_test_serve.mjs --url http://127.0.0.1:8080 ...   (a running server)
import { spawn } from 'node:child_process';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, word, i, all) => {
    if (word.startsWith('--')) pairs.push([word.slice(2), all[i + 1] && !all[i + 1].startsWith('--') ? all[i + 1] : 'true']);
    return pairs;
  }, []));
const clients = Number(args.clients ?? 32);
const durationS = Number(args.duration ?? 120);
const disconnectRate = Number(args['disconnect-rate'] ?? 0.15);
const badRate = Number(args['bad-rate'] ?? 0.05);
let seed = Number(args.seed ?? 1);

// A small deterministic generator (mulberry32) so runs can be repeated.
function random() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (xs) => xs[Math.floor(random() * xs.length)];
const between = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1));

const words = ('once upon a time there was a little girl named lily she loved to play outside in the park ' +
  'one day saw big red ball wanted it but too high her mom said we can get friend tom dog cat sun happy ' +
  'tree bird sky blue jump run fast slow home food cake smile').split(' ');
const prompt = (n) => Array.from({ length: n }, () => pick(words)).join(' ');

async function startServer() {
  if (args.url) return { url: args.url, stop: async () => {} };
  if (!args.swan || !args.model) throw new Error('give --url, or --swan PATH --model DIR');
  const argv = ['serve', '-m', args.model, '--host', '127.0.0.1', '--port', '0',
    '--kv-budget', String(args['kv-budget'] ?? 256)];
  if (args.attn) argv.push('--attn', args.attn);
  if (args.parallel) argv.push('--parallel', args.parallel);
  if (args['prompt-cache']) argv.push('--prompt-cache', args['prompt-cache']);
  if (args['no-prompt-cache']) argv.push('--no-prompt-cache');
  if (args.threads) argv.push('-t', args.threads);
  const child = spawn(args.swan, argv, { stdio: ['ignore', 'inherit', 'pipe'] });
  const url = await new Promise((resolve, reject) => {
    let err = '';
    const timer = setTimeout(() => reject(new Error('server did not start in 60 s: ' + err)), 60000);
    child.stderr.on('data', (d) => {
      err += d;
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(err);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.on('exit', (code) => reject(new Error(`server exited (${code}): ${err}`)));
  });
  child.stderr.on('data', (d) => process.stderr.write(d));
  return {
    url,
    stop: () => new Promise((resolve) => { child.on('exit', resolve); child.kill('SIGTERM'); }),
  };
}

const stats = {
  ok: 0, disconnected: 0, rejected429: 0, badExpected: 0, failures: [], tokens: 0, promptTokens: 0,
  cachedTokens: 0, ttftMs: [],
};
const fail = (what) => { if (stats.failures.length < 20) stats.failures.push(what); else stats.failures.length++; };

function checkChunk(obj, chat) {
  if (typeof obj !== 'object' || obj === null) return 'chunk is not an object';
  if (obj.object !== (chat ? 'chat.completion.chunk' : 'text_completion')) return 'wrong object ' + obj.object;
  if (typeof obj.id !== 'string' || typeof obj.created !== 'number') return 'missing id/created';
  if (!Array.isArray(obj.choices)) return 'choices missing';
  return null;
}

async function streamOne(url) {
  const chat = random() < 0.5;
  const maxTokens = between(1, 96);
  const body = { max_tokens: maxTokens, stream: true, stream_options: { include_usage: true },
                 temperature: pick([0, 0.7, 1.0]), seed: between(0, 1e6) };
  if (random() < 0.3) body.stop = [pick(words)];
  const text = prompt(between(1, 150));
  if (chat) body.messages = [{ role: 'user', content: text }];
  else body.prompt = text;
  const disconnectAfter = random() < disconnectRate ? between(1, 8) : Infinity;
  const controller = new AbortController();
  const t0 = performance.now();
  let res;
  try {
    res = await fetch(url + (chat ? '/v1/chat/completions' : '/v1/completions'), {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
      signal: controller.signal,
    });
  } catch (e) { fail('fetch failed: ' + e.message); return; }
  if (res.status === 429) { stats.rejected429++; await res.text(); return; }
  if (res.status !== 200) { fail(`status ${res.status}: ${await res.text()}`); return; }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '', chunks = 0, done = false, finish = null, usage = null, first = true;
  try {
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const event = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        if (event.startsWith(':')) continue;  // keep-alive comment
        if (!event.startsWith('data: ')) { fail('not an SSE data line: ' + event.slice(0, 80)); return; }
        const data = event.slice(6);
        if (data === '[DONE]') { done = true; continue; }
        if (done) { fail('data after [DONE]'); return; }
        let obj;
        try { obj = JSON.parse(data); } catch { fail('bad JSON in stream: ' + data.slice(0, 80)); return; }
        if (obj.error) { fail('error in stream: ' + JSON.stringify(obj.error)); return; }
        const bad = checkChunk(obj, chat);
        if (bad) { fail(bad); return; }
        if (first) { stats.ttftMs.push(performance.now() - t0); first = false; }
        if (obj.choices[0]?.finish_reason) finish = obj.choices[0].finish_reason;
        if (obj.usage) usage = obj.usage;
        if (++chunks >= disconnectAfter) {
          controller.abort();
          stats.disconnected++;
          return;
        }
      }
    }
  } catch (e) {
    if (e.name === 'AbortError') { stats.disconnected++; return; }
    fail('stream broke: ' + e.message); return;
  }
  if (!done) { fail('stream ended without [DONE]'); return; }
  if (finish !== 'stop' && finish !== 'length') { fail('finish_reason ' + finish); return; }
  if (!usage || usage.completion_tokens > maxTokens || usage.total_tokens !== usage.prompt_tokens + usage.completion_tokens) {
    fail('bad usage ' + JSON.stringify(usage)); return;
  }
  if (finish === 'length' && usage.completion_tokens !== maxTokens) { fail('length before max_tokens'); return; }
  stats.ok++;
  stats.tokens += usage.completion_tokens;
  stats.promptTokens += usage.prompt_tokens;
  stats.cachedTokens += usage.prompt_tokens_details?.cached_tokens ?? 0;
}

async function badOne(url) {
  const cases = [
    ['{"prompt": "x", ', 400],
    [JSON.stringify({ prompt: 'x', max_tokens: -5 }), 400],
    [JSON.stringify({ prompt: 'x', bogus_field: 1 }), 400],
    [JSON.stringify({ prompt: prompt(20), max_tokens: 100000000 }), 400],  // past any context
  ];
  const [body, want] = pick(cases);
  const res = await fetch(url + '/v1/completions', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
  const text = await res.text();
  let obj = null;
  try { obj = JSON.parse(text); } catch { /* checked below */ }
  if (res.status !== want || typeof obj?.error?.message !== 'string') fail(`bad request got ${res.status}: ${text.slice(0, 120)}`);
  else stats.badExpected++;
}

async function health(url) { return (await fetch(url + '/health')).json(); }

async function idle(url, timeoutMs = 30000) {
  const t0 = Date.now();
  for (;;) {
    const h = await health(url);
    if (h.running === 0 && h.waiting === 0) return h;
    if (Date.now() - t0 > timeoutMs) return h;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const server = await startServer();
let exitCode = 0;
try {
  // Warm up once, then take the idle level.
  await fetch(server.url + '/v1/completions', { method: 'POST', body: JSON.stringify({ prompt: 'once', max_tokens: 4 }) }).then((r) => r.text());
  const before = await idle(server.url);
  const t0 = performance.now();
  let requests = 0;
  const load = async (seconds) => {
    const deadline = performance.now() + seconds * 1000;
    await Promise.all(Array.from({ length: clients }, async () => {
      while (performance.now() < deadline) {
        requests++;
        if (random() < badRate) await badOne(server.url);
        else await streamOne(server.url);
      }
    }));
  };
  // Rounds with an idle look after each: a leak grows in the later ones as
  // in the first, allocator slack settles.
  const rounds = Number(args.rounds ?? 2);
  const idleAfter = [];
  for (let r = 0; r < rounds; ++r) {
    await load(durationS / rounds);
    idleAfter.push(await idle(server.url));
  }
  const mid = idleAfter[0];
  const elapsed = (performance.now() - t0) / 1000;
  const after = await idle(server.url);
  const ttft = stats.ttftMs.sort((a, b) => a - b);
  const q = (p) => ttft.length ? ttft[Math.min(ttft.length - 1, Math.floor(p * ttft.length))].toFixed(0) : '-';
  const mibOf = (h) => `resident ${mib(h.resident_bytes)} MiB, allocator in use ${mib(h.allocator_in_use_bytes)} MiB`;
  const mib = (b) => (b / 1048576).toFixed(1);
  console.log(`clients ${clients}, ${elapsed.toFixed(1)} s: ${requests} requests (${(requests / elapsed).toFixed(1)} req/s), ` +
    `${stats.ok} completed, ${stats.disconnected} disconnected on purpose, ${stats.badExpected} bad requests answered 4xx, ` +
    `${stats.rejected429} rejected 429, ${stats.failures.length} failures`);
  console.log(`generated ${stats.tokens} tokens (${(stats.tokens / elapsed).toFixed(1)} tok/s); prompt tokens ${stats.promptTokens}, ` +
    `${stats.cachedTokens} reused from the prompt cache; time to first token p50 ${q(0.5)} ms, p90 ${q(0.9)} ms, ` +
    `p99 ${q(0.99)} ms, max ${q(1)} ms`);
  console.log(`idle before: ${mibOf(before)}; after the first of ${rounds} rounds: ${mibOf(mid)}; after the last: ` +
    `${mibOf(after)}`);
  console.log(`server memory: resident ${mib(before.resident_bytes)} MiB idle before, ${mib(after.resident_bytes)} MiB idle after ` +
    `(prompt cache ${mib(after.prompt_cache_bytes)} MiB in ${after.prompt_cache_entries} entries); ` +
    `running KV ${after.kv_bytes} B, reserved ${after.kv_reserved_bytes} B after; allocated (anonymous) ` +
    `${mib(before.anonymous_resident_bytes)} MiB before, ${mib(mid.anonymous_resident_bytes)} MiB after round 1 ` +
    `(prompt cache ${mib(mid.prompt_cache_bytes)} MiB), ${mib(after.anonymous_resident_bytes)} MiB after; allocator: ` +
    `in use ${mib(mid.allocator_in_use_bytes)} then ${mib(after.allocator_in_use_bytes)} MiB, free ` +
    `${mib(mid.allocator_free_bytes)} then ${mib(after.allocator_free_bytes)} MiB`);
  for (const f of stats.failures) console.log('FAIL: ' + f);
  if (stats.failures.length > 0) exitCode = 1;
  if (after.running !== 0 || after.waiting !== 0 || after.kv_bytes !== 0 || after.kv_reserved_bytes !== 0) {
    console.log('FAIL: the server did not return to idle: ' + JSON.stringify(after));
    exitCode = 1;
  }
  // Allocated memory may keep the prompt cache and slack, nothing more.
  // Anonymous pages only: library code touched on the way (oneDNN's kernels
  // for this CPU) is resident too, but it is not memory held. The slack was
  // 64 MiB; on a 2-core AMD Zen 5 (70 requests/s) allocated memory grows by
  // about 60 MiB over the first 300 requests beyond the prompt cache, then
  // by ~1 MiB/s (10-20 s), with no leak LeakSanitizer can see: 96 MiB, and
  // the half-way figure printed above to follow it.
  const MiB = 1048576;
  if (after.anonymous_resident_bytes > before.anonymous_resident_bytes + after.prompt_cache_bytes + 96 * MiB) {
    console.log('FAIL: allocated memory grew past the prompt cache and its slack');
    exitCode = 1;
  }
  if (stats.ok === 0) { console.log('FAIL: no request completed'); exitCode = 1; }
  const growth = (after.allocator_in_use_bytes - mid.allocator_in_use_bytes) / 1048576;
  if (args['max-growth-mib'] !== undefined && growth > Number(args['max-growth-mib'])) {
    console.log(`FAIL: allocator in-use bytes grew ${growth.toFixed(1)} MiB from the first round to the last ` +
      `(at most ${args['max-growth-mib']} allowed)`);
    exitCode = 1;
  }
  if (args['max-429'] !== undefined && stats.rejected429 > Number(args['max-429'])) {
    console.log(`FAIL: ${stats.rejected429} requests got 429 (at most ${args['max-429']} allowed)`);
    exitCode = 1;
  }
} finally {
  await server.stop();
}
process.exit(exitCode);
