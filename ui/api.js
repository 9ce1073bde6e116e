// The daemon's API as the page reaches it: /ui/api/v1/... on the listener that served the
// page (relative URLs: nothing leaves this origin), and the audit stream (Server-Sent
// Events) shared by every page.

export class ApiError extends Error {
  constructor(status, body, path) {
    super(body?.error?.message ? `${body.error.message} (${status})` : `${path}: HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

async function call(method, path, body) {
  const init = { method, headers: { accept: 'application/json' }, credentials: 'same-origin' };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(`api${path}`, init);
  const text = await res.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  if (!res.ok) throw new ApiError(res.status, json, path);
  return json;
}

export const get = (path) => call('GET', path);
export const post = (path, body) => call('POST', path, body);
export const enc = encodeURIComponent;

/** Every session, paging the list. */
export async function allSessions() {
  const out = [];
  for (let offset = 0; ; offset += 1000) {
    const page = await get(`/v1/sessions?limit=1000&offset=${offset}`);
    out.push(...page.sessions);
    if (page.sessions.length < 1000) return out;
  }
}

/** Audit events of `type` (all of them, paged), optionally one session's only. */
export async function auditOfType(type, sessionId, maxPages = 50) {
  const out = [];
  let since = 0;
  for (let i = 0; i < maxPages; i += 1) {
    const page = await get(`/v1/audit?type=${enc(type)}&since=${since}&limit=10000`);
    for (const e of page.events) if (!sessionId || e.session_id === sessionId) out.push(e);
    if (page.events.length < 10000) break;
    since = page.events[page.events.length - 1].seq;
  }
  return out;
}

/** A session's context requests, oldest first (every page). */
export async function allContexts(id) {
  const out = [];
  let before = '';
  for (let i = 0; i < 1000; i += 1) {
    const q = before ? `&before=${enc(before)}` : '';
    const page = await get(`/v1/sessions/${enc(id)}/contexts?limit=1000${q}`);
    out.push(...page.contexts);
    if (!page.next_before || page.contexts.length === 0) break;
    before = page.next_before;
  }
  // Oldest first: by the audit seq of the context's event, else by time.
  out.sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0) || (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  return out;
}

// The shared audit stream: one EventSource for the page, listeners per page.
const listeners = new Set();
const stateListeners = new Set();
let source = null;
let state = 'connecting';

function setState(s) {
  state = s;
  for (const fn of stateListeners) fn(s);
}

function deliver(ev) {
  for (const fn of listeners) {
    try { fn(ev); } catch (e) { console.warn('audit listener failed', e); }
  }
}

export function startAuditStream() {
  if (source) return;
  source = new EventSource('api/v1/audit/stream');
  let opened = false;
  source.onopen = () => {
    // After a reconnection events may have been missed: pages read their data again.
    if (opened) deliver({ event_type: 'stream.reconnected' });
    opened = true;
    setState('live');
  };
  source.onmessage = (m) => {
    let ev;
    try { ev = JSON.parse(m.data); } catch { return; }
    deliver(ev);
  };
  source.onerror = () => {
    // The browser reconnects by itself unless the answer was not a stream.
    setState(source.readyState === EventSource.CLOSED ? 'offline' : 'reconnecting');
  };
}

/** Calls fn(event) for every audit event published from now on, and with
 *  {event_type: 'stream.reconnected'} after the stream was lost; returns the unsubscribe. */
export function onAudit(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export function onStreamState(fn) {
  stateListeners.add(fn);
  fn(state);
  return () => stateListeners.delete(fn);
}
