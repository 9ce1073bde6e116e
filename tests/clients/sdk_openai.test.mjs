// The official OpenAI SDK (openai) as the agent, through the proxy: Chat Completions tool
// loops (not streamed; streamed with tool-call deltas and stream_options.include_usage;
// the ChatCompletionStream helper) and Responses tool loops with store:false and the
// whole input each turn (not streamed; streamed; the ResponseStream helper); errors passed
// back. Under MISSY_CLIENTS_DIRECT=1 the SDK talks to the fake directly.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startFakeUpstream, openai } from './fake_upstream.mjs';
import { startTarget } from './missyd.mjs';
import { assertJsonEqual, assertHeadersForwarded, recordingFetch, deferred, within, assertStored, wire } from './common.mjs';

const CHAT_MODEL = 'gpt-4o';
const RESP_MODEL = 'gpt-5';
const FILES = { 'README.md': '# demo\nThe demo project says hello.\n', Makefile: 'all:\n\techo hi\n' };
const CHAT_TOOLS = [
  { type: 'function', function: { name: 'bash', description: 'Run a shell command.',
    parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } } },
  { type: 'function', function: { name: 'read_file', description: 'Read a file.',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } } },
];
const RESP_TOOLS = CHAT_TOOLS.map((t) => ({ type: 'function', name: t.function.name, description: t.function.description,
                                            parameters: t.function.parameters, strict: false }));

let upstream;
let target;
const scripted = new Map();

function textOf(content) {
  if (typeof content === 'string') return content;
  return content?.find?.((p) => p.type === 'text' || p.type === 'input_text')?.text ?? '';
}
// The session a request belongs to: "[name]" at the start of its first user message.
function sessionOf(req) {
  const list = req.body?.messages ?? (Array.isArray(req.body?.input) ? req.body.input : []);
  const first = list.find((m) => m.role === 'user');
  return /\[([\w.-]+)\]/.exec(textOf(first?.content))?.[1] ?? null;  // the task may come back pinned
}

function runTool(name, args) {
  if (name === 'bash') return Object.keys(FILES).join('\n');
  if (name === 'read_file') return FILES[args.path] ?? 'no such file';
  return 'unknown tool';
}

// The scripted model. Chat: by the number of tool results so far (0: ls, 1: read, 2: text).
// Responses: by the number of function_call_output items (with a reasoning item each time).
function script(req) {
  const special = scripted.get(sessionOf(req));
  if (special) {
    const r = special(req);
    if (r) return r;
  }
  if (req.api === 'openai.chat') {
    const done = req.body.messages.filter((m) => m.role === 'tool').length;
    if (done === 0) return openai.chatReply(req, { content: 'Let me list the files.', tool_calls: [openai.toolCall('bash', { command: 'ls' })] });
    if (done === 1) return openai.chatReply(req, { tool_calls: [openai.toolCall('read_file', { path: 'README.md' })] });
    return openai.chatReply(req, { content: 'README.md says: The demo project says hello. Done.' });
  }
  if (req.api === 'openai.responses') {
    const done = req.body.input.filter((i) => i.type === 'function_call_output').length;
    if (done === 0) return openai.responsesReply(req, { output: [openai.reasoning(), openai.functionCall('bash', { command: 'ls' })] });
    if (done === 1) return openai.responsesReply(req, { output: [openai.reasoning(), openai.functionCall('read_file', { path: 'README.md' })] });
    return openai.responsesReply(req, { output: [openai.outputText('README.md says: The demo project says hello. Done.')] });
  }
  return undefined;
}

before(async () => {
  upstream = await startFakeUpstream({ script: (req) => script(req), delayMs: 2 });
  target = await startTarget(upstream);
});

after(async () => {
  await target?.stop();
  await upstream?.close();
});

function client(name, rec) {
  return new OpenAI({ apiKey: 'sk-test', baseURL: target.openaiBaseURL, fetch: rec.fetch, maxRetries: 0, timeout: 20000,
                      defaultHeaders: { 'X-Missy-Session': name } });
}

