// Audit: the last events and a live tail from the audit stream, filtered by type and
// session, with the hash chain's verification state.
import { enc, get, onAudit } from './api.js';
import { clear, el, errorBox, num, panel } from './util.js';

const KEEP = 2000;  // rows kept in the tail

export async function render(root) {
  const events = [];
  const types = new Set();
  const hidden = new Set();
  let sessionFilter = '';
  let paused = false;

  const verifyBox = el('div', { id: 'audit-verify', 'aria-live': 'polite' });
  async function verify() {
    clear(verifyBox);
    verifyBox.append(el('span', { class: 'hint', text: 'Verifying the chain…' }));
    try {
      const v = await get('/v1/audit/verify');
      clear(verifyBox);
      verifyBox.dataset.ok = String(v.ok);
      verifyBox.append(el('span', { class: `tag ${v.ok ? 'ok' : 'broken'}`, text: v.ok ? 'chain intact' : 'chain broken' }),
        ` ${num(v.checked)} events checked (seq ${num(v.first_seq)}–${num(v.last_seq)})`,
        v.ok ? '' : `; first broken link at seq ${num(v.broken_seq)}: ${v.reason}`);
      return v;
    } catch (err) {
      clear(verifyBox);
      verifyBox.append(errorBox(err));
      return null;
    }
  }

  const typeBox = el('fieldset', { class: 'types' }, el('legend', { text: 'Types' }));
  const tbody = el('tbody');
  const count = el('span', { class: 'hint' });
  const session = el('input', {
    type: 'search', placeholder: 'Session id', 'aria-label': 'Show one session only',
    oninput: () => { sessionFilter = session.value.trim(); draw(); },
  });
  const pause = el('button', {
    type: 'button', 'aria-pressed': 'false', text: 'Pause',
    onclick: () => {
      paused = !paused;
      pause.setAttribute('aria-pressed', String(paused));
      pause.textContent = paused ? 'Resume' : 'Pause';
      if (!paused) draw();
    },
  });
  root.append(el('div', { class: 'toolbar' }, el('h1', { text: 'Audit' }),
    el('button', { type: 'button', text: 'Verify the chain', onclick: verify }), verifyBox));
  root.append(panel('Live tail', el('div', { class: 'toolbar' }, session, pause, count), typeBox,
    el('div', { class: 'scroll tall' }, el('table', { class: 'grid compact', id: 'audit-table' },
      el('thead', {}, el('tr', {}, ...['Seq', 'Time', 'Type', 'Session', 'Result', 'Detail'].map((h) => el('th', { scope: 'col', text: h })))),
      tbody))));

  function typeBoxes() {
    const known = new Set([...typeBox.querySelectorAll('input')].map((i) => i.value));
    for (const t of [...types].sort()) {
      if (known.has(t)) continue;
      const id = `type-${t.replace(/[^a-z0-9]/gi, '-')}`;
      const box = el('input', {
        type: 'checkbox', id, value: t, checked: !hidden.has(t),
        onchange: () => { if (box.checked) hidden.delete(t); else hidden.add(t); draw(); },
      });
      typeBox.append(el('label', { for: id }, box, ` ${t}`));
    }
  }

  function row(e) {
    const detail = JSON.stringify(e.detail ?? {});
    return el('tr', { dataset: { seq: e.seq, type: e.event_type } },
      el('td', { class: 'num', text: String(e.seq) }),
      el('td', { text: (e.timestamp || '').replace('T', ' ').replace('Z', '') }),
      el('td', {}, el('span', { class: `tag cat-${e.category}`, text: e.event_type })),
      el('td', {}, e.session_id ? el('a', { href: `#/session/${enc(e.session_id)}`, text: e.session_id }) : ''),
      el('td', { text: e.result || '' }),
      el('td', { class: 'detail-cell', title: detail, text: detail.length > 200 ? `${detail.slice(0, 200)}…` : detail }));
  }

  function draw() {
    typeBoxes();
    clear(tbody);
    let shown = 0;
    for (let i = events.length - 1; i >= 0; i -= 1) {
      const e = events[i];
      if (hidden.has(e.event_type) || (sessionFilter && e.session_id !== sessionFilter)) continue;
      tbody.append(row(e));
      shown += 1;
    }
    count.textContent = `${num(shown)} of the last ${num(events.length)} events`;
    count.dataset.shown = String(shown);
  }

  function add(e) {
    if (events.length && e.seq <= events[events.length - 1].seq) return;  // already shown
    events.push(e);
    types.add(e.event_type);
    if (events.length > KEEP) events.splice(0, events.length - KEEP);
  }

  // Live events that arrive while the backlog loads are merged by seq.
  const early = [];
  let loaded = false;
  const unsubscribe = onAudit((e) => {
    if (e.event_type === 'stream.reconnected') {  // read what the gap held
      const since = events.length ? events[events.length - 1].seq : 0;
      get(`/v1/audit?since=${since}&limit=1000`).then(({ events: missed }) => {
        for (const m of missed) add(m);
        if (!paused) draw();
      }).catch(() => {});
      return;
    }
    if (!loaded) { early.push(e); return; }
    add(e);
    if (!paused) draw();
  });
  const v = await verify();
  const last = v ? v.last_seq : 0;
  const { events: backlog } = await get(`/v1/audit?since=${Math.max(0, last - 200)}&limit=1000`);
  for (const e of backlog) add(e);
  for (const e of early.sort((a, b) => a.seq - b.seq)) add(e);
  loaded = true;
  draw();
  return unsubscribe;
}
