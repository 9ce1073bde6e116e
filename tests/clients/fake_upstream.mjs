// A scripted fake LLM provider for the proxy tests: Anthropic Messages, OpenAI Chat
// Completions and OpenAI Responses, on 127.0.0.1 (an ephemeral port), node's http only.
//
//   const up = await startFakeUpstream({ script: (req) => reply, delayMs: 5 });
//   up.url              http://127.0.0.1:PORT     (Anthropic base URL, as the SDK writes it)
//   up.openaiBaseURL    http://127.0.0.1:PORT/v1  (OpenAI base URL, as the SDK writes it)
//   up.requests         every request received, in order (see `record` below)
//   up.script = fn      change the script; up.close() stops the server
//
// A request record: {seq, method, url (path + query), path, query (object), headers
// (lower-case names; repeated ones joined by ", "), rawBody (string), body (parsed JSON or
// null), api, time, reply}. `api` names what the path asks for: 'anthropic.messages',
// 'anthropic.count_tokens', 'openai.chat', 'openai.responses', 'openai.models', 'other'.
// `reply` is what was answered: {status, headers, json} or {status, headers, events:
// [{event, data, at}], done, aborted}, plus `message` / `completion` / `response` (the
// whole object a stream adds up to) when a helper built it.
//
// The script is (request, upstream) => reply (may be async; may return undefined for the
// default harmless answer). Replies:
//   {status?, headers?, json}                 a JSON answer
//   {status?, headers?, body, contentType?}   a raw answer
//   {status?, headers?, sse: [{event?, data}], delayMs?, gate?, done?}
//       a stream written event by event, delayMs (default: the upstream's) between two
//       events; `data` is an object (JSON-encoded) or a string written as is; `gate`:
//       {after: N, until: Promise} holds the stream after its N-th event until the promise
//       settles (a test proves the client read the first events before the last was sent).
//   {hangUp: true}                            the connection is destroyed without an answer
// The helpers below (anthropic.*, openai.*) build replies in each API's exact wire shape.

import http from 'node:http';
import { randomBytes } from 'node:crypto';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const hex = (n) => randomBytes(n).toString('hex');
const b62 = (n) => {
  const abc = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return [...randomBytes(n)].map((b) => abc[b % 62]).join('');
};

