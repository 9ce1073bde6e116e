// Sessions: a live table of every session, sortable and filterable, its rows refreshed
// from the API when the audit stream names their session.
import { allSessions, enc, get, onAudit } from './api.js';
import { ago, clear, debounce, el, num, pool, usageBar } from './util.js';

const COLUMNS = [
  { key: 'id', label: 'Session', value: (r) => r.s.id },
  { key: 'model', label: 'Model', value: (r) => r.s.model || '' },
  { key: 'messages', label: 'Messages', value: (r) => r.s.message_count, numeric: true },
  { key: 'tokens', label: 'Stored tokens', value: (r) => r.s.total_tokens, numeric: true },
  { key: 'context', label: 'Last context (used / window)', value: (r) => (r.last ? r.last.used_tokens / Math.max(1, r.last.window || r.last.budget || 1) : -1), numeric: true },
  { key: 'summaries', label: 'Summaries', value: (r) => r.summaries ?? -1, numeric: true },
  { key: 'jobs', label: 'Jobs queued / running', value: (r) => r.jobs.queued * 1000 + r.jobs.running, numeric: true },
  { key: 'activity', label: 'Last activity', value: (r) => r.s.updated_at || '' },
];

// The extra figures of one session: its last context, its summaries, its jobs.
async function lastContext(id) {
  try {
    const page = await get(`/v1/sessions/${enc(id)}/contexts?limit=1`);
    return page.contexts.length ? page.contexts[0] : null;
  } catch {
    return null;
  }
}

async function summaryCount(id) {
  try {
    return (await get(`/v1/sessions/${enc(id)}/summaries`)).summaries.length;
  } catch {
    return null;
  }
}

async function jobsBySession() {
  const out = new Map();
  for (const state of ['queued', 'running']) {
    const { jobs } = await get(`/v1/jobs?state=${state}&limit=1000`);
    for (const j of jobs) {
      const c = out.get(j.session_id) || { queued: 0, running: 0 };
      c[state] += 1;
      out.set(j.session_id, c);
    }
  }
  return out;
}

export async function render(root) {
  const rows = new Map();  // id -> {s, last, summaries, jobs}
  let sortKey = 'activity';
  let sortDesc = true;
  let filter = '';

  const count = el('p', { class: 'count', 'aria-live': 'polite' });
  const search = el('input', {
    type: 'search', id: 'session-filter', placeholder: 'Filter by id or model',
    'aria-label': 'Filter sessions by id or model',
    oninput: () => { filter = search.value.trim().toLowerCase(); draw(); },
  });
  const thead = el('thead');
  const tbody = el('tbody');
  const table = el('table', { class: 'grid', id: 'sessions-table' }, el('caption', { class: 'sr-only', text: 'Sessions' }), thead, tbody);
  root.append(el('div', { class: 'toolbar' }, el('h1', { text: 'Sessions' }), search, count), el('div', { class: 'scroll' }, table));

  function header() {
    clear(thead);
    const tr = el('tr');
    for (const c of COLUMNS) {
      const sorted = c.key === sortKey;
      const btn = el('button', {
        type: 'button', class: 'sort', text: c.label,
        onclick: () => {
          if (sortKey === c.key) sortDesc = !sortDesc;
          else { sortKey = c.key; sortDesc = c.numeric || c.key === 'activity'; }
          header();
          draw();
        },
      });
      tr.append(el('th', {
        scope: 'col', class: c.numeric ? 'num' : '',
        'aria-sort': sorted ? (sortDesc ? 'descending' : 'ascending') : 'none',
      }, btn));
    }
    thead.append(tr);
  }

  function rowOf(r) {
    const s = r.s;
    const ctx = r.last;
    const link = el('a', { href: `#/session/${enc(s.id)}`, text: s.id });
    return el('tr', { dataset: { sessionId: s.id } },
      el('th', { scope: 'row' }, link),
      el('td', { text: s.model || '—' }),
      el('td', { class: 'num', dataset: { col: 'messages', value: s.message_count }, text: num(s.message_count) }),
      el('td', { class: 'num', dataset: { col: 'tokens', value: s.total_tokens }, text: num(s.total_tokens) }),
      el('td', { dataset: { col: 'context', value: ctx ? ctx.used_tokens : '' } },
        ctx ? usageBar(ctx.used_tokens, ctx.window || ctx.budget, ctx.zone) : '—'),
      el('td', { class: 'num', dataset: { col: 'summaries', value: r.summaries ?? '' } },
        r.summaries === null ? '—' : el('a', { href: `#/tree/${enc(s.id)}`, text: num(r.summaries) })),
      el('td', { class: 'num', dataset: { col: 'jobs', value: `${r.jobs.queued}/${r.jobs.running}` }, text: `${r.jobs.queued} / ${r.jobs.running}` }),
      el('td', {}, ago(s.updated_at)));
  }

  function draw() {
    const col = COLUMNS.find((c) => c.key === sortKey);
    const list = [...rows.values()].filter((r) => !filter || r.s.id.toLowerCase().includes(filter)
      || (r.s.model || '').toLowerCase().includes(filter));
    list.sort((a, b) => {
      const x = col.value(a);
      const y = col.value(b);
      const c = x < y ? -1 : x > y ? 1 : a.s.id < b.s.id ? -1 : 1;
      return sortDesc ? -c : c;
    });
    clear(tbody);
    for (const r of list) tbody.append(rowOf(r));
    count.dataset.count = String(rows.size);
    count.dataset.shown = String(list.length);
    count.textContent = list.length === rows.size ? `${num(rows.size)} sessions`
      : `${num(list.length)} of ${num(rows.size)} sessions`;
  }

  async function loadOne(id, jobs) {
    let s;
    try {
      s = await get(`/v1/sessions/${enc(id)}`);
    } catch (e) {
      if (e.status === 404) rows.delete(id);
      return;
    }
    const [last, summaries] = await Promise.all([lastContext(id), summaryCount(id)]);
    rows.set(id, { s, last, summaries, jobs: jobs.get(id) || { queued: 0, running: 0 } });
  }

  // Live: the sessions the stream names are read again (at most every 300 ms).
  const dirty = new Set();
  const refresh = debounce(async () => {
    const ids = [...dirty];
    dirty.clear();
    const jobs = await jobsBySession().catch(() => new Map());
    await pool(ids, 4, (id) => loadOne(id, jobs));
    for (const [id, r] of rows) r.jobs = jobs.get(id) || { queued: 0, running: 0 };
    draw();
  }, 300);
  const unsubscribe = onAudit((ev) => {
    if (ev.event_type === 'stream.reconnected') {
      reload().catch(() => {});
      return;
    }
    if (!ev.session_id) return;
    if (ev.event_type === 'session.deleted') {
      rows.delete(ev.session_id);
      draw();
      return;
    }
    dirty.add(ev.session_id);
    refresh();
  });

  async function reload() {
    const [list, jobs] = await Promise.all([allSessions(), jobsBySession()]);
    const extra = await pool(list, 4, (s) => Promise.all([lastContext(s.id), summaryCount(s.id)]));
    rows.clear();
    list.forEach((s, i) => {
      rows.set(s.id, { s, last: extra[i][0], summaries: extra[i][1], jobs: jobs.get(s.id) || { queued: 0, running: 0 } });
    });
    draw();
  }

  header();
  await reload();
  return unsubscribe;
}
