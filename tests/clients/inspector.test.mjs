// The inspector page (docs/INSPECTOR.md) in Debian's chromium, headless, against a real
// missyd holding sessions replayed from ../shared/data/trajectories/: each page loads
// without console errors, its numbers equal the API's, a live update appears after an
// append, nothing is requested from another host, the Content-Security-Policy is strict
// and another uid is refused. Screenshots go to $MISSY_SCREENSHOT_DIR (CTest: the build's
// test-output/inspector), else a temporary directory.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { chromiumPath, launchChromium } from './cdp.mjs';
import { direct, freePort, repoRoot, startMissyd, tempDir } from './missyd.mjs';

const trajectories = path.resolve(repoRoot, '../shared/data/trajectories');
const replayed = ['princeton-nlp__SWE-agent-1', 'OpenHands__benchmarks-1', 'openai__codex-1'];
const shots = process.env.MISSY_SCREENSHOT_DIR ?? tempDir('missy-inspector-shots-');
const skip = direct ? 'direct mode: no daemon' : !chromiumPath() ? 'chromium is not installed (scripts/install-test-clients installs it)'
  : !fs.existsSync(trajectories) ? `no trajectories at ${trajectories}` : false;

let d;
let browser;
let page;
let ui;
let uiOwn;  // the page's own listener (context.ui.listen)
let compacted;  // the answer of the forced compaction: a context with its budget report
const ids = [];

