// Health: memory, the database's size, jobs, the broker and the proxy's upstreams,
// read again every 5 seconds.
import { get } from './api.js';
import { bytes, clear, duration, el, errorBox, facts, num, panel } from './util.js';

// The samples of one metric family in Prometheus text: [{labels, value}].
export function samples(text, name) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = line.match(/^([a-z_]+)(\{([^}]*)\})?\s+(\S+)/);
    if (!m || m[1] !== name) continue;
    const labels = {};
    for (const pair of (m[3] || '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]] = pair[2];
    out.push({ labels, value: Number(m[4]) });
  }
  return out;
}

async function metricsText() {
  const res = await fetch('api/metrics', { credentials: 'same-origin' });
  if (!res.ok) throw new Error(`metrics: HTTP ${res.status}`);
  return res.text();
}

async function jobCounts() {
  const out = {};
  for (const state of ['queued', 'running', 'done', 'failed']) {
    const { jobs } = await get(`/v1/jobs?state=${state}&limit=1000`);
    out[state] = jobs.length;
  }
  return out;
}

// The proxy's upstreams as configured (GET /ui/api/proxy), each with the requests it
// answered since the daemon started (missyd_proxy_requests_total).
function upstreamTable(proxy, metrics) {
  const counts = new Map();  // base URL -> {ok, failed}
  for (const s of samples(metrics, 'missyd_proxy_requests_total')) {
    const c = counts.get(s.labels.upstream) || { ok: 0, failed: 0 };
    if (/^2/.test(s.labels.status || '')) c.ok += s.value; else c.failed += s.value;
    counts.set(s.labels.upstream, c);
  }
  const rows = [];
  if (proxy) {
    rows.push(['anthropic', proxy.upstreams.anthropic], ['openai', proxy.upstreams.openai]);
    for (const r of proxy.routes) rows.push([`model ${r.model} → ${r.provider}`, r.base_url]);
  }
  for (const url of counts.keys()) if (!rows.some(([, u]) => u === url)) rows.push(['', url]);
  const body = el('tbody');
  for (const [what, url] of rows) {
    const c = counts.get(url) || { ok: 0, failed: 0 };
    body.append(el('tr', {}, el('td', { text: what }), el('td', {}, el('code', { text: url })),
      el('td', { class: 'num', text: num(c.ok) }), el('td', { class: 'num', text: num(c.failed) })));
  }
  return [
    el('p', { class: 'hint', text: proxy && proxy.enabled ? 'Proxy mode is on.' : 'Proxy mode is off (context.proxy.enabled).' }),
    el('table', { class: 'grid compact', id: 'upstreams' },
      el('thead', {}, el('tr', {}, ...['For', 'Upstream', '2xx answers', 'other'].map((h) => el('th', { scope: 'col', text: h })))), body),
  ];
}

async function draw(root) {
  const [h, jobs, metrics, proxy] = await Promise.all([get('/v1/health'), jobCounts(),
    metricsText().catch(() => ''), fetch('api/proxy').then((r) => (r.ok ? r.json() : null)).catch(() => null)]);
  const files = Object.fromEntries(samples(metrics, 'missyd_database_file_bytes').map((s) => [s.labels.file, s.value]));
  const mem = h.memory || {};
  const cache = mem.history_cache || {};
  const sqlite = mem.sqlite || {};
  const content = el('div', { class: 'cards', id: 'health' });
  const upstreams = panel('Proxy upstreams', upstreamTable(proxy, metrics));
  upstreams.classList.add('wide');
  content.append(
    panel('Daemon', facts([
      ['Status', h.status, 'status'], ['Version', h.version], ['Up for', duration(h.uptime_ms)],
      ['Requests', num(h.requests)], ['Schema', String(h.schema_version)]])),
    panel('Memory', facts([
      ['Resident', `${bytes(mem.rss_bytes)} of ${num(mem.limit_mb)} MiB`, 'rss'],
      ['History cache', `${bytes(cache.bytes)} of ${bytes(cache.max_bytes)}; ${num(cache.sessions)} sessions, ${num(cache.messages)} messages`],
      ['SQLite heap', bytes(sqlite.bytes)],
      ['Page cache', `${bytes(sqlite.cache_bytes)} of ${bytes(sqlite.cache_budget_bytes)}`],
      ['Open readers', num(sqlite.open_readers)]])),
    panel('Database', facts([
      ['File', files.db === undefined ? '—' : bytes(files.db), 'db-bytes'],
      ['WAL', files.wal === undefined ? '—' : bytes(files.wal)],
      ['Write transactions', num(h.storage?.write_transactions)],
      ['Commits with fsync', num(h.storage?.commits_with_fsync)]])),
    panel('Jobs', facts(Object.entries(jobs).map(([k, v]) => [k, v >= 1000 ? '1,000+' : num(v), `jobs-${k}`]))),
    panel('Broker', h.broker ? facts(Object.entries(h.broker).filter(([, v]) => typeof v !== 'object' || v === null)
      .map(([k, v]) => [k, String(v)])) : el('p', { class: 'hint', text: 'No broker configured (context.broker).' })),
    upstreams);
  clear(root);
  root.append(el('h1', { text: 'Health' }), content);
}

export async function render(root) {
  await draw(root);
  const timer = setInterval(() => {
    draw(root).catch((err) => { clear(root); root.append(errorBox(err)); });
  }, 5000);
  return () => clearInterval(timer);
}