/** Splits a string into `parts` non-empty pieces of about equal length (fewer if short). */
export function splitText(s, parts = 3) {
  if (s.length <= 1 || parts <= 1) return [s];
  const n = Math.min(parts, s.length);
  const size = Math.ceil(s.length / n);
  const out = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

/** What API a request path asks for (a proxy may keep a prefix such as /v1 or /s/NAME/v1). */
export function classify(method, path) {
  if (method === 'POST' && /\/messages\/count_tokens$/.test(path)) return 'anthropic.count_tokens';
  if (method === 'POST' && /\/messages$/.test(path)) return 'anthropic.messages';
  if (method === 'POST' && /\/chat\/completions$/.test(path)) return 'openai.chat';
  if (method === 'POST' && /\/responses$/.test(path)) return 'openai.responses';
  if (method === 'GET' && /\/models$/.test(path)) return 'openai.models'; // or Anthropic's (see defaultReply)
  return 'other';
}

/** A rough token count of a request (4 characters a token), for count_tokens and usage. */
export function roughTokens(value) {
  return Math.max(1, Math.ceil(JSON.stringify(value ?? '').length / 4));
}

// ---------------------------------------------------------------------------------------
// Anthropic Messages

export const anthropic = {
  text: (text) => ({ type: 'text', text }),
  toolUse: (name, input, id = `toolu_01${b62(22)}`) => ({ type: 'tool_use', id, name, input }),
  thinking: (thinking, signature = `Sig${b62(40)}==`) => ({ type: 'thinking', thinking, signature }),

  /** A complete Message object (the non-streaming answer, and what a stream adds up to). */
  message(request, { content = [anthropic.text('ok')], stop_reason, model, id, usage } = {}) {
    const stop = stop_reason ?? (content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
    return {
      id: id ?? `msg_01${b62(22)}`,
      type: 'message',
      role: 'assistant',
      model: model ?? request?.body?.model ?? 'claude-sonnet-4-5',
      content,
      stop_reason: stop,
      stop_sequence: null,
      stop_details: null,
      usage: {
        input_tokens: roughTokens(request?.body?.messages),
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: roughTokens(content),
        service_tier: 'standard',
        ...usage,
      },
    };
  },

  /** The SSE events of a message, as the API streams it: message_start (empty content,
   *  output_tokens 1), per block content_block_start (a ping after the first) / deltas /
   *  content_block_stop
   *  (text in `pieces` text_deltas; tool input as several input_json_delta partial_json
   *  pieces; thinking as thinking_deltas then one signature_delta), message_delta with
   *  stop_reason and usage, message_stop. */
  events(message, { pieces = 3 } = {}) {
    const ev = (type, data) => ({ event: type, data: { type, ...data } });
    const start = { ...message, content: [], stop_reason: null, stop_sequence: null, stop_details: null,
                    usage: { ...message.usage, output_tokens: 1 } };
    const out = [ev('message_start', { message: start })];
    const ping = (index) => { if (index === 0) out.push(ev('ping', {})); };
    message.content.forEach((block, index) => {
      if (block.type === 'text') {
        out.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }));
        ping(index);
        for (const t of splitText(block.text, pieces))
          out.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: t } }));
      } else if (block.type === 'tool_use') {
        out.push(ev('content_block_start', {
          index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } }));
        ping(index);
        const json = JSON.stringify(block.input);
        // The API's first delta is an empty partial_json; then the JSON in pieces.
        out.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } }));
        for (const p of splitText(json, Math.max(pieces, 3)))
          out.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: p } }));
      } else if (block.type === 'thinking') {
        out.push(ev('content_block_start', {
          index, content_block: { type: 'thinking', thinking: '', signature: '' } }));
        ping(index);
        for (const t of splitText(block.thinking, pieces))
          out.push(ev('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: t } }));
        out.push(ev('content_block_delta', { index, delta: { type: 'signature_delta', signature: block.signature } }));
      } else {
        // redacted_thinking and server blocks arrive whole in content_block_start.
        out.push(ev('content_block_start', { index, content_block: block }));
        ping(index);
      }
      out.push(ev('content_block_stop', { index }));
    });
    out.push(ev('message_delta', {
      delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence,
               stop_details: message.stop_details ?? null },
      usage: { output_tokens: message.usage.output_tokens },
    }));
    out.push(ev('message_stop', {}));
    return out;
  },

  /** The answer to a Messages request: streamed when the request asked for it. */
  reply(request, opts = {}) {
    const message = anthropic.message(request, opts);
    const headers = { 'request-id': `req_01${b62(22)}`, ...opts.headers };
    if (request?.body?.stream) {
      return { status: 200, headers, sse: anthropic.events(message, opts), delayMs: opts.delayMs,
               gate: opts.gate, message };
    }
    return { status: 200, headers, json: message, message };
  },

  /** An error answer: {"type":"error","error":{"type","message"},"request_id"}. */
  error(status, type, message, headers = {}) {
    const request_id = `req_01${b62(22)}`;
    return { status, headers: { 'request-id': request_id, ...headers },
             json: { type: 'error', error: { type, message }, request_id } };
  },
  /** The API's context-length refusal. */
  promptTooLong(tokens = 210000, maximum = 200000) {
    return anthropic.error(400, 'invalid_request_error', `prompt is too long: ${tokens} tokens > ${maximum} maximum`);
  },
  rateLimited(retryAfter = 1) {
    return anthropic.error(429, 'rate_limit_error',
      'This request would exceed the rate limit for your organization. Please try again later.',
      { 'retry-after': String(retryAfter) });
  },
  overloaded() { return anthropic.error(529, 'overloaded_error', 'Overloaded'); },
  /** An `error` event inside a stream (the API sends it after a 200 has started). */
  streamError(type = 'overloaded_error', message = 'Overloaded') {
    return { event: 'error', data: { type: 'error', error: { type, message } } };
  },
  countTokens(request) { return { status: 200, json: { input_tokens: roughTokens(request?.body) } }; },
  /** GET /v1/models in the Anthropic shape. */
  models(ids = ['claude-opus-5-5', 'claude-sonnet-4-6', 'claude-haiku-4-5']) {
    const data = ids.map((id) => ({ type: 'model', id, display_name: id, created_at: '2026-01-01T00:00:00Z' }));
    return { status: 200, json: { data, has_more: false, first_id: ids[0], last_id: ids.at(-1) } };
  },
};

