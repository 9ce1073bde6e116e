// Starts the real missyd for a test, with its proxy pointed at a fake upstream, and talks
// to its API socket.
//
//   const d = await startMissyd({ upstream });   // upstream: from startFakeUpstream()
//   d.baseUrl            http://127.0.0.1:PORT  (the proxy: Anthropic base URL)
//   d.openaiBaseURL      http://127.0.0.1:PORT/v1
//   d.home, d.socket, d.logPath
//   await d.api('GET', '/v1/sessions')          -> {status, json}
//   await d.stop()                              SIGTERM, then wait for the exit
//
// The binary is $MISSYD_BIN, default build/bin/missyd under the repository root. MISSY_HOME
// is a fresh temporary directory holding a config.yaml with context.proxy enabled on a
// free loopback port and its upstreams set to the fake.
//
// Under MISSY_CLIENTS_DIRECT=1 (the proxy not built yet) `startTarget` gives the fake
// upstream's own URLs and no daemon: the tests then prove the harness, the fake's wire
// shapes and the clients' loops, and skip what needs the daemon's API.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const clientsDir = path.join(repoRoot, 'tests/clients');
export const binDir = path.join(clientsDir, 'node_modules/.bin');
export const direct = process.env.MISSY_CLIENTS_DIRECT === '1';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A free TCP port on 127.0.0.1 (bound then released). */
export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function canConnect(port) {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
    s.setTimeout(500, () => { s.destroy(); resolve(false); });
  });
}

/** A fresh temporary directory (removeDir removes it, unless KEEP_TMP=1). */
export function tempDir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return dir;
}

export function removeDir(dir) {
  if (process.env.KEEP_TMP === '1') return;
  try { fs.rmSync(dir, { recursive: true, force: true }); } catch { /* best effort */ }
}

/** One HTTP request over a Unix socket: {status, headers, json, text}. */
export function unixRequest(socketPath, method, urlPath, body, timeoutMs = 10000) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({
      socketPath, method, path: urlPath, host: 'localhost',
      headers: payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {},
      timeout: timeoutMs,
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json = null;
        try { json = text ? JSON.parse(text) : null; } catch { json = null; }
        resolve({ status: res.statusCode, headers: res.headers, json, text });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${urlPath}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}

function configYaml({ port, upstream, extra = '' }) {
  return [
    'context:',
    '  proxy:',
    '    enabled: true',
    `    listen: 127.0.0.1:${port}`,
    // The tests check that the agents' messages reach the upstream as sent; memory from
    // the other tests' sessions would come first (tests/daemon/proxy covers it).
    '    memory: false',
    '    upstreams:',
    `      anthropic: ${upstream.url}`,
    `      openai: ${upstream.openaiBaseURL}`,
    extra,
    '',
  ].join('\n');
}

/** Starts missyd with its proxy on a free port, upstreams at `upstream`. */
export async function startMissyd({ upstream, extraConfig = '', timeoutMs = 20000, bin } = {}) {
  const binary = bin ?? process.env.MISSYD_BIN ?? path.join(repoRoot, 'build/bin/missyd');
  if (!fs.existsSync(binary)) {
    throw new Error(`missyd binary not found at ${binary} (build it, set MISSYD_BIN, or run with MISSY_CLIENTS_DIRECT=1)`);
  }
  const home = tempDir('missy-clients-home-');
  const port = await freePort();
  const configPath = path.join(home, 'config.yaml');
  fs.writeFileSync(configPath, configYaml({ port, upstream, extra: extraConfig }), { mode: 0o600 });
  const logPath = path.join(home, 'missyd.log');
  const logFd = fs.openSync(logPath, 'a');
  const socket = path.join(home, 'missyd.sock');
  const child = spawn(binary, ['--config', configPath], {
    env: { ...process.env, MISSY_HOME: home },
    stdio: ['ignore', logFd, logFd],
  });
  fs.closeSync(logFd);
  let exited = null;
  const exitPromise = new Promise((resolve) => child.once('exit', (code, signal) => {
    exited = { code, signal };
    resolve(exited);
  }));
  const log = () => { try { return fs.readFileSync(logPath, 'utf8'); } catch { return ''; } };
  const logTail = (n = 40) => log().split('\n').slice(-n).join('\n');

  const d = {
    direct: false,
    pid: child.pid,
    home, port, socket, logPath, configPath, log, logTail,
    baseUrl: `http://127.0.0.1:${port}`,
    anthropicBaseURL: `http://127.0.0.1:${port}`,
    openaiBaseURL: `http://127.0.0.1:${port}/v1`,
    api: (method, urlPath, body) => unixRequest(socket, method, urlPath, body),
    async stop({ keepHome = false } = {}) {
      if (!exited) {
        child.kill('SIGTERM');
        const t = setTimeout(() => { if (!exited) child.kill('SIGKILL'); }, 10000);
        await exitPromise;
        clearTimeout(t);
      }
      const result = exited;
      if (!keepHome) removeDir(home);
      return result;
    },
  };

  // Up when both the API socket and the proxy port accept connections. On a failure the
  // home (log, config, database) is kept for a look and named in the error.
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (exited) {
      throw new Error(`missyd exited during start-up (${JSON.stringify(exited)}); home kept at ${home}; log ${logPath}:\n${logTail()}`);
    }
    const apiUp = fs.existsSync(socket);
    const proxyUp = apiUp && (await canConnect(port));
    if (proxyUp) break;
    if (Date.now() > end) {
      await d.stop({ keepHome: true }).catch(() => {});
      const what = apiUp ? `its API socket is up but nothing listens on the proxy port 127.0.0.1:${port} (context.proxy)`
                         : `${socket} did not appear`;
      throw new Error(`missyd did not come up within ${timeoutMs} ms: ${what}; home kept at ${home}; log ${logPath}:\n${logTail()}`);
    }
    await sleep(50);
  }
  return d;
}

