// The official Anthropic SDK (@anthropic-ai/sdk) as the agent: a three-call tool loop
// (tool_use -> tool_result -> tool_use -> tool_result -> text) through the proxy, not
// streamed, streamed (messages.stream) and through client.beta.messages with ?beta=true;
// errors passed back. Under MISSY_CLIENTS_DIRECT=1 the SDK talks to the fake directly.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startFakeUpstream, anthropic } from './fake_upstream.mjs';
import { startTarget } from './missyd.mjs';
import { assertJsonEqual, assertAnthropicMessagesKept, assertHeadersForwarded, recordingFetch, deferred, within, assertStored } from './common.mjs';

const MODEL = 'claude-sonnet-4-6';
const TOOLS = [
  { name: 'bash', description: 'Run a shell command.',
    input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } },
  { name: 'read_file', description: 'Read a file.',
    input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } },
];
const FILES = { 'README.md': '# demo\nThe demo project says hello.\n', Makefile: 'all:\n\techo hi\n' };

let upstream;
let target;

// The session a request belongs to: "[name]" at the start of its first user message.
function sessionOf(req) {
  const first = req.body?.messages?.[0]?.content;
  const text = typeof first === 'string' ? first : first?.find?.((b) => b.type === 'text')?.text ?? '';
  return /\[([\w.-]+)\]/.exec(text)?.[1] ?? null;  // the task may come back pinned, after a header
}

// The scripted model: call 1 thinks and runs `ls`, call 2 thinks and reads README.md,
// call 3 answers.
const scripted = new Map(); // session -> per-call overrides (errors)
function script(req) {
  if (req.api !== 'anthropic.messages') return undefined;
  const name = sessionOf(req);
  const special = scripted.get(name);
  if (special) {
    const r = special(req);
    if (r) return r;
  }
  const n = req.body.messages.length; // 1, 3, 5
  if (n === 1) {
    return anthropic.reply(req, { content: [
      anthropic.thinking('The user wants the files listed first. I will run ls.'),
      anthropic.text('Let me list the files.'),
      anthropic.toolUse('bash', { command: 'ls', description: 'list the files in the project' }),
    ] });
  }
  if (n === 3) {
    return anthropic.reply(req, { content: [
      anthropic.thinking('Now read the README.'),
      anthropic.toolUse('read_file', { path: 'README.md' }),
    ] });
  }
  return anthropic.reply(req, { content: [anthropic.text('README.md says: The demo project says hello. Done.')] });
}

before(async () => {
  upstream = await startFakeUpstream({ script: (req) => script(req), delayMs: 2 });
  target = await startTarget(upstream);
});

after(async () => {
  await target?.stop();
  await upstream?.close();
});

function client(name, rec, extra = {}) {
  return new Anthropic({
    apiKey: 'sk-test', baseURL: target.anthropicBaseURL, fetch: rec.fetch, maxRetries: 0, timeout: 20000,
    defaultHeaders: { 'X-Missy-Session': name }, ...extra,
  });
}

// The final message of a MessageStream without what the SDK adds (parsed_output: null).
function sdkOnly(message) {
  const { parsed_output, ...wire } = message;
  return wire;
}

function runTool(block) {
  if (block.name === 'bash') return Object.keys(FILES).join('\n');
  if (block.name === 'read_file') return FILES[block.input.path] ?? 'no such file';
  return 'unknown tool';
}

// The agent's loop: send, append the answer, run its tool calls, append the results.
// `call(client, params, turn)` returns {message, text?, firstEventAt?}.
async function toolLoop(name, call, { params: extraParams = {}, requestOptions } = {}) {
  const rec = recordingFetch();
  const c = client(name, rec);
  const messages = [{ role: 'user', content: `[${name}] List the files, then read README.md and tell me what it says.` }];
  const answers = [];
  for (let turn = 1; turn <= 3; turn++) {
    const params = {
      model: MODEL, max_tokens: 4096, system: 'You are a careful coding agent.', tools: TOOLS,
      thinking: { type: 'enabled', budget_tokens: 1024 }, metadata: { user_id: 'user_test' },
      messages: structuredClone(messages), ...extraParams,
    };
    const seqBefore = upstream.requests.length;
    const got = await call(c, params, turn, requestOptions);
    const reqs = upstream.requests.slice(seqBefore).filter((r) => r.api === 'anthropic.messages');
    assert.equal(reqs.length, 1, `turn ${turn}: one upstream call\n${target.describe()}`);
    const up = reqs[0];
    const sent = rec.sent.at(-1);

    // What reached the upstream: the agent's messages JSON-equal, its headers and query kept.
    assertAnthropicMessagesKept(up.body.messages, sent.body.messages, `turn ${turn}: messages reach the upstream unchanged`);
    assert.equal(up.body.messages.length, 2 * turn - 1);
    for (const k of ['model', 'max_tokens', 'tools', 'thinking', 'metadata', 'stream'])
      assertJsonEqual(up.body[k], sent.body[k], `turn ${turn}: ${k} forwarded`);
    assertHeadersForwarded(up.headers, sent.headers, `turn ${turn}`); // anthropic-version, -beta, x-stainless-*, auth
    assert.ok(up.headers.authorization === 'Bearer sk-test' || up.headers['x-api-key'] === 'sk-test',
      'the agent\'s key reaches the upstream');
    assert.equal(new URL(up.url, 'http://x').search, new URL(sent.url).search, `turn ${turn}: query kept`);

    // What the agent got: exactly what the upstream answered.
    assertJsonEqual(got.message, up.reply.message, `turn ${turn}: the agent gets the upstream's message`);
    if (got.text !== undefined) {
      const want = up.reply.message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
      assert.equal(got.text, want, `turn ${turn}: streamed text`);
    }
    answers.push({ got, up });

    messages.push({ role: 'assistant', content: got.message.content });
    await assertStored(target, name, messages.length, `after turn ${turn}`);
    const uses = got.message.content.filter((b) => b.type === 'tool_use');
    if (turn < 3) assert.equal(uses.length, 1, `turn ${turn}: one tool_use`);
    if (!uses.length) break;
    messages.push({ role: 'user', content: uses.map((u) => ({ type: 'tool_result', tool_use_id: u.id, content: runTool(u) })) });
  }
  assert.equal(messages.length, 6);
  assert.match(messages.at(-1).content[0].text, /Done\.$/);
  // The last request carried the last assistant turn's thinking back with its signature.
  const last = answers.at(-1).up.body.messages;
  const thinking = last.findLast((m) => m.role === 'assistant').content.find((b) => b.type === 'thinking');
  assert.equal(thinking?.signature, answers[1].up.reply.message.content[0].signature,
    'the last assistant turn\'s thinking goes back with its signature');
  return { answers, rec };
}