// ---------------------------------------------------------------------------------------
// OpenAI Chat Completions

export const openai = {
  toolCall: (name, args, id = `call_${b62(24)}`) => ({
    id, type: 'function', function: { name, arguments: typeof args === 'string' ? args : JSON.stringify(args) } }),

  /** A complete chat.completion object. */
  chatCompletion(request, { content = 'ok', tool_calls, finish_reason, model, id, usage } = {}) {
    const message = { role: 'assistant', content: tool_calls?.length && content === 'ok' ? null : content,
                      refusal: null, annotations: [] };
    if (tool_calls?.length) message.tool_calls = tool_calls;
    const prompt = roughTokens(request?.body?.messages);
    const completion = roughTokens(message);
    return {
      id: id ?? `chatcmpl-${b62(29)}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: model ?? request?.body?.model ?? 'gpt-4o-2024-08-06',
      choices: [{ index: 0, message, logprobs: null,
                  finish_reason: finish_reason ?? (tool_calls?.length ? 'tool_calls' : 'stop') }],
      usage: usage ?? {
        prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0,
                                     accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      },
      service_tier: 'default',
      system_fingerprint: 'fp_f33640a400',
    };
  },

  /** The chunks of a completion as the API streams it (each one `data: {...}`): a first
   *  chunk with the role, content in pieces, each tool call as a first delta with index, id,
   *  type, name and empty arguments then argument pieces, a last chunk with finish_reason;
   *  with stream_options.include_usage every chunk has "usage": null and a final chunk has
   *  empty choices and the usage. Then `data: [DONE]`. */
  chatChunks(request, completion, { pieces = 3 } = {}) {
    const includeUsage = !!request?.body?.stream_options?.include_usage;
    const base = { id: completion.id, object: 'chat.completion.chunk', created: completion.created,
                   model: completion.model, service_tier: completion.service_tier,
                   system_fingerprint: completion.system_fingerprint };
    const chunk = (delta, finish_reason = null) => ({
      data: { ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason }],
              ...(includeUsage ? { usage: null } : {}) } });
    const msg = completion.choices[0].message;
    const out = [];
    out.push(chunk(msg.tool_calls && msg.content == null
      ? { role: 'assistant', content: null, refusal: null }
      : { role: 'assistant', content: '', refusal: null }));
    if (msg.content) for (const t of splitText(msg.content, pieces)) out.push(chunk({ content: t }));
    (msg.tool_calls ?? []).forEach((tc, index) => {
      out.push(chunk({ tool_calls: [{ index, id: tc.id, type: 'function',
                                      function: { name: tc.function.name, arguments: '' } }] }));
      for (const a of splitText(tc.function.arguments, Math.max(pieces, 3)))
        out.push(chunk({ tool_calls: [{ index, function: { arguments: a } }] }));
    });
    out.push(chunk({}, completion.choices[0].finish_reason));
    if (includeUsage) out.push({ data: { ...base, choices: [], usage: completion.usage } });
    out.push({ data: '[DONE]' });
    return out;
  },

  /** The answer to a Chat Completions request: streamed when the request asked for it. */
  chatReply(request, opts = {}) {
    const completion = openai.chatCompletion(request, opts);
    const headers = { 'x-request-id': `req_${hex(16)}`, 'openai-processing-ms': '42', ...opts.headers };
    if (request?.body?.stream) {
      return { status: 200, headers, sse: openai.chatChunks(request, completion, opts),
               delayMs: opts.delayMs, gate: opts.gate, completion };
    }
    return { status: 200, headers, json: completion, completion };
  },

  // -------------------------------------------------------------------------------------
  // OpenAI Responses

  outputText: (text, id = `msg_${hex(24)}`) => ({
    id, type: 'message', status: 'completed', role: 'assistant',
    content: [{ type: 'output_text', text, annotations: [], logprobs: [] }] }),
  functionCall: (name, args, call_id = `call_${b62(24)}`, id = `fc_${hex(24)}`) => ({
    id, type: 'function_call', status: 'completed',
    arguments: typeof args === 'string' ? args : JSON.stringify(args), call_id, name }),
  reasoning: (encrypted = `gAAAAA${b62(64)}`, id = `rs_${hex(24)}`, summary = []) => ({
    id, type: 'reasoning', summary, encrypted_content: encrypted }),

  /** A complete Response object (status completed). */
  response(request, { output = [openai.outputText('ok')], model, id, usage } = {}) {
    const body = request?.body ?? {};
    const input = roughTokens(body.input);
    const outTokens = roughTokens(output);
    return {
      id: id ?? `resp_${hex(24)}`,
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      status: 'completed',
      background: false,
      error: null,
      incomplete_details: null,
      instructions: body.instructions ?? null,
      max_output_tokens: body.max_output_tokens ?? null,
      model: model ?? body.model ?? 'gpt-5-2025-08-07',
      output,
      parallel_tool_calls: body.parallel_tool_calls ?? true,
      previous_response_id: body.previous_response_id ?? null,
      reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
      service_tier: 'default',
      store: body.store ?? true,
      temperature: body.temperature ?? 1,
      text: body.text ?? { format: { type: 'text' }, verbosity: 'medium' },
      tool_choice: body.tool_choice ?? 'auto',
      tools: body.tools ?? [],
      top_p: body.top_p ?? 1,
      truncation: 'disabled',
      usage: usage ?? {
        input_tokens: input, input_tokens_details: { cached_tokens: 0 },
        output_tokens: outTokens, output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: input + outTokens,
      },
      user: null,
      metadata: body.metadata ?? {},
    };
  },

  /** The SSE events of a response: response.created, response.in_progress, per output
   *  item output_item.added (in progress, empty text/arguments), for a message
   *  content_part.added, output_text.delta pieces, output_text.done, content_part.done;
   *  for a function call function_call_arguments.delta pieces and .done; then
   *  output_item.done with the whole item; last response.completed with the whole
   *  response. Every event has `event: TYPE` and a sequence_number. */
  responseEvents(response, { pieces = 3 } = {}) {
    let seq = 0;
    const ev = (type, data) => ({ event: type, data: { type, sequence_number: seq++, ...data } });
    const pending = { ...response, status: 'in_progress', output: [], usage: null };
    const out = [ev('response.created', { response: pending }), ev('response.in_progress', { response: pending })];
    response.output.forEach((item, output_index) => {
      if (item.type === 'message') {
        out.push(ev('response.output_item.added', {
          output_index, item: { ...item, status: 'in_progress', content: [] } }));
        item.content.forEach((part, content_index) => {
          const emptyPart = part.type === 'output_text' ? { ...part, text: '' } : { ...part, refusal: '' };
          out.push(ev('response.content_part.added', { item_id: item.id, output_index, content_index, part: emptyPart }));
          if (part.type === 'output_text') {
            for (const d of splitText(part.text, pieces))
              out.push(ev('response.output_text.delta', {
                item_id: item.id, output_index, content_index, delta: d, logprobs: [], obfuscation: b62(6) }));
            out.push(ev('response.output_text.done', {
              item_id: item.id, output_index, content_index, text: part.text, logprobs: [] }));
          }
          out.push(ev('response.content_part.done', { item_id: item.id, output_index, content_index, part }));
        });
      } else if (item.type === 'function_call') {
        out.push(ev('response.output_item.added', {
          output_index, item: { ...item, status: 'in_progress', arguments: '' } }));
        for (const d of splitText(item.arguments, Math.max(pieces, 3)))
          out.push(ev('response.function_call_arguments.delta', {
            item_id: item.id, output_index, delta: d, obfuscation: b62(6) }));
        out.push(ev('response.function_call_arguments.done', {
          item_id: item.id, output_index, arguments: item.arguments }));
      } else {
        out.push(ev('response.output_item.added', { output_index, item: { ...item } }));
      }
      out.push(ev('response.output_item.done', { output_index, item }));
    });
    out.push(ev('response.completed', { response }));
    return out;
  },

  /** The answer to a Responses request: streamed when the request asked for it. */
  responsesReply(request, opts = {}) {
    const response = openai.response(request, opts);
    const headers = { 'x-request-id': `req_${hex(16)}`, 'openai-processing-ms': '42', ...opts.headers };
    if (request?.body?.stream) {
      return { status: 200, headers, sse: openai.responseEvents(response, opts),
               delayMs: opts.delayMs, gate: opts.gate, response };
    }
    return { status: 200, headers, json: response, response };
  },

  /** An error answer: {"error":{"message","type","param","code"}}. */
  error(status, { message = 'error', type = 'invalid_request_error', param = null, code = null } = {}, headers = {}) {
    return { status, headers: { 'x-request-id': `req_${hex(16)}`, ...headers },
             json: { error: { message, type, param, code } } };
  },
  /** The context-length refusal (Chat Completions wording; Responses names `input`). */
  contextLengthExceeded(api = 'openai.chat', tokens = 130000, maximum = 128000) {
    return api === 'openai.responses'
      ? openai.error(400, { message: 'Your input exceeds the context window of this model. Please adjust your input and try again.',
                            param: 'input', code: 'context_length_exceeded' })
      : openai.error(400, { message: `This model's maximum context length is ${maximum} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
                            param: 'messages', code: 'context_length_exceeded' });
  },
  rateLimited(retryAfter = 1) {
    return openai.error(429, { message: 'Rate limit reached for requests', type: 'requests', code: 'rate_limit_exceeded' },
                        { 'retry-after': String(retryAfter) });
  },
  models(ids = ['gpt-5', 'gpt-4o']) {
    return { status: 200, json: { object: 'list', data: ids.map((id) => ({ id, object: 'model', created: 1700000000, owned_by: 'openai' })) } };
  },
};