// One call's checks: one upstream request, the agent's body fields JSON-equal, headers kept.
function checkForwarded(api, seqBefore, rec, turn, listKey) {
  const reqs = upstream.requests.slice(seqBefore).filter((r) => r.api === api);
  assert.equal(reqs.length, 1, `turn ${turn}: one upstream call\n${target.describe()}`);
  const up = reqs[0];
  const sent = rec.sent.at(-1);
  assertJsonEqual(up.body[listKey], sent.body[listKey], `turn ${turn}: ${listKey} reach the upstream unchanged`);
  for (const k of Object.keys(sent.body)) if (k !== listKey) assertJsonEqual(up.body[k], sent.body[k], `turn ${turn}: ${k} forwarded`);
  assertHeadersForwarded(up.headers, sent.headers, `turn ${turn}`);
  assert.equal(up.headers.authorization, 'Bearer sk-test');
  return up;
}

// ---------------------------------------------------------------------------------------
// Chat Completions

// `call(client, params, turn)` returns {message (the assistant message to append),
// completion? (compared whole), chunks? (compared one for one)}.
async function chatLoop(name, call, extra = {}) {
  const rec = recordingFetch();
  const c = client(name, rec);
  const messages = [
    { role: 'system', content: 'You are a careful coding agent.' },
    { role: 'user', content: `[${name}] List the files, then read README.md and tell me what it says.` },
  ];
  for (let turn = 1; turn <= 3; turn++) {
    const params = { model: CHAT_MODEL, messages: structuredClone(messages), tools: CHAT_TOOLS, temperature: 0.2,
                     max_completion_tokens: 2048, ...extra };
    const seqBefore = upstream.requests.length;
    const got = await call(c, params, turn);
    const up = checkForwarded('openai.chat', seqBefore, rec, turn, 'messages');
    assert.equal(up.body.messages.length, 2 * turn);
    if (got.completion) assertJsonEqual(got.completion, up.reply.completion, `turn ${turn}: the agent gets the upstream's completion`);
    if (got.chunks) {
      const sent = up.reply.events.map((e) => e.data).filter((d) => d !== '[DONE]');
      assertJsonEqual(got.chunks, sent, `turn ${turn}: every chunk relayed as sent`);
      assert.equal(up.reply.events.at(-1).data, '[DONE]');
    }
    const want = up.reply.completion.choices[0].message;
    assert.equal(got.message.content ?? null, want.content ?? null, `turn ${turn}: content`);
    assertJsonEqual(got.message.tool_calls ?? [], want.tool_calls ?? [], `turn ${turn}: tool calls`);

    const assistant = { role: 'assistant', content: got.message.content ?? null };
    if (got.message.tool_calls?.length) assistant.tool_calls = got.message.tool_calls;
    messages.push(assistant);
    await assertStored(target, name, messages.length - 1, `after turn ${turn}`); // the system prompt is not a message
    if (!assistant.tool_calls) break;
    for (const tc of assistant.tool_calls) {
      messages.push({ role: 'tool', tool_call_id: tc.id, content: runTool(tc.function.name, JSON.parse(tc.function.arguments)) });
    }
  }
  assert.equal(messages.length, 7);
  assert.match(messages.at(-1).content, /Done\.$/);
}

