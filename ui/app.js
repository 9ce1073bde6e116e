// The inspector's shell: hash routes (#/sessions, #/session/ID, #/tree/ID, #/audit,
// #/health), the navigation and the audit stream's state. Each page module exports
// render(main, params) and may return a function that stops it (timers, listeners).
import { onStreamState, startAuditStream } from './api.js';
import { clear, el, errorBox } from './util.js';
import * as sessions from './sessions.js';
import * as session from './session.js';
import * as tree from './tree.js';
import * as audit from './audit.js';
import * as health from './health.js';

const routes = [
  [/^#\/sessions$/, sessions, 'sessions'],
  [/^#\/session\/(.+)$/, session, 'sessions'],
  [/^#\/tree\/(.+)$/, tree, 'sessions'],
  [/^#\/audit$/, audit, 'audit'],
  [/^#\/health$/, health, 'health'],
];

const main = document.getElementById('main');
let stop = null;
let generation = 0;

async function route() {
  const hash = location.hash || '#/sessions';
  let match = null;
  for (const [re, page, nav] of routes) {
    const m = hash.match(re);
    if (m) { match = { page, nav, params: m.slice(1).map(decodeURIComponent) }; break; }
  }
  if (!match) { location.hash = '#/sessions'; return; }
  if (typeof stop === 'function') stop();
  stop = null;
  const mine = ++generation;
  clear(main);
  delete document.body.dataset.ready;
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.page === match.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const root = el('div', { class: 'page' });
  main.append(root);
  let stopper = null;
  try {
    stopper = await match.page.render(root, ...match.params);
  } catch (err) {
    root.append(errorBox(err));
  }
  if (mine !== generation) {  // left while loading
    if (typeof stopper === 'function') stopper();
    root.remove();
    return;
  }
  stop = stopper;
  document.body.dataset.ready = hash;
}

onStreamState((s) => {
  const live = document.getElementById('live');
  live.textContent = s === 'live' ? 'live' : s;
  live.dataset.state = s;
});
startAuditStream();
window.addEventListener('hashchange', () => { route(); main.focus({ preventScroll: true }); });
route();