test('messages.create, not streamed: a three-call tool loop', { timeout: 30000 }, async () => {
  await toolLoop('sdk-anthropic-create', async (c, params) => ({ message: await c.messages.create(params) }));
});

test('messages.stream: a three-call tool loop, streamed event by event', { timeout: 30000 }, async () => {
  let firstEventAt = 0;
  const { answers } = await toolLoop('sdk-anthropic-stream', async (c, params, turn) => {
    const stream = c.messages.stream(params);
    let text = '';
    const events = [];
    const seen = deferred();
    stream.on('streamEvent', (e) => {
      events.push(JSON.parse(JSON.stringify(e))); // the SDK goes on to mutate message_start's message
      if (turn === 1 && events.length === 1) { firstEventAt = Date.now(); seen.resolve(); }
    });
    stream.on('text', (d) => { text += d; });
    const message = sdkOnly(await stream.finalMessage());
    return { message, text, events };
  });
  // Every event the upstream sent reached the SDK in order (pings are not surfaced).
  for (const { got, up } of answers) {
    const sent = up.reply.events.filter((e) => e.event !== 'ping').map((e) => e.data);
    assertJsonEqual(got.events, sent, 'the events relayed one for one');
    const deltas = sent.filter((e) => e.type === 'content_block_delta' && e.delta.type === 'input_json_delta');
    if (got.message.content.some((b) => b.type === 'tool_use')) assert.ok(deltas.length >= 3, 'tool input in pieces');
  }
  // The first event reached the agent before the upstream wrote its last one.
  const firstUp = answers[0].up.reply.events;
  assert.ok(firstEventAt > 0 && firstEventAt <= firstUp.at(-1).at,
    `first event at ${firstEventAt}, last written at ${firstUp.at(-1).at}`);
});

test('a stream is relayed as it comes: the agent reads the first event while the upstream holds the rest',
  { timeout: 30000 }, async () => {
    const name = 'sdk-anthropic-gate';
    const seen = deferred();
    scripted.set(name, (req) => anthropic.reply(req, {
      content: [anthropic.text('This answer is held after its first events until the agent has read them.')],
      gate: { after: 3, until: within(seen.promise, 10000, 'the agent reading the first event') },
    }));
    const rec = recordingFetch();
    const stream = client(name, rec).messages.stream({
      model: MODEL, max_tokens: 256, messages: [{ role: 'user', content: `[${name}] Say something.` }] });
    let firstAt = 0;
    stream.on('streamEvent', () => { if (!firstAt) { firstAt = Date.now(); seen.resolve(); } });
    const message = sdkOnly(await stream.finalMessage());
    const up = upstream.requests.filter((r) => sessionOf(r) === name).at(-1);
    assert.ok(firstAt > 0, 'the agent read an event');
    assert.ok(firstAt <= up.reply.events.at(-1).at, 'the agent read the first event before the last was written');
    assertJsonEqual(message, up.reply.message);
  });

test('client.beta.messages with ?beta=true and anthropic-beta: query and headers kept', { timeout: 30000 }, async () => {
  const { rec, answers } = await toolLoop('sdk-anthropic-beta',
    async (c, params, turn, opts) => ({ message: await c.beta.messages.create(params, opts) }),
    { params: { betas: ['interleaved-thinking-2025-05-14', 'context-management-2025-06-27'] },
      requestOptions: { query: { beta: 'true' } } });
  for (const { up } of answers) {
    assert.equal(up.query.beta, 'true', '?beta=true reaches the upstream');
    assert.equal(up.headers['anthropic-beta'], 'interleaved-thinking-2025-05-14,context-management-2025-06-27');
  }
  assert.ok(rec.sent.every((s) => s.url.endsWith('/v1/messages?beta=true')));
});

