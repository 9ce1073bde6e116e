// The proxy's edges with a real SDK as the agent: an agent that goes away mid-stream
// cancels the upstream call (the partial answer is not stored: the agent never got it,
// and its next request would not match it) and the request is audited as client_gone;
// an upstream that does not answer within context.proxy.timeout_ms gives a 504 in the
// API's shape. Proxied only (these are the daemon's behaviours, not the fake's).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startFakeUpstream, anthropic } from './fake_upstream.mjs';
import { startTarget, direct } from './missyd.mjs';
import { deferred, recordingFetch } from './common.mjs';

const MODEL = 'claude-sonnet-4-6';
const scripted = new Map();
let upstream;
let target;

function nameOf(req) {
  return req.headers['x-test-name'] ?? null;
}

before(async () => {
  upstream = await startFakeUpstream({
    script: (req) => scripted.get(nameOf(req))?.(req),
    delayMs: 2,
  });
  // A short upstream timeout, for the 504 test.
  target = await startTarget(upstream, { extraConfig: '    timeout_ms: 1500\n' });
});

after(async () => {
  await target?.stop();
  await upstream?.close();
});

function client(name) {
  return new Anthropic({
    apiKey: 'sk-test', baseURL: target.anthropicBaseURL, fetch: recordingFetch().fetch,
    maxRetries: 0, timeout: 20000, defaultHeaders: { 'X-Missy-Session': name, 'X-Test-Name': name },
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function auditFor(name) {
  const r = await target.api('GET', '/v1/audit?type=proxy.request&limit=1000');
  return r.json.events.filter((e) => e.session_id === name);
}

test('an agent that goes away mid-stream cancels the upstream call; nothing half-answered is stored',
  { timeout: 30000, skip: direct && 'proxied only' }, async () => {
    const name = 'edge-client-gone';
    const release = deferred();
    let upstreamRequest;
    scripted.set(name, (req) => {
      upstreamRequest = req;
      return anthropic.reply(req, {
        content: [anthropic.text('A long answer the agent will not wait for. '.repeat(20))],
        gate: { after: 3, until: release.promise },
      });
    });
    const controller = new AbortController();
    const stream = client(name).messages.stream(
      { model: MODEL, max_tokens: 256, messages: [{ role: 'user', content: 'Talk for a while.' }] },
      { signal: controller.signal });
    const firstEvent = deferred();
    stream.on('streamEvent', () => firstEvent.resolve());
    stream.on('error', () => {});
    stream.on('abort', () => {});
    const settled = stream.finalMessage().then(() => 'finished', (e) => e);
    await firstEvent.promise;
    controller.abort();  // the agent goes away with the answer half sent
    assert.ok((await settled) instanceof Error, 'the agent gave up on its answer');
    // The proxy closes its upstream connection: the fake sees its answer aborted.
    const deadline = Date.now() + 10000;
    while (!upstreamRequest?.reply?.aborted && Date.now() < deadline) await sleep(20);
    release.resolve();
    assert.ok(upstreamRequest?.reply?.aborted, 'the upstream call was cancelled');
    let events = [];
    while (events.length === 0 && Date.now() < deadline) {
      events = await auditFor(name);
      if (events.length === 0) await sleep(50);
    }
    assert.equal(events.length, 1, 'one proxy.request');
    assert.equal(events[0].detail.answer, 'client_gone');
    assert.ok(events[0].detail.relayed_bytes > 0, 'what was relayed is counted');
    const stored = await target.api('GET', `/v1/sessions/${name}/messages`);
    assert.equal(stored.json.messages.length, 1, 'only the user message is stored');
    // The agent's next request (it never saw that answer) matches the stored history.
    scripted.set(name, (req) => anthropic.reply(req, { content: [anthropic.text('short')] }));
    const again = await client(name).messages.create(
      { model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: 'Talk for a while.' }] });
    assert.equal(again.content[0].text, 'short');
    const sessions = await target.api('GET', '/v1/sessions?limit=1000');
    assert.equal(sessions.json.sessions.filter((s) => s.id.startsWith(name)).length, 1, 'no branch');
  });

test('an upstream that does not answer in time gives a 504 in the API\'s error shape',
  { timeout: 30000, skip: direct && 'proxied only' }, async () => {
    const name = 'edge-timeout';
    const never = deferred();
    // The fake answers nothing until released.
    scripted.set(name, (req) => never.promise.then(() => anthropic.reply(req, {
      content: [anthropic.text('too late')] })));
    const started = Date.now();
    const err = await client(name).messages.create(
      { model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: 'Hello?' }] })
      .then(() => null, (e) => e);
    never.resolve();
    assert.ok(err instanceof Anthropic.APIError, `an API error, got ${err}`);
    assert.equal(err.status, 504);
    assert.equal(err.error.type, 'error');
    assert.equal(err.error.error.type, 'api_error');
    assert.match(err.error.error.message, /timed out/);
    assert.ok(Date.now() - started < 10000, 'within the configured timeout, not the agent\'s');
  });
