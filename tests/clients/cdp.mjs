// Debian's chromium, headless, driven over the DevTools protocol through a pipe
// (--remote-debugging-pipe: JSON messages ending in NUL on fds 3 and 4), so no package
// beyond node and the browser is needed.
//
//   const b = await launchChromium();          // null when no chromium is installed
//   const page = await b.newPage();
//   await page.goto('http://127.0.0.1:8788/ui/');
//   await page.eval('document.title');
//   page.problems   console errors, exceptions and failed loads seen so far
//   page.requests   every URL the page requested
//   await b.close();

import { spawn } from 'node:child_process';
import fs from 'node:fs';

import { removeDir, tempDir } from './missyd.mjs';

export function chromiumPath() {
  for (const p of [process.env.CHROMIUM_BIN, '/usr/lib/chromium/chromium', '/usr/bin/chromium']) {
    if (p && fs.existsSync(p)) return p;
  }
  return null;
}

export async function launchChromium() {
  const bin = chromiumPath();
  if (!bin) return null;
  const profile = tempDir('missy-chromium-');
  const child = spawn(bin, [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--disable-default-apps', '--disable-extensions', '--mute-audio', '--no-default-browser-check',
    '--disable-dev-shm-usage', `--user-data-dir=${profile}`, '--remote-debugging-pipe',
    '--window-size=1400,1000', 'about:blank',
  ], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
  const out = child.stdio[3];
  const inp = child.stdio[4];
  let nextId = 1;
  const pending = new Map();
  const handlers = new Set();
  let buf = Buffer.alloc(0);
  inp.on('data', (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    for (let end = buf.indexOf(0); end >= 0; end = buf.indexOf(0)) {
      const msg = JSON.parse(buf.subarray(0, end).toString('utf8'));
      buf = buf.subarray(end + 1);
      if (msg.id && pending.has(msg.id)) {
        const { resolve, reject, method } = pending.get(msg.id);
        pending.delete(msg.id);
        if (msg.error) reject(new Error(`${method}: ${msg.error.message}`));
        else resolve(msg.result);
      } else {
        for (const h of handlers) h(msg);
      }
    }
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  function send(method, params = {}, sessionId) {
    const id = nextId++;
    const msg = { id, method, params };
    if (sessionId) msg.sessionId = sessionId;
    out.write(JSON.stringify(msg) + '\0');
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`${method}: no answer from chromium within 30 s; stderr:\n${stderr}`));
      }, 30000);
      pending.set(id, {
        method,
        resolve: (v) => { clearTimeout(timer); resolve(v); },
        reject: (e) => { clearTimeout(timer); reject(e); },
      });
    });
  }
  await send('Browser.getVersion');

  return {
    async newPage() {
      const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
      const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
      const page = {
        problems: [],
        requests: [],
        responses: new Map(),  // url -> {status, headers}
        send: (m, p) => send(m, p, sessionId),
        async goto(url) {
          const loaded = new Promise((resolve) => {
            const h = (msg) => {
              if (msg.sessionId === sessionId && msg.method === 'Page.loadEventFired') {
                handlers.delete(h);
                resolve();
              }
            };
            handlers.add(h);
          });
          await page.send('Page.navigate', { url });
          await loaded;
        },
        async eval(expression) {
          const r = await page.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true });
          if (r.exceptionDetails) {
            throw new Error(`page threw: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
          }
          return r.result.value;
        },
        async waitFor(expression, timeoutMs = 10000) {
          const end = Date.now() + timeoutMs;
          for (;;) {
            const v = await page.eval(expression).catch(() => null);
            if (v) return v;
            if (Date.now() > end) throw new Error(`timed out waiting for ${expression}; problems: ${JSON.stringify(page.problems)}`);
            await new Promise((r) => setTimeout(r, 50));
          }
        },
        async key(key, code = key) {
          const vk = { ArrowLeft: 37, ArrowRight: 39, Enter: 13, Tab: 9 }[key] ?? 0;
          const text = key === 'Enter' ? '\r' : undefined;
          await page.send('Input.dispatchKeyEvent', { type: text ? 'keyDown' : 'rawKeyDown', key, code, windowsVirtualKeyCode: vk, text });
          await page.send('Input.dispatchKeyEvent', { type: 'keyUp', key, code, windowsVirtualKeyCode: vk });
        },
        async screenshot(path) {
          const { data } = await page.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true });
          fs.writeFileSync(path, Buffer.from(data, 'base64'));
        },
      };
      handlers.add((msg) => {
        if (msg.sessionId !== sessionId) return;
        const p = msg.params;
        if (msg.method === 'Runtime.consoleAPICalled' && (p.type === 'error' || p.type === 'assert')) {
          page.problems.push(`console.${p.type}: ${p.args.map((a) => a.value ?? a.description).join(' ')}`);
        } else if (msg.method === 'Runtime.exceptionThrown') {
          page.problems.push(`exception: ${p.exceptionDetails.exception?.description ?? p.exceptionDetails.text}`);
        } else if (msg.method === 'Log.entryAdded' && p.entry.level === 'error') {
          page.problems.push(`log: ${p.entry.text} ${p.entry.url ?? ''}`);
        } else if (msg.method === 'Network.requestWillBeSent') {
          page.requests.push(p.request.url);
        } else if (msg.method === 'Network.responseReceived') {
          page.responses.set(p.response.url, { status: p.response.status, headers: p.response.headers });
        }
      });
      for (const domain of ['Page', 'Runtime', 'Log', 'Network']) await page.send(`${domain}.enable`);
      return page;
    },
    async close() {
      try { await send('Browser.close'); } catch { child.kill('SIGKILL'); }
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
      removeDir(profile);
    },
  };
}