// Adds up streamed chunks into an assistant message (what an agent does by hand).
function assemble(chunks) {
  const message = { role: 'assistant', content: null, tool_calls: [] };
  for (const ch of chunks) {
    const d = ch.choices?.[0]?.delta;
    if (!d) continue;
    if (typeof d.content === 'string') message.content = (message.content ?? '') + d.content;
    for (const tc of d.tool_calls ?? []) {
      const slot = (message.tool_calls[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (tc.id) slot.id = tc.id;
      if (tc.function?.name) slot.function.name = tc.function.name;
      if (tc.function?.arguments) slot.function.arguments += tc.function.arguments;
    }
  }
  if (message.content === '') message.content = null;
  if (!message.tool_calls.length) delete message.tool_calls;
  return message;
}

test('chat.completions, not streamed: a three-call tool loop', { timeout: 30000 }, async () => {
  await chatLoop('sdk-openai-chat', async (c, params) => {
    const completion = await c.chat.completions.create(params);
    return { completion, message: completion.choices[0].message };
  });
});

test('chat.completions stream:true with tool-call deltas and include_usage: every chunk relayed', { timeout: 30000 }, async () => {
  await chatLoop('sdk-openai-chat-stream', async (c, params) => {
    const stream = await c.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
    const chunks = [];
    for await (const ch of stream) chunks.push(wire(ch));
    assert.ok(chunks.at(-1).usage?.total_tokens > 0, 'the usage chunk arrives last');
    assert.deepEqual(chunks.at(-1).choices, []);
    return { chunks, message: assemble(chunks) };
  });
});

test('chat.completions.stream helper: final completion equals what the upstream streamed', { timeout: 30000 }, async () => {
  await chatLoop('sdk-openai-chat-helper', async (c, params) => {
    const stream = c.chat.completions.stream({ ...params, stream_options: { include_usage: true } });
    let content = '';
    stream.on('content', (d) => { content += d; });
    const final = await stream.finalChatCompletion();
    const message = final.choices[0].message;
    assert.equal(content, message.content ?? '');
    return { message: { content: message.content, tool_calls: message.tool_calls?.map(({ id, type, function: f }) => ({ id, type, function: { name: f.name, arguments: f.arguments } })) } };
  });
});

test('a chat stream is relayed as it comes: the agent reads the first chunk while the upstream holds the rest',
  { timeout: 30000 }, async () => {
    const name = 'sdk-openai-chat-gate';
    const seen = deferred();
    scripted.set(name, (req) => openai.chatReply(req, {
      content: 'This answer is held after its first chunks until the agent has read them.',
      gate: { after: 2, until: within(seen.promise, 10000, 'the agent reading the first chunk') } }));
    const rec = recordingFetch();
    const stream = await client(name, rec).chat.completions.create({
      model: CHAT_MODEL, stream: true, messages: [{ role: 'user', content: `[${name}] Say something.` }] });
    let firstAt = 0;
    for await (const ch of stream) { if (!firstAt) { firstAt = Date.now(); seen.resolve(); } void ch; }
    const up = upstream.requests.filter((r) => sessionOf(r) === name).at(-1);
    assert.ok(firstAt > 0 && firstAt <= up.reply.events.at(-1).at, 'the first chunk was read before the last was written');
  });

// ---------------------------------------------------------------------------------------
// Responses, store:false: the agent resends the whole input each turn, output items
// (reasoning with encrypted_content, function_call with its ids) included.

// `call(client, params, turn)` returns {response (the final Response), events?}.
async function responsesLoop(name, call) {
  const rec = recordingFetch();
  const c = client(name, rec);
  const input = [{ role: 'user', content: [{ type: 'input_text', text: `[${name}] List the files, then read README.md and tell me what it says.` }] }];
  let final;
  for (let turn = 1; turn <= 3; turn++) {
    const params = { model: RESP_MODEL, instructions: 'You are a careful coding agent.', input: structuredClone(input),
                     tools: RESP_TOOLS, store: false, include: ['reasoning.encrypted_content'],
                     reasoning: { effort: 'medium', summary: 'auto' }, parallel_tool_calls: false };
    const seqBefore = upstream.requests.length;
    const got = await call(c, params, turn);
    const up = checkForwarded('openai.responses', seqBefore, rec, turn, 'input');
    assert.equal(up.body.store, false);
    assert.equal(up.body.previous_response_id, undefined);
    const { output_text, ...response } = wire(got.response);
    assertJsonEqual(response, up.reply.response, `turn ${turn}: the agent gets the upstream's response`);
    if (got.events) {
      assertJsonEqual(got.events, up.reply.events.map((e) => e.data), `turn ${turn}: every event relayed as sent`);
    }
    // The whole output goes back as input (store:false), then the tools' outputs.
    input.push(...response.output);
    await assertStored(target, name, countItems(input), `after turn ${turn}`);
    const calls = response.output.filter((i) => i.type === 'function_call');
    if (!calls.length) { final = response; break; }
    for (const fc of calls) input.push({ type: 'function_call_output', call_id: fc.call_id, output: runTool(fc.name, JSON.parse(fc.arguments)) });
  }
  assert.match(final.output.at(-1).content[0].text, /Done\.$/);
  // The reasoning items went back untouched, encrypted_content and ids included.
  const last = upstream.requests.filter((r) => sessionOf(r) === name).at(-1);
  assert.equal(last.body.input.filter((i) => i.type === 'reasoning' && i.encrypted_content).length, 2);
}

// The stored messages a Responses input makes: one per message, function_call and
// function_call_output item (one call a turn here, so a call is its assistant message);
// a reasoning item belongs to the assistant turn it precedes and is no message of its own.
function countItems(input) {
  return input.filter((i) => i.type !== 'reasoning').length;
}

test('responses.create, store:false, not streamed: a three-call tool loop', { timeout: 30000 }, async () => {
  await responsesLoop('sdk-openai-responses', async (c, params) => ({ response: await c.responses.create(params) }));
});

test('responses.create stream:true: every event relayed, the whole input resent each turn', { timeout: 30000 }, async () => {
  await responsesLoop('sdk-openai-responses-stream', async (c, params) => {
    const stream = await c.responses.create({ ...params, stream: true });
    const events = [];
    for await (const e of stream) events.push(wire(e));
    const done = events.find((e) => e.type === 'response.completed');
    return { events, response: done.response };
  });
});

test('responses.stream helper: final response equals what the upstream streamed', { timeout: 30000 }, async () => {
  await responsesLoop('sdk-openai-responses-helper', async (c, params) => {
    const stream = c.responses.stream(params);
    let text = '';
    stream.on('response.output_text.delta', (e) => { text += e.delta; });
    const response = wire(await stream.finalResponse());
    assert.equal(text, response.output_text ?? '');
    // What the parsing helper adds to the wire's response.
    delete response.output_parsed;
    for (const item of response.output) {
      delete item.parsed_arguments;
      for (const part of item.content ?? []) delete part.parsed;
    }
    return { response };
  });
});

test('upstream errors come back as sent: 429 with retry-after', { timeout: 30000 }, async () => {
  const name = 'sdk-openai-429';
  scripted.set(name, () => openai.rateLimited(3));
  const err = await client(name, recordingFetch()).chat.completions.create({
    model: CHAT_MODEL, messages: [{ role: 'user', content: `[${name}] hi` }] }).then(() => null, (e) => e);
  assert.ok(err instanceof OpenAI.RateLimitError, `a RateLimitError, got ${err}`);
  assert.equal(err.status, 429);
  assert.equal(err.headers.get('retry-after'), '3');
  assert.equal(err.code, 'rate_limit_exceeded');
});

for (const api of ['openai.chat', 'openai.responses']) {
  test(`${api}: a context_length_exceeded refusal: direct, the agent gets it; proxied, compaction and one retry`,
    { timeout: 30000 }, async () => {
      const name = `sdk-too-long-${api.split('.')[1]}`;
      let n = 0;
      scripted.set(name, (req) => (n++ === 0 ? openai.contextLengthExceeded(api)
        : api === 'openai.chat' ? openai.chatReply(req, { content: 'fits now' })
          : openai.responsesReply(req, { output: [openai.outputText('fits now')] })));
      // Some history for the compaction to work on: six earlier exchanges of ~2 KB each.
      const history = [];
      for (let i = 0; i < 6; i++) {
        history.push({ role: 'user', content: `${i === 0 ? `[${name}] ` : ''}Step ${i}: ${'lorem ipsum dolor '.repeat(110)}` });
        history.push({ role: 'assistant', content: `Noted step ${i}. ${'sit amet '.repeat(120)}` });
      }
      history.push({ role: 'user', content: 'Now sum it up.' });
      const c = client(name, recordingFetch());
      const res = await (api === 'openai.chat'
        ? c.chat.completions.create({ model: CHAT_MODEL, messages: history })
        : c.responses.create({ model: RESP_MODEL, store: false, input: history })
      ).then((r) => r, (e) => e);
      const calls = upstream.requests.filter((r) => sessionOf(r) === name);
      if (target.direct) {
        assert.ok(res instanceof OpenAI.BadRequestError, `a 400, got ${res}`);
        assert.equal(res.code, 'context_length_exceeded');
        assert.equal(calls.length, 1);
      } else {
        const text = api === 'openai.chat' ? res.choices?.[0]?.message?.content : res.output_text;
        assert.equal(text, 'fits now', `the retry's answer, got ${res}`);
        assert.equal(calls.length, 2, 'one retry after the refusal');
        assert.ok(calls[1].rawBody.length < calls[0].rawBody.length, 'the retry sends a compacted, smaller context');
        const list = api === 'openai.chat' ? 'messages' : 'input';
        assertJsonEqual(calls[1].body[list].at(-1), history.at(-1), 'the newest turn is kept');
      }
    });
}
