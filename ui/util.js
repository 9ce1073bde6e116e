// Small DOM and formatting helpers. Text from the daemon is only ever set as text
// (textContent), never parsed as HTML.

/** Builds an element: el('td', {class: 'num', dataset: {value: 5}}, '5'). */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = String(v);
    else if (k === 'dataset') for (const [dk, dv] of Object.entries(v)) e.dataset[dk] = String(dv);
    else if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  append(e, children);
  return e;
}

export function append(parent, children) {
  for (const c of [children].flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    parent.append(c instanceof Node ? c : String(c));
  }
  return parent;
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

/** A message's text as shown: its content, its parts' text, or its tool calls. */
export function textOf(m) {
  const calls = Array.isArray(m.tool_calls)
    ? m.tool_calls.map((c) => `→ ${c.function?.name}(${c.function?.arguments ?? ''})`).join('\n') : '';
  let text = '';
  if (typeof m.content === 'string') text = m.content;
  else if (Array.isArray(m.content)) text = m.content.map((p) => (p.type === 'text' ? p.text : `[${p.type}]`)).join('\n');
  return [text, calls].filter(Boolean).join('\n');
}

/** 12345 -> "12,345"; null -> "—". */
export function num(n) {
  if (n === null || n === undefined || Number.isNaN(Number(n))) return '—';
  return Number(n).toLocaleString('en-US');
}

export function bytes(n) {
  if (n === null || n === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = Number(n);
  let i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

export function duration(ms) {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 120) return `${s.toFixed(1)} s`;
  const m = s / 60;
  if (m < 120) return `${m.toFixed(0)} min`;
  return `${(m / 60).toFixed(1)} h`;
}

/** "3 min ago" for an ISO timestamp, with the timestamp itself as a title. */
export function ago(iso) {
  if (!iso) return el('span', { text: '—' });
  const t = Date.parse(iso);
  const s = Math.max(0, (Date.now() - t) / 1000);
  const text = s < 60 ? `${Math.round(s)} s ago` : s < 3600 ? `${Math.round(s / 60)} min ago`
    : s < 86400 ? `${Math.round(s / 3600)} h ago` : iso.slice(0, 10);
  return el('time', { datetime: iso, title: iso, text });
}

export const ZONES = ['safe', 'warning', 'overflow'];

/** A used/window bar coloured by zone, with the numbers as text beside it. */
export function usageBar(used, total, zone) {
  const pct = total > 0 ? Math.min(100, (100 * used) / total) : 0;
  const fill = el('span', { class: `fill zone-${ZONES.includes(zone) ? zone : 'none'}` });
  fill.style.width = `${pct.toFixed(1)}%`;
  return el('span', { class: 'usage', title: `${num(used)} of ${num(total)} tokens (${zone || 'no zone'})` },
    el('span', { class: 'bar', role: 'presentation' }, fill),
    el('span', { class: 'usage-text', text: `${num(used)} / ${num(total)}` }));
}

/** One section of a page: heading plus body. */
export function panel(title, ...body) {
  return el('section', { class: 'panel' }, el('h2', { text: title }), ...body);
}

/** A definition list from [label, value] pairs. */
export function facts(pairs) {
  const dl = el('dl', { class: 'facts' });
  for (const [k, v, key] of pairs) {
    dl.append(el('dt', { text: k }), el('dd', key ? { dataset: { fact: key } } : {}, v));
  }
  return dl;
}

export function errorBox(err) {
  return el('p', { class: 'error', role: 'alert', text: `Could not load: ${err.message || err}` });
}

/** Calls fn at most once per `ms`, the last call winning. */
export function debounce(fn, ms) {
  let t = null;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
}

/** Runs `task(item)` over items with at most `limit` running at once. */
export async function pool(items, limit, task) {
  const out = new Array(items.length);
  let next = 0;
  async function worker() {
    while (next < items.length) {
      const i = next++;
      out[i] = await task(items[i]);
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