function get(url, headers = {}) {
  return new Promise((resolve, reject) => {
    http.get(url, { headers }, (res) => {
      let body = '';
      res.on('data', (c) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    }).on('error', reject);
  });
}

async function api(method, urlPath, body) {
  const r = await d.api(method, urlPath, body);
  if (r.status >= 300) throw new Error(`${method} ${urlPath}: ${r.status} ${r.text}`);
  return r.json;
}

// One trajectory as a session: appended a few messages at a time, a context after each.
async function replay(name) {
  const lines = fs.readFileSync(path.join(trajectories, `${name}.jsonl`), 'utf8').split('\n').filter(Boolean);
  const messages = lines.map((l) => JSON.parse(l));
  const id = `ui-${name.replace(/[^A-Za-z0-9.-]/g, '-')}`.slice(0, 100);
  await api('POST', '/v1/sessions', { id, model: 'gpt-4o', context_window: 12000 });
  for (let i = 0; i < messages.length; i += 6) {
    await api('POST', `/v1/sessions/${id}/messages`, { messages: messages.slice(i, i + 6) });
    const r = await d.api('POST', `/v1/sessions/${id}/context`, { max_output_tokens: 1000 });
    // A turn larger than the window is refused (422): the replay goes on without it.
    if (r.status !== 200 && r.status !== 422) throw new Error(`context of ${id}: ${r.status} ${r.text}`);
  }
  return id;
}

async function open(hash) {
  await page.eval(`location.hash = ${JSON.stringify(hash)}`);
  await page.waitFor(`document.body.dataset.ready === ${JSON.stringify(hash)}`, 20000);
  await page.screenshot(path.join(shots, `${hash.replace(/[^a-z0-9]+/gi, '_').replace(/^_|_$/g, '')}.png`));
}

before(async () => {
  if (skip) return;
  fs.mkdirSync(shots, { recursive: true });
  // The upstreams are never called: nothing here is proxied.
  const ownPort = await freePort();
  d = await startMissyd({
    upstream: { url: 'http://127.0.0.1:9', openaiBaseURL: 'http://127.0.0.1:9/v1' },
    extraConfig: `  ui:\n    listen: 127.0.0.1:${ownPort}`,
  });
  ui = `${d.baseUrl}/ui/`;
  uiOwn = `http://127.0.0.1:${ownPort}/ui/`;
  for (const name of replayed) ids.push(await replay(name));
  // A forced compaction: summaries to show in the tree, a mark on the timeline.
  compacted = await api('POST', `/v1/sessions/${ids[2]}/compact`, { reason: 'inspector test', context_window: 12000, max_output_tokens: 1000 });
  browser = await launchChromium();
  page = await browser.newPage();
  await page.goto(`${ui}#/sessions`);
});

after(async () => {
  if (browser) await browser.close();
  if (d) await d.stop();
});

test('the page is served with a strict Content-Security-Policy and loads nothing from another host', { skip }, async () => {
  const r = await get(ui);
  assert.equal(r.status, 200);
  assert.match(r.headers['content-type'], /^text\/html/);
  const csp = r.headers['content-security-policy'];
  assert.ok(csp, 'no Content-Security-Policy header');
  for (const directive of ["default-src 'self'", "connect-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"]) {
    assert.ok(csp.includes(directive), `CSP lacks ${directive}: ${csp}`);
  }
  assert.ok(!/https?:\/\/|\*/.test(csp), `CSP names another source: ${csp}`);
  assert.equal(r.headers['x-content-type-options'], 'nosniff');
  const config = await get(`${d.baseUrl}/ui/api/v1/config`);
  assert.equal(config.status, 403);
  // A page of another site that rebinds its name to 127.0.0.1 is refused.
  assert.equal((await get(ui, { host: `evil.example:${d.port}` })).status, 403);
  // The page's own listener serves the same page, and nothing of the proxy.
  const own = await get(uiOwn);
  assert.equal(own.status, 200);
  assert.equal(own.body, r.body);
  assert.equal(own.headers['content-security-policy'], csp);
  assert.equal((await get(uiOwn.replace('/ui/', '/v1/models'))).status, 404);
});

test('sessions: the table lists the API\'s sessions and updates live after an append', { skip }, async () => {
  await open('#/sessions');
  const sessions = (await api('GET', '/v1/sessions?limit=1000')).sessions;
  const shown = await page.eval(`document.querySelector('.count').dataset.count`);
  assert.equal(Number(shown), sessions.length);
  const rows = await page.eval(`[...document.querySelectorAll('#sessions-table tbody tr')].map((tr) => ({
    id: tr.dataset.sessionId,
    messages: Number(tr.querySelector('[data-col=messages]').dataset.value),
    tokens: Number(tr.querySelector('[data-col=tokens]').dataset.value) }))`);
  for (const s of sessions) {
    const row = rows.find((r) => r.id === s.id);
    assert.ok(row, `no row for ${s.id}`);
    assert.equal(row.messages, s.message_count, s.id);
    assert.equal(row.tokens, s.total_tokens, s.id);
  }
  // Live: an append shows without a reload.
  await page.waitFor(`document.getElementById('live').dataset.state === 'live'`);
  const id = ids[0];
  const before = sessions.find((s) => s.id === id).message_count;
  await api('POST', `/v1/sessions/${id}/messages`, { messages: [{ role: 'user', content: 'one more thing from the inspector test' }] });
  await page.waitFor(`Number(document.querySelector('tr[data-session-id="${id}"] [data-col=messages]').dataset.value) === ${before + 1}`, 10000);
  // Sorting from the keyboard: Enter on a column's button sorts by it.
  await page.eval(`[...document.querySelectorAll('#sessions-table th button')].find((b) => b.textContent === 'Messages').focus()`);
  await page.key('Enter');
  await page.waitFor(`[...document.querySelectorAll('#sessions-table th')].find((th) => th.textContent.startsWith('Messages')).getAttribute('aria-sort') === 'descending'`);
  const order = await page.eval(`[...document.querySelectorAll('#sessions-table tbody [data-col=messages]')].map((td) => Number(td.dataset.value))`);
  assert.deepEqual(order, order.slice().sort((x, y) => y - x));
  // Filtering.
  await page.eval(`(() => { const f = document.getElementById('session-filter'); f.value = 'codex'; f.dispatchEvent(new Event('input')); })()`);
  assert.equal(await page.eval(`document.querySelectorAll('#sessions-table tbody tr').length`), 1);
  await page.screenshot(path.join(shots, 'sessions_filtered.png'));
});

test('a session: the timeline\'s request shows the sections of its budget report', { skip }, async (t) => {
  const id = ids[2];
  const list = await d.api('GET', `/v1/sessions/${id}/contexts?limit=1000`);
  if (list.status === 404) return t.skip('GET /v1/sessions/{id}/contexts is not in this daemon yet');
  await open(`#/session/${id}`);
  const contexts = list.json.contexts.slice().sort((a, b) => a.seq - b.seq);
  assert.equal(Number(await page.eval(`document.getElementById('timeline').dataset.requests`)), contexts.length);
  const check = async (ctx) => {
    await page.waitFor(`document.getElementById('context-detail').dataset.contextId === ${JSON.stringify(ctx.context_id)}`);
    const sections = await page.eval(`Object.fromEntries([...document.querySelectorAll('#context-sections tr[data-section]')].map((tr) => [tr.dataset.section, Number(tr.dataset.value)]))`);
    for (const [k, v] of Object.entries(ctx.sections)) {
      assert.equal(sections[k], typeof v === 'number' ? v : v.tokens, `section ${k} of ${ctx.context_id}`);
    }
    assert.equal(sections.used, ctx.used_tokens);
    assert.equal(sections.budget, ctx.budget);
  };
  await check(contexts[contexts.length - 1]);
  // The last request is the compaction's: the page's sections are its budget report's.
  assert.equal(contexts[contexts.length - 1].context_id, compacted.context_id);
  const shown = await page.eval(`Object.fromEntries([...document.querySelectorAll('#context-sections tr[data-section]')].map((tr) => [tr.dataset.section, Number(tr.dataset.value)]))`);
  const b = compacted.budget;
  assert.equal(shown.used, b.used_tokens);
  assert.equal(shown.budget, b.total);
  assert.equal(shown.window, b.context_window);
  assert.equal(shown.tools, b.tools.tokens);
  assert.equal(shown.memory, b.memory.tokens);
  assert.equal(shown.learnings, b.learnings.tokens);
  assert.equal(shown.summaries, b.summaries.tokens);
  assert.equal(shown.history, b.history.tokens);
  assert.equal(shown.task, b.task.tokens);
  // The keyboard picks the request before it.
  await page.eval(`document.getElementById('timeline').focus()`);
  await page.key('ArrowLeft');
  await check(contexts[contexts.length - 2]);
  await page.waitFor(`document.querySelector('[data-fact=evicted]')`);
  await page.screenshot(path.join(shots, 'session_previous_request.png'));
});

test('the summary tree shows each node\'s covered range, and its originals', { skip }, async () => {
  const id = ids[2];
  const { summaries } = await api('GET', `/v1/sessions/${id}/summaries`);
  assert.ok(summaries.length > 0, 'the forced compaction wrote no summary');
  await open(`#/tree/${id}`);
  const nodes = await page.eval(`[...document.querySelectorAll('.node')].map((n) => ({ id: n.dataset.summaryId, first: Number(n.dataset.firstSeq), last: Number(n.dataset.lastSeq), range: n.querySelector('.range').textContent }))`);
  assert.equal(nodes.length, summaries.length);
  for (const s of summaries) {
    const n = nodes.find((x) => x.id === s.id);
    assert.ok(n, `no node for ${s.id}`);
    assert.equal(n.first, s.first_seq);
    assert.equal(n.last, s.last_seq);
    assert.equal(n.range, `seq ${s.first_seq}–${s.last_seq}`);
  }
  await page.eval(`document.querySelector('.node .node-head').click()`);
  await page.waitFor(`document.querySelector('.node .originals li.msg')`);
  const firstSeq = await page.eval(`Number(document.querySelector('.node .originals li.msg').dataset.seq)`);
  const first = summaries.find((s) => s.id === nodes[0].id) ?? summaries[0];
  assert.ok(firstSeq >= first.first_seq && firstSeq <= first.last_seq, `original seq ${firstSeq} outside ${first.first_seq}-${first.last_seq}`);
  await page.screenshot(path.join(shots, 'tree_expanded.png'));
});

test('audit and health load, with the chain verified', { skip }, async () => {
  await open('#/audit');
  assert.equal(await page.eval(`document.getElementById('audit-verify').dataset.ok`), 'true');
  assert.ok(Number(await page.eval(`document.querySelector('.count, .hint[data-shown]')?.dataset.shown ?? 0`)) > 0);
  await open('#/health');
  assert.equal(await page.eval(`document.querySelector('[data-fact=status]').textContent`), 'ok');
  // The proxy's upstreams as configured (the test's dead loopback port), no key anywhere.
  const upstreams = await page.eval(`document.getElementById('upstreams').textContent`);
  assert.ok(upstreams.includes('http://127.0.0.1:9'), upstreams);
});

test('10,000 requests draw in under a second', { skip }, async () => {
  const ms = await page.eval(`(async () => {
    const { Timeline } = await import('./timeline.js');
    const contexts = Array.from({ length: 10000 }, (_, i) => ({ context_id: 'c' + i, at: String(i).padStart(6, '0'),
      used_tokens: 3000 + (i % 500), budget: 5000, window: 6000, zone: 'safe',
      sections: { system: 400, tools: 300, task: 100, memory: 50, learnings: 20, summaries: 600, history: 1500 + (i % 500), fresh_tail: 30 } }));
    const host = document.createElement('div');
    document.body.append(host);
    const canvas = document.createElement('canvas');
    host.append(canvas);
    const t0 = performance.now();
    const tl = new Timeline(canvas, contexts, { summaries: [10, 5000], forced: [7000] }, () => {});
    tl.draw();
    const took = performance.now() - t0;
    tl.destroy();
    host.remove();
    return took;
  })()`);
  assert.ok(ms < 1000, `drawing 10,000 requests took ${ms} ms`);
});

test('no console error and no request to another host, on every page', { skip }, async () => {
  assert.deepEqual(page.problems, []);
  const origin = new URL(d.baseUrl).origin;
  const foreign = page.requests.filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith('data:') && u !== 'about:blank');
  assert.deepEqual(foreign, []);
});

test('another uid is refused on the page\'s listeners', { skip: skip || (process.getuid?.() !== 0 && 'needs root to connect as another uid') }, () => {
  for (const url of [ui, uiOwn]) {
    const script = `require('http').get(${JSON.stringify(url)}, (r) => { console.log(r.statusCode); r.resume(); }).on('error', (e) => console.log('error ' + e.code))`;
    const r = spawnSync(process.execPath, ['-e', script], { uid: 65534, gid: 65534, encoding: 'utf8', timeout: 10000, cwd: os.tmpdir() });
    assert.equal(r.stdout.trim(), '403', `${url}: stdout ${r.stdout} stderr ${r.stderr}`);
  }
});
