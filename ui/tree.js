// The summary tree of a session: levels by depth, each node with its covered range,
// tokens before → after, backend and duration (from its summarization.completed event);
// a node expands to its text and its originals (recall, paged); a search box over the
// session's originals (recall with a query).
import { auditOfType, enc, get, post } from './api.js';
import { clear, duration, el, errorBox, num, panel, textOf } from './util.js';

function recalled(answer) {
  const list = el('ol', { class: 'messages' });
  for (const m of answer.messages || []) {
    list.append(el('li', { class: `msg role-${m.role}`, dataset: { seq: m.seq } },
      el('div', { class: 'msg-head' }, el('strong', { text: m.role }),
        el('span', { class: 'meta', text: `seq ${m.seq} · ${num(m.tokens)} tokens${m.truncated ? ' · cut' : ''}` })),
      el('pre', { class: 'msg-text', text: textOf(m) })));
  }
  for (const s of answer.summaries || []) {
    list.append(el('li', { class: 'msg role-summary' },
      el('div', { class: 'msg-head' }, el('strong', { text: 'summary' }), el('span', { class: 'meta', text: s.id || '' })),
      el('pre', { class: 'msg-text', text: s.content || s.text || '' })));
  }
  return list;
}

function node(s, ev, sessionId) {
  const d = ev?.detail || {};
  const before = d.tokens_before;
  const after = d.tokens_after ?? s.tokens;
  const body = el('div', { class: 'node-body', hidden: true });
  const toggle = el('button', {
    type: 'button', class: 'node-head', 'aria-expanded': 'false',
    onclick: () => {
      const open = toggle.getAttribute('aria-expanded') !== 'true';
      toggle.setAttribute('aria-expanded', String(open));
      body.hidden = !open;
      if (open && !body.dataset.loaded) expand();
    },
  },
  el('code', { text: s.id }),
  el('span', { class: 'range', dataset: { first: s.first_seq, last: s.last_seq }, text: `seq ${s.first_seq}–${s.last_seq}` }),
  el('span', { text: `${before === undefined ? '?' : num(before)} → ${num(after)} tokens` }),
  el('span', { class: 'meta', text: d.backend || '' }),
  el('span', { class: 'meta', text: d.duration_ms === undefined ? '' : duration(d.duration_ms) }));

  async function page(after, into) {
    const answer = await post(`/v1/sessions/${enc(sessionId)}/recall`, { summary_id: s.id, after_seq: after, max_tokens: 4000 });
    into.append(recalled(answer));
    if (answer.next_after_seq) {
      const more = el('button', {
        type: 'button', class: 'link', text: `More originals (after seq ${answer.next_after_seq})`,
        onclick: async () => { more.remove(); await page(answer.next_after_seq, into); },
      });
      into.append(more);
    }
  }
  async function expand() {
    body.dataset.loaded = '1';
    body.append(el('h3', { text: 'Text' }), el('pre', { class: 'msg-text', text: s.content }));
    if (s.child_ids?.length) body.append(el('p', { class: 'meta', text: `Condenses ${s.child_ids.join(', ')}` }));
    const originals = el('div', { class: 'originals' });
    body.append(el('h3', { text: 'Originals' }), originals);
    try {
      await page(0, originals);
    } catch (err) {
      originals.append(errorBox(err));
    }
  }
  return el('li', { class: 'node', dataset: { summaryId: s.id, depth: s.depth, firstSeq: s.first_seq, lastSeq: s.last_seq } }, toggle, body);
}

export async function render(root, id) {
  const [{ summaries }, events] = await Promise.all([
    get(`/v1/sessions/${enc(id)}/summaries`),
    auditOfType('summarization.completed', id).catch(() => []),
  ]);
  const bySummary = new Map(events.map((e) => [e.detail.summary_id, e]));
  root.append(el('div', { class: 'toolbar' },
    el('h1', {}, 'Summary tree of ', el('code', { text: id })),
    el('a', { href: `#/session/${enc(id)}`, text: 'Timeline' })));

  const results = el('div', { class: 'results', 'aria-live': 'polite' });
  const input = el('input', { type: 'search', id: 'recall-query', placeholder: 'Search this session\u2019s originals', 'aria-label': 'Search this session\u2019s originals' });
  const form = el('form', {
    class: 'search', role: 'search',
    onsubmit: async (e) => {
      e.preventDefault();
      clear(results);
      const q = input.value.trim();
      if (!q) return;
      try {
        const answer = await post(`/v1/sessions/${enc(id)}/recall`, { query: q, max_tokens: 4000 });
        results.append(el('p', { class: 'hint', text: `${(answer.messages || []).length} message(s), ${num(answer.tokens)} tokens` }), recalled(answer));
      } catch (err) {
        results.append(errorBox(err));
      }
    },
  }, input, el('button', { type: 'submit', text: 'Search' }));
  root.append(panel('Recall', form, results));

  if (!summaries.length) {
    root.append(el('p', { class: 'hint', text: 'No summary yet.' }));
    return null;
  }
  const depths = [...new Set(summaries.map((s) => s.depth))].sort((a, b) => b - a);
  for (const depth of depths) {
    const level = summaries.filter((s) => s.depth === depth).sort((a, b) => a.first_seq - b.first_seq);
    const list = el('ul', { class: 'nodes' });
    for (const s of level) list.append(node(s, bySummary.get(s.id), id));
    root.append(el('section', { class: 'panel level', dataset: { depth } },
      el('h2', { text: `Depth ${depth}${depth === 0 ? ' (leaves)' : ''}: ${level.length} summar${level.length === 1 ? 'y' : 'ies'}` }), list));
  }
  return null;
}
