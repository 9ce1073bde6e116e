// Shared by the client tests: a fetch that records what an SDK really sent, JSON equality,
// finding the proxied session in the daemon's store.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { isDeepStrictEqual } from 'node:util';
import { listSessions, sessionMessages } from './missyd.mjs';

/** JSON equality: both sides as they would be on the wire (undefined members dropped). */
export function assertJsonEqual(actual, expected, message) {
  assert.deepStrictEqual(wire(actual), wire(expected), message);
}

/** A value as it is on the wire: JSON-encoded and decoded (undefined stays undefined). */
export function wire(value) {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

/** A fetch for the SDKs' `fetch` option that keeps each request's method, url, headers and
 *  parsed JSON body in `sent` before passing it on. */
export function recordingFetch() {
  const sent = [];
  const fn = async (url, init = {}) => {
    const headers = Object.fromEntries(new Headers(init.headers ?? {}).entries());
    let body = null;
    if (typeof init.body === 'string') {
      try { body = JSON.parse(init.body); } catch { body = init.body; }
    }
    sent.push({ method: init.method ?? 'GET', url: String(url), headers, body });
    return fetch(url, init);
  };
  return { fetch: fn, sent };
}

/** A promise and its resolve, for gating a stream. */
export function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((res, rej) => { resolve = res; reject = rej; });
  return { promise, resolve, reject };
}

/** Rejects after ms with `what` unless p settles first. */
export function within(p, ms, what) {
  let t;
  return Promise.race([
    p.finally(() => clearTimeout(t)),
    new Promise((_, rej) => { t = setTimeout(() => rej(new Error(`${what}: not within ${ms} ms`)), ms); }),
  ]);
}

/** The stored session a proxied conversation went to: the one whose id is `name` (sent as
 *  X-Missy-Session), else the only session there is. With its messages. */
export async function findSession(target, name) {
  const sessions = await listSessions(target);
  let s = sessions.find((x) => x.id === name) ?? sessions.find((x) => x.id.includes(name));
  if (!s && sessions.length === 1) s = sessions[0];
  if (!s) throw new Error(`no stored session named ${name}; sessions: ${sessions.map((x) => x.id).join(', ')}`);
  s.messages = await sessionMessages(target, s.id);
  return s;
}

/** Checks through the daemon's API that session `name` holds `count` messages (a no-op in
 *  direct mode, where there is no daemon). */
export async function assertStored(target, name, count, what) {
  if (target.direct) return;
  const s = await findSession(target, name);
  assert.equal(s.messages.length, count,
    `${what}: stored session ${s.id} holds ${s.messages.length} messages, expected ${count}:\n` +
    s.messages.map((m) => `  ${m.seq} ${m.role} ${JSON.stringify(m.content)?.slice(0, 80)}`).join('\n'));
}

// Headers a proxy may set itself (hop-by-hop, framing, its own session header).
const OWN_HEADERS = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'accept-encoding',
                             'keep-alive', 'x-missy-session']);

/** Every header the client sent (but hop-by-hop ones) reached the upstream with its value. */
export function assertHeadersForwarded(upHeaders, sentHeaders, what) {
  for (const [k, v] of Object.entries(sentHeaders)) {
    if (OWN_HEADERS.has(k)) continue;
    assert.equal(upHeaders[k], v, `${what}: header ${k} forwarded`);
  }
}

/** Runs a command to its end (killed after timeoutMs): {code, signal, stdout, stderr, ms}. */
export async function runCli(cmd, args, { cwd, env, timeoutMs = 90000 } = {}) {
  const started = Date.now();
  const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => { stdout += d; });
  child.stderr.on('data', (d) => { stderr += d; });
  let timedOut = false;
  const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, timeoutMs);
  const [code, signal] = await new Promise((resolve) => {
    child.on('error', (e) => { stderr += String(e); resolve([-1, null]); });
    child.on('close', (c, s) => resolve([c, s]));
  });
  clearTimeout(timer);
  return { code, signal, stdout, stderr, timedOut, ms: Date.now() - started };
}

/** A minimal environment for a CLI under test: PATH and the given variables only (no
 *  credentials or settings of the person running the tests leak in). */
export function cleanEnv(vars) {
  const env = { PATH: process.env.PATH, LANG: 'C.UTF-8', TERM: 'dumb', NO_COLOR: '1' };
  if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR;
  return { ...env, ...vars };
}

/** Anthropic messages reached the upstream JSON-equal to what the agent sent, except that
 *  thinking blocks of assistant turns before the last one may be left out (the API ignores
 *  them; the last assistant turn's must go out whole, signature included). */
export function assertAnthropicMessagesKept(upMessages, sentMessages, what) {
  const a = wire(upMessages);
  const b = wire(sentMessages);
  if (isDeepStrictEqual(a, b)) return;
  const lastAssistant = (list) => list.map((m) => m.role).lastIndexOf('assistant');
  const strip = (list) => {
    const last = lastAssistant(list);
    return list.map((m, i) => (m.role === 'assistant' && i < last && Array.isArray(m.content)
      ? { ...m, content: m.content.filter((x) => x.type !== 'thinking' && x.type !== 'redacted_thinking') }
      : m));
  };
  assert.deepStrictEqual(strip(a), strip(b), `${what} (older thinking blocks aside)`);
}