/** The harmless answer for anything the script does not handle. */
export function defaultReply(request) {
  switch (request.api) {
    case 'anthropic.messages': return anthropic.reply(request, { content: [anthropic.text('ok')] });
    case 'anthropic.count_tokens': return anthropic.countTokens(request);
    case 'openai.chat': return openai.chatReply(request, { content: 'ok' });
    case 'openai.responses': return openai.responsesReply(request, { output: [openai.outputText('ok')] });
    case 'openai.models': // the same path in both APIs: Anthropic clients send anthropic-version
      return request.headers['anthropic-version'] ? anthropic.models() : openai.models();
    default:
      if (request.method === 'HEAD') return { status: 200, body: '' };
      return { status: 200, json: {} };
  }
}

// ---------------------------------------------------------------------------------------

// The whole answer a reply helper built (the message a stream adds up to), kept in the record.
function keepWhole(reply, rec) {
  for (const k of ['message', 'completion', 'response']) if (reply[k]) rec[k] = reply[k];
}

function sseText({ event, data }) {
  const payload = typeof data === 'string' ? data : JSON.stringify(data);
  return (event ? `event: ${event}\n` : '') + `data: ${payload}\n\n`;
}

/** Starts the fake on 127.0.0.1:port (0: any free port). */
export async function startFakeUpstream({ script, delayMs = 0, port = 0, log = false } = {}) {
  const upstream = {
    requests: [],
    script: script ?? (() => undefined),
    delayMs,
    url: '',
    openaiBaseURL: '',
    sockets: new Set(),
    /** The requests of one api (or all but 'other' without an argument). */
    calls(api) { return this.requests.filter((r) => (api ? r.api === api : r.api !== 'other')); },
    /** Resolves when a request matching pred has arrived (or rejects after timeoutMs). */
    async waitFor(pred, timeoutMs = 10000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const r = this.requests.find(pred);
        if (r) return r;
        if (Date.now() > end) throw new Error('fake upstream: no matching request within ' + timeoutMs + ' ms');
        await sleep(10);
      }
    },
    /** A one-line-per-request summary for failure messages. */
    summary() {
      return this.requests.map((r) => `#${r.seq} ${r.method} ${r.url} -> ${r.reply?.status ?? '?'}`).join('\n');
    },
  };
  let seq = 0;

  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const rawBody = Buffer.concat(chunks).toString('utf8');
    let body = null;
    try { body = rawBody ? JSON.parse(rawBody) : null; } catch { body = null; }
    const u = new URL(req.url, 'http://127.0.0.1');
    const headers = {};
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const k = req.rawHeaders[i].toLowerCase();
      headers[k] = k in headers ? `${headers[k]}, ${req.rawHeaders[i + 1]}` : req.rawHeaders[i + 1];
    }
    const record = {
      seq: ++seq, method: req.method, url: req.url, path: u.pathname,
      query: Object.fromEntries(u.searchParams), headers, rawBody, body,
      api: classify(req.method, u.pathname), time: Date.now(), reply: null,
    };
    upstream.requests.push(record);
    if (log) console.error(`[fake upstream] ${record.method} ${record.url}`);

    let reply;
    try {
      reply = (await upstream.script(record, upstream)) ?? defaultReply(record);
    } catch (e) {
      reply = { status: 500, json: { error: { message: `fake upstream script threw: ${e.stack ?? e}` } } };
    }
    if (reply.hangUp) {
      record.reply = { hangUp: true };
      req.socket.destroy();
      return;
    }
    const status = reply.status ?? 200;
    if (reply.sse) {
      const rec = { status, headers: reply.headers ?? {}, events: [], done: false, aborted: false };
      keepWhole(reply, rec);
      record.reply = rec;
      let closed = false;
      res.on('close', () => { if (!rec.done) { closed = true; rec.aborted = true; } });
      res.writeHead(status, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache',
                              connection: 'keep-alive', ...reply.headers });
      res.flushHeaders();
      const gap = reply.delayMs ?? upstream.delayMs;
      for (let i = 0; i < reply.sse.length; i++) {
        if (closed) return;
        if (i > 0 && gap > 0) await sleep(gap);
        if (reply.gate && i === reply.gate.after) {
          try { await reply.gate.until; } catch { /* released either way */ }
        }
        if (closed) return;
        res.write(sseText(reply.sse[i]));
        rec.events.push({ ...reply.sse[i], at: Date.now() });
      }
      rec.done = true;
      res.end();
      return;
    }
    const hdrs = { ...reply.headers };
    let payload;
    if ('json' in reply) {
      payload = JSON.stringify(reply.json);
      hdrs['content-type'] ??= 'application/json';
      record.reply = { status, headers: hdrs, json: reply.json };
      keepWhole(reply, record.reply);
    } else {
      payload = reply.body ?? '';
      hdrs['content-type'] ??= reply.contentType ?? 'text/plain; charset=utf-8';
      record.reply = { status, headers: hdrs, body: payload };
    }
    res.writeHead(status, hdrs);
    res.end(req.method === 'HEAD' ? undefined : payload);
  });
  server.keepAliveTimeout = 30000;
  server.on('connection', (s) => { upstream.sockets.add(s); s.on('close', () => upstream.sockets.delete(s)); });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  upstream.port = server.address().port;
  upstream.url = `http://127.0.0.1:${upstream.port}`;
  upstream.openaiBaseURL = `${upstream.url}/v1`;
  upstream.close = () => new Promise((resolve) => {
    for (const s of upstream.sockets) s.destroy();
    server.close(() => resolve());
  });
  return upstream;
}