/** What a test points its client at: the daemon's proxy, or the fake itself in direct mode.
 *  {direct, anthropicBaseURL, openaiBaseURL, api?, stop(), describe()} */
export async function startTarget(upstream, opts = {}) {
  if (direct) {
    return {
      direct: true,
      anthropicBaseURL: upstream.url,
      openaiBaseURL: upstream.openaiBaseURL,
      baseUrl: upstream.url,
      api: null,
      stop: async () => {},
      describe: () => `direct to the fake upstream ${upstream.url}\n${upstream.summary()}`,
    };
  }
  const d = await startMissyd({ upstream, ...opts });
  d.describe = () => `missyd proxy ${d.baseUrl}, log ${d.logPath}:\n${d.logTail()}\nupstream saw:\n${upstream.summary()}`;
  return d;
}

// The daemon's own API (docs/API.md), for the checks that a proxied session was stored.

/** GET /v1/sessions: every session (oldest first). */
export async function listSessions(target) {
  const r = await target.api('GET', '/v1/sessions?limit=1000');
  if (r.status !== 200) throw new Error(`GET /v1/sessions: ${r.status} ${r.text}`);
  return r.json.sessions;
}

/** GET /v1/sessions/{id}/messages, all pages. */
export async function sessionMessages(target, id) {
  const out = [];
  let after = 0;
  for (;;) {
    const r = await target.api('GET', `/v1/sessions/${encodeURIComponent(id)}/messages?after=${after}&limit=1000`);
    if (r.status !== 200) throw new Error(`GET messages of ${id}: ${r.status} ${r.text}`);
    const page = r.json.messages ?? [];
    out.push(...page);
    if (page.length < 1000) return out;
    after = page[page.length - 1].seq;
  }
}

/** The sessions created since `before` (a list from listSessions), with their messages. */
export async function newSessions(target, before = []) {
  const known = new Set(before.map((s) => s.id));
  const sessions = (await listSessions(target)).filter((s) => !known.has(s.id));
  for (const s of sessions) s.messages = await sessionMessages(target, s.id);
  return sessions;
}

/** Waits until `check()` returns a truthy value (polling), or throws its last error. */
export async function eventually(check, timeoutMs = 5000, everyMs = 50) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) { last = e; }
    if (Date.now() > end) throw last ?? new Error('condition not met within ' + timeoutMs + ' ms');
    await sleep(everyMs);
  }
}
