// A session: the timeline of its context requests (timeline.js) and, for the request
// picked, the context that was sent beside what changed since the request before it.
import { allContexts, auditOfType, enc, get } from './api.js';
import { SECTIONS, Timeline, sectionKeys, sectionTokens, swatch } from './timeline.js';
import { ago, clear, el, errorBox, facts, num, panel, textOf, usageBar } from './util.js';

const LABELS = Object.fromEntries(SECTIONS);

// The requests from context.built events, when the daemon has no contexts route.
async function contextsFromAudit(id) {
  const events = await auditOfType('context.built', id);
  return events.map((e) => ({
    context_id: e.detail.context_id, at: e.timestamp, used_tokens: e.detail.used_tokens,
    budget: e.detail.total, window: e.detail.total, zone: e.detail.zone, sections: {},
    summaries: e.detail.summaries, kept_messages: e.detail.kept_messages,
    dropped_messages: e.detail.dropped_messages, forced: false,
  }));
}

/** Index of the first request at or after `iso` (the request that first could show it). */
function indexAtTime(contexts, iso) {
  let lo = 0;
  let hi = contexts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (contexts[mid].at < iso) lo = mid + 1; else hi = mid;
  }
  return Math.min(lo, contexts.length - 1);
}

/** What changed between two contexts' messages: evicted, pruned, newly summarized. */
export function contextDiff(prev, cur) {
  const info = (ctx) => {
    const shown = new Map();  // seq -> entry
    const summaries = new Map();  // summary id -> covered
    for (const m of ctx?.messages || []) {
      const x = m.missy || {};
      if (x.summary_id) summaries.set(x.summary_id, x.covered || []);
      if (x.seq) shown.set(x.seq, x.entry);
    }
    return { shown, summaries };
  };
  const a = info(prev);
  const b = info(cur);
  const coveredNow = (seq) => [...b.summaries.values()].some(([f, l]) => seq >= f && seq <= l);
  const evicted = [];
  for (const seq of a.shown.keys()) if (!b.shown.has(seq) && !coveredNow(seq)) evicted.push(seq);
  const pruned = [];
  for (const [seq, entry] of b.shown) if (entry === 'pruned' && a.shown.get(seq) !== 'pruned') pruned.push(seq);
  const summarized = [];
  for (const [id, covered] of b.summaries) if (!a.summaries.has(id)) summarized.push({ id, covered });
  return { evicted, pruned, summarized };
}

function seqList(seqs) {
  if (!seqs.length) return 'none';
  seqs.sort((x, y) => x - y);
  const runs = [];
  let start = seqs[0];
  let last = seqs[0];
  for (const s of seqs.slice(1).concat([null])) {
    if (s === last + 1) { last = s; continue; }
    runs.push(start === last ? `${start}` : `${start}–${last}`);
    start = s;
    last = s;
  }
  return runs.join(', ');
}

function sectionsTable(ctx, keys) {
  const body = el('tbody');
  for (const [i, k] of keys.entries()) {
    const t = sectionTokens(ctx, k);
    body.append(el('tr', { dataset: { section: k, value: t } },
      el('th', { scope: 'row' }, swatch(k, i), LABELS[k] || k),
      el('td', { class: 'num', text: num(t) })));
  }
  body.append(
    el('tr', { class: 'total', dataset: { section: 'used', value: ctx.used_tokens } }, el('th', { scope: 'row', text: 'Used' }), el('td', { class: 'num', text: num(ctx.used_tokens) })),
    el('tr', { dataset: { section: 'budget', value: ctx.budget } }, el('th', { scope: 'row', text: 'Budget' }), el('td', { class: 'num', text: num(ctx.budget) })),
    el('tr', { dataset: { section: 'window', value: ctx.window } }, el('th', { scope: 'row', text: 'Window' }), el('td', { class: 'num', text: num(ctx.window) })));
  return el('table', { class: 'grid compact', id: 'context-sections' },
    el('caption', { text: 'Sections (tokens)' }), body);
}

function messageRow(m) {
  const x = m.missy || {};
  const text = textOf(m);
  const preview = text.length > 400 ? `${text.slice(0, 400)}…` : text;
  const body = el('pre', { class: 'msg-text', text: preview });
  const more = text.length > 400
    ? el('button', { type: 'button', class: 'link', text: 'whole text', onclick: (e) => { body.textContent = text; e.target.remove(); } })
    : null;
  const tags = [el('span', { class: `tag entry-${x.entry || 'none'}`, text: x.entry || 'sent' })];
  if (x.seq) tags.push(el('span', { class: 'meta', text: `seq ${x.seq}` }));
  if (x.summary_id) tags.push(el('a', { class: 'meta', href: `#/tree/${enc(m.session_id || '')}`, text: `${x.summary_id} · depth ${x.depth} · covers ${x.covered?.[0]}–${x.covered?.[1]}` }));
  if (x.original_tokens) tags.push(el('span', { class: 'meta', text: `${num(x.original_tokens)} tokens originally` }));
  return el('li', { class: `msg role-${m.role}` }, el('div', { class: 'msg-head' }, el('strong', { text: m.role }), ...tags), body, more);
}