test('an upstream 429 comes back with its status, retry-after and body', { timeout: 30000 }, async () => {
  const name = 'sdk-anthropic-429';
  scripted.set(name, () => anthropic.rateLimited(7));
  const rec = recordingFetch();
  const err = await client(name, rec).messages.create({
    model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: `[${name}] hi` }] }).then(() => null, (e) => e);
  assert.ok(err instanceof Anthropic.RateLimitError, `a RateLimitError, got ${err}`);
  assert.equal(err.status, 429);
  assert.equal(err.headers.get('retry-after'), '7');
  assert.equal(err.error.error.type, 'rate_limit_error');
});

test('a context-length refusal: direct, the agent gets it; proxied, missyd compacts and retries once',
  { timeout: 30000 }, async () => {
    const name = 'sdk-anthropic-too-long';
    let refused = 0;
    scripted.set(name, (req) => {
      if (refused++ === 0) return anthropic.promptTooLong(212000, 200000);
      return anthropic.reply(req, { content: [anthropic.text('fits now')] });
    });
    // Some history for the compaction to work on: six earlier exchanges of ~2 KB each.
    const messages = [];
    for (let i = 0; i < 6; i++) {
      messages.push({ role: 'user', content: `${i === 0 ? `[${name}] ` : ''}Step ${i}: ${'lorem ipsum dolor '.repeat(110)}` });
      messages.push({ role: 'assistant', content: `Noted step ${i}. ${'sit amet '.repeat(120)}` });
    }
    messages.push({ role: 'user', content: 'Now sum it up.' });
    const res = await client(name, recordingFetch()).messages.create({ model: MODEL, max_tokens: 64, messages })
      .then((m) => m, (e) => e);
    const calls = upstream.requests.filter((r) => sessionOf(r) === name);
    if (target.direct) {
      assert.ok(res instanceof Anthropic.BadRequestError, `a 400, got ${res}`);
      assert.equal(res.error.error.type, 'invalid_request_error');
      assert.match(res.error.error.message, /^prompt is too long: 212000 tokens > 200000 maximum$/);
      assert.equal(calls.length, 1);
    } else {
      assert.equal(res.content?.[0]?.text, 'fits now', `the retry's answer, got ${res}`);
      assert.equal(calls.length, 2, 'one retry after the refusal');
      assert.ok(calls[1].rawBody.length < calls[0].rawBody.length, 'the retry sends a compacted, smaller context');
      assertJsonEqual(calls[1].body.messages.at(-1), messages.at(-1), 'the newest turn is kept');
    }
  });

test('an error event in the middle of a stream reaches the agent as the API\'s error', { timeout: 30000 }, async () => {
  const name = 'sdk-anthropic-stream-error';
  scripted.set(name, (req) => {
    const r = anthropic.reply(req, { content: [anthropic.text('This answer breaks off after a few words.')] });
    r.sse = [...r.sse.slice(0, 4), anthropic.streamError('overloaded_error', 'Overloaded')];
    return r;
  });
  const stream = client(name, recordingFetch()).messages.stream({
    model: MODEL, max_tokens: 256, messages: [{ role: 'user', content: `[${name}] Say something.` }] });
  let text = '';
  stream.on('text', (d) => { text += d; });
  const err = await stream.finalMessage().then(() => null, (e) => e);
  assert.ok(err instanceof Anthropic.APIError, `an APIError, got ${err}`);
  assert.equal(err.error?.error?.type, 'overloaded_error');
  const up = upstream.requests.filter((r) => sessionOf(r) === name).at(-1);
  assert.equal(text, up.reply.events.filter((e) => e.data.delta?.type === 'text_delta').map((e) => e.data.delta.text).join(''),
    'the text before the error reached the agent');
});

test('messages.countTokens is forwarded and answered with a count', { timeout: 30000 }, async () => {
  const name = 'sdk-anthropic-count';
  const rec = recordingFetch();
  const params = { model: MODEL, system: 'You are a careful coding agent.', tools: TOOLS,
                   messages: [{ role: 'user', content: `[${name}] How many tokens is this?` }] };
  const seqBefore = upstream.requests.length;
  const res = await client(name, rec).messages.countTokens(params);
  assert.ok(Number.isInteger(res.input_tokens) && res.input_tokens > 0, `a count, got ${JSON.stringify(res)}`);
  const up = upstream.requests.slice(seqBefore).find((r) => r.api === 'anthropic.count_tokens');
  assert.ok(up, `the upstream got POST /v1/messages/count_tokens\n${target.describe()}`);
  assert.equal(up.path, '/v1/messages/count_tokens');
  assertJsonEqual(up.body.messages, rec.sent.at(-1).body.messages);
  assertHeadersForwarded(up.headers, rec.sent.at(-1).headers, 'count_tokens');
  if (target.direct) assert.equal(res.input_tokens, up.reply.json.input_tokens);
});
