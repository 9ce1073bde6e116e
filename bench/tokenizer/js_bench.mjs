// Measures gpt-tokenizer@4.0.0 and tiktoken@1.0.22 on the corpora written by
// `tokenizer_bench --write-corpus DIR`, reads missyd's figures (JSON lines from
// `tokenizer_bench --measure DIR`) and prints the comparison table.
// Usage: node js_bench.mjs CORPUS_DIR MISSYD_RESULTS_FILE
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const [dir, missydFile] = process.argv.slice(2);
const require = createRequire(import.meta.url);  // bench/tokenizer/node_modules
const tiktoken = require('tiktoken');
const gpt = {
  o200k_base: require('gpt-tokenizer/encoding/o200k_base'),
  cl100k_base: require('gpt-tokenizer/encoding/cl100k_base'),
};
const noSpecial = { disallowedSpecial: new Set() };  // content is plain text

// Best wall-clock and best CPU seconds of one run (CPU time is what counts on a busy
// machine; node's process CPU includes its helper threads, e.g. the GC).
function best(fn) {
  fn();  // warm-up (and caches, where the library has them)
  let wall = Infinity, cpu = Infinity, total = 0;
  for (let i = 0; i < 20 && (i < 3 || total < 2); ++i) {
    const a = process.hrtime.bigint();
    const c = process.cpuUsage();
    fn();
    const d = process.cpuUsage(c);
    const w = Number(process.hrtime.bigint() - a) / 1e9;
    wall = Math.min(wall, w);
    cpu = Math.min(cpu, (d.user + d.system) / 1e6);
    total += w;
  }
  return { wall, cpu };
}

const missyd = fs.readFileSync(missydFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
const corpora = ['mixed', 'cjk'];
const rows = [];
let ok = true;
for (const corpus of corpora) {
  const text = fs.readFileSync(path.join(dir, `${corpus}.txt`), 'utf8');
  for (const encoding of ['o200k_base', 'cl100k_base']) {
    const m = missyd.find((r) => r.corpus === corpus && r.encoding === encoding);
    const enc = tiktoken.get_encoding(encoding);
    let tkCount = 0, gptCount = 0;
    const tk = best(() => { tkCount = enc.encode_ordinary(text).length; });
    const g = best(() => { gptCount = gpt[encoding].countTokens(text, noSpecial); });
    enc.free();
    const same = tkCount === m.tokens && gptCount === m.tokens;
    ok &&= same;
    for (const clock of ['cpu', 'wall']) {
      const ms = m[`${clock}_seconds`];
      const fastest = Math.max(tkCount / tk[clock], gptCount / g[clock]);
      rows.push({ clock, corpus, encoding, bytes: m.bytes, tokens: m.tokens, missyd: m.tokens / ms,
        gpt: gptCount / g[clock], tk: tkCount / tk[clock], ratio: m.tokens / ms / fastest, same,
        counts: `${m.tokens}/${gptCount}/${tkCount}` });
    }
  }
}
const M = (x) => (x / 1e6).toFixed(2).padStart(8);
console.log('Tokenizer throughput in million tokens/s (best run; cpu = CPU time, wall = elapsed)');
console.log('clock corpus  encoding     bytes    tokens    missyd  gpt-tok4  tiktoken  vs fastest  counts equal');
for (const r of rows) {
  console.log(`${r.clock.padEnd(5)} ${r.corpus.padEnd(7)} ${r.encoding.padEnd(11)} ${String(r.bytes).padStart(8)} ${String(r.tokens).padStart(8)} ${M(r.missyd)}  ${M(r.gpt)}  ${M(r.tk)}  ${(r.ratio.toFixed(2) + 'x').padStart(9)}   ${r.same ? 'yes' : 'NO ' + r.counts}`);
}
console.log('\nHeuristic (context.tokenizer: heuristic) against exact o200k_base counts');
console.log('corpus     exact  heuristic   error');
for (const r of missyd.filter((x) => x.encoding === 'o200k_base')) {
  const err = (r.heuristic - r.tokens) / r.tokens * 100;
  console.log(`${r.corpus.padEnd(7)} ${String(r.tokens).padStart(8)} ${String(r.heuristic).padStart(10)}  ${(err >= 0 ? '+' : '') + err.toFixed(1)}%`);
}
for (const clock of ['cpu', 'wall']) {
  const mixed = rows.find((r) => r.clock === clock && r.corpus === 'mixed' && r.encoding === 'o200k_base');
  console.log(`target (${clock}): missyd >= 3x the fastest JS tokenizer on the mixed corpus, o200k_base: ${mixed.ratio.toFixed(2)}x ${mixed.ratio >= 3 ? 'met' : 'NOT met'}`);
}
if (!ok) {
  console.log('token counts differ between implementations');
  process.exit(1);
}