export async function render(root, id) {
  const session = await get(`/v1/sessions/${enc(id)}`);
  let contexts;
  let fromAudit = false;
  try {
    contexts = await allContexts(id);
  } catch (e) {
    if (e.status !== 404) throw e;
    contexts = await contextsFromAudit(id);
    fromAudit = true;
  }
  const [summaryEvents, forcedEvents] = await Promise.all([
    auditOfType('summarization.completed', id).catch(() => []),
    auditOfType('compaction.forced', id).catch(() => []),
  ]);
  const marks = {
    summaries: [...new Set(summaryEvents.map((e) => indexAtTime(contexts, e.timestamp)))],
    forced: [...new Set([
      ...contexts.flatMap((c, i) => (c.forced ? [i] : [])),
      ...forcedEvents.map((e) => indexAtTime(contexts, e.timestamp)),
    ])],
  };
  if (!contexts.length) { marks.summaries = []; marks.forced = []; }

  root.append(el('div', { class: 'toolbar' },
    el('h1', {}, 'Session ', el('code', { text: id })),
    el('a', { href: `#/tree/${enc(id)}`, text: 'Summary tree' }),
    el('a', { href: '#/sessions', text: 'All sessions' })));
  root.append(facts([
    ['Model', session.model || '—'],
    ['Messages', num(session.message_count), 'messages'],
    ['Stored tokens', num(session.total_tokens), 'tokens'],
    ['Context requests', num(contexts.length), 'requests'],
    ['Summaries made', num(summaryEvents.length)],
    ['Forced compactions', num(marks.forced.length)],
    ['Last activity', ago(session.updated_at)],
  ]));

  const keys = sectionKeys(contexts);
  const legend = el('ul', { class: 'legend', 'aria-label': 'Legend' },
    keys.map((k, i) => el('li', {}, swatch(k, i), LABELS[k] || k)),
    el('li', {}, el('span', { class: 'swatch line-window' }), 'window'),
    el('li', {}, el('span', { class: 'swatch line-budget' }), 'budget'),
    el('li', {}, el('span', { class: 'swatch mark-summary' }), 'summary made'),
    el('li', {}, el('span', { class: 'swatch mark-forced' }), 'forced compaction'));
  const canvas = el('canvas', {
    id: 'timeline', tabindex: '0', role: 'img',
    'aria-label': `Timeline of ${contexts.length} context requests. Left and right arrows pick a request.`,
  });
  const status = el('p', { class: 'hint', 'aria-live': 'polite' });
  const wrap = el('div', { class: 'timeline-wrap' }, canvas);
  root.append(panel(`Context requests${fromAudit ? ' (from the audit trail: no sections)' : ''}`, legend, wrap, status));
  const detail = el('div', { class: 'detail', id: 'context-detail' });
  root.append(detail);
  if (!contexts.length) {
    status.textContent = 'No context request yet.';
    return null;
  }

  const cache = new Map();
  const load = (ctxId) => {
    if (!cache.has(ctxId)) cache.set(ctxId, get(`/v1/contexts/${enc(ctxId)}`));
    return cache.get(ctxId);
  };
  let shown = -1;
  async function show(i) {
    shown = i;
    const c = contexts[i];
    status.textContent = `Request ${i + 1} of ${contexts.length}: ${c.context_id}, ${num(c.used_tokens)} tokens used of ${num(c.budget)} (window ${num(c.window)}), ${c.zone}.`;
    clear(detail);
    detail.dataset.contextId = c.context_id;
    const left = el('div', { class: 'col' });
    const right = el('div', { class: 'col wide' });
    detail.append(left, right);
    left.append(el('h2', {}, 'Request ', el('code', { text: c.context_id })),
      el('p', {}, usageBar(c.used_tokens, c.window || c.budget, c.zone), ' ', ago(c.at)),
      sectionsTable(c, keys));
    if (fromAudit) return;
    right.append(el('p', { class: 'hint', text: 'Loading the context…' }));
    try {
      const [cur, prev] = await Promise.all([load(c.context_id), i > 0 ? load(contexts[i - 1].context_id) : null]);
      if (shown !== i) return;
      clear(right);
      const d = contextDiff(prev, cur);
      right.append(panel('Since the previous request',
        facts([
          ['Evicted', seqList(d.evicted), 'evicted'],
          ['Pruned', seqList(d.pruned), 'pruned'],
          ['Newly summarized', d.summarized.length ? d.summarized.map((s) => `${s.id} (${s.covered[0]}–${s.covered[1]})`).join(', ') : 'none', 'summarized'],
        ])));
      const list = el('ol', { class: 'messages' });
      for (const m of cur.messages || []) list.append(messageRow({ ...m, session_id: id }));
      right.append(panel(`The context sent (${num((cur.messages || []).length)} messages)`, list));
    } catch (err) {
      if (shown !== i) return;
      clear(right);
      right.append(errorBox(err));
    }
  }
  const timeline = new Timeline(canvas, contexts, marks, (i) => show(i));
  const t0 = performance.now();
  timeline.draw();
  canvas.dataset.drawMs = (performance.now() - t0).toFixed(1);
  canvas.dataset.requests = String(contexts.length);
  show(contexts.length - 1);
  return () => timeline.destroy();
}
