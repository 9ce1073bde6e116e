// The timeline of a session's context requests on a canvas: one stacked bar per request
// (its sections' tokens), the window and the budget as lines, summaries made and forced
// compactions marked. Draws 10,000 requests in a few milliseconds: when there are more
// requests than pixels, each pixel column shows its largest request.

export const SECTIONS = [
  ['system', 'System'], ['tools', 'Tools'], ['task', 'Task'], ['memory', 'Memory'],
  ['learnings', 'Learnings'], ['summaries', 'Summaries'], ['history', 'History'],
  ['fresh_tail', 'Fresh tail'], ['new_message', 'New message'],
];

/** The token count of one section, whether the API gives a number or {tokens}. */
export function sectionTokens(ctx, key) {
  const v = ctx.sections ? ctx.sections[key] : undefined;
  if (v === undefined || v === null) return 0;
  if (typeof v === 'number') return v;
  return Number(v.tokens ?? 0);
}

/** The section keys these contexts report: the known ones in their order, then others. */
export function sectionKeys(contexts) {
  const seen = new Set();
  for (const c of contexts.slice(-50)) for (const k of Object.keys(c.sections || {})) seen.add(k);
  const known = SECTIONS.map(([k]) => k);
  return [...known.filter((k) => seen.has(k)), ...[...seen].filter((k) => !known.includes(k))];
}

function cssVar(name, fallback) {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

/** The colour of a section: its CSS variable (--sec-fresh-tail), else one from its index. */
export function sectionColor(key, index) {
  return cssVar(`--sec-${key.replaceAll('_', '-')}`, `hsl(${(index * 47 + 200) % 360} 45% 55%)`);
}

/** A legend swatch of a section's colour. */
export function swatch(key, index) {
  const s = document.createElement('span');
  s.className = 'swatch';
  s.style.background = sectionColor(key, index);
  return s;
}

export class Timeline {
  /**
   * @param canvas the <canvas>
   * @param contexts requests, oldest first
   * @param marks {summaries: [index], forced: [index]}
   */
  constructor(canvas, contexts, marks, onSelect) {
    this.canvas = canvas;
    this.contexts = contexts;
    this.marks = marks;
    this.onSelect = onSelect;
    this.selected = contexts.length ? contexts.length - 1 : -1;
    this.keys = sectionKeys(contexts);
    this.colors = this.keys.map((k, i) => sectionColor(k, i));
    this.scaleMax = 1;
    for (const c of contexts) {
      this.scaleMax = Math.max(this.scaleMax, c.window || 0, c.budget || 0, c.used_tokens || 0);
    }
    canvas.addEventListener('click', (e) => this.pick(e));
    canvas.addEventListener('keydown', (e) => this.key(e));
    this.resize = () => this.draw();
    window.addEventListener('resize', this.resize);
  }

  destroy() { window.removeEventListener('resize', this.resize); }

  indexAt(x) {
    const n = this.contexts.length;
    if (n === 0) return -1;
    return Math.max(0, Math.min(n - 1, Math.floor((x / this.width) * n)));
  }

  pick(e) {
    const rect = this.canvas.getBoundingClientRect();
    this.select(this.indexAt(e.clientX - rect.left));
  }

  key(e) {
    const n = this.contexts.length;
    const step = e.shiftKey ? Math.max(1, Math.round(n / 20)) : 1;
    let i = this.selected;
    if (e.key === 'ArrowLeft') i -= step;
    else if (e.key === 'ArrowRight') i += step;
    else if (e.key === 'Home') i = 0;
    else if (e.key === 'End') i = n - 1;
    else return;
    e.preventDefault();
    this.select(Math.max(0, Math.min(n - 1, i)));
  }

  select(i) {
    if (i < 0) return;
    this.selected = i;
    this.draw();
    this.onSelect(i);
  }

  draw() {
    const canvas = this.canvas;
    const dpr = window.devicePixelRatio || 1;
    const width = Math.max(200, canvas.parentElement.clientWidth);
    const height = 240;
    this.width = width;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
    const g = canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, height);
    const top = 14;
    const plot = height - top - 4;
    const y = (tokens) => top + plot - (plot * tokens) / this.scaleMax;
    const n = this.contexts.length;
    if (n === 0) return;
    const barW = width / n;
    // One bar per request, or per pixel column (its largest request) when they are more.
    const columns = Math.min(n, Math.floor(width));
    for (let col = 0; col < columns; col += 1) {
      const from = Math.floor((col * n) / columns);
      const to = Math.max(from + 1, Math.floor(((col + 1) * n) / columns));
      let best = from;
      for (let i = from + 1; i < to; i += 1) {
        if ((this.contexts[i].used_tokens || 0) > (this.contexts[best].used_tokens || 0)) best = i;
      }
      const x = (from * width) / n;
      const w = Math.max(1, ((to - from) * width) / n - (barW > 3 ? 1 : 0));
      let acc = 0;
      const c = this.contexts[best];
      for (let k = 0; k < this.keys.length; k += 1) {
        const t = sectionTokens(c, this.keys[k]);
        if (t <= 0) continue;
        g.fillStyle = this.colors[k];
        g.fillRect(x, y(acc + t), w, y(acc) - y(acc + t));
        acc += t;
      }
      if (acc === 0 && c.used_tokens) {  // no sections: the used tokens alone
        g.fillStyle = cssVar('--muted', '#888');
        g.fillRect(x, y(c.used_tokens), w, y(0) - y(c.used_tokens));
      }
    }
    // The window and the budget, per request (they change with the request's model).
    const line = (field, color, dash) => {
      g.strokeStyle = color;
      g.setLineDash(dash);
      g.lineWidth = 1.5;
      g.beginPath();
      const stepCols = Math.min(n, Math.floor(width));
      for (let col = 0; col < stepCols; col += 1) {
        const i = Math.floor((col * n) / stepCols);
        const v = this.contexts[i][field] || 0;
        const x0 = (i * width) / n;
        const x1 = ((Math.floor(((col + 1) * n) / stepCols)) * width) / n;
        if (col === 0) g.moveTo(x0, y(v)); else g.lineTo(x0, y(v));
        g.lineTo(x1, y(v));
      }
      g.stroke();
      g.setLineDash([]);
    };
    line('window', cssVar('--line-window', '#c33'), [6, 4]);
    line('budget', cssVar('--line-budget', '#36c'), []);
    // Marks: summaries made (a diamond on the top edge), forced compactions (a triangle).
    g.fillStyle = cssVar('--mark-summary', '#6a3');
    for (const i of this.marks.summaries) {
      const x = ((i + 0.5) * width) / n;
      g.beginPath();
      g.moveTo(x, 1); g.lineTo(x + 5, 6); g.lineTo(x, 11); g.lineTo(x - 5, 6);
      g.fill();
    }
    g.fillStyle = cssVar('--mark-forced', '#d22');
    for (const i of this.marks.forced) {
      const x = ((i + 0.5) * width) / n;
      g.beginPath();
      g.moveTo(x - 6, 1); g.lineTo(x + 6, 1); g.lineTo(x, 12);
      g.fill();
    }
    if (this.selected >= 0) {
      const x = (this.selected * width) / n;
      g.strokeStyle = cssVar('--fg', '#000');
      g.lineWidth = 2;
      g.strokeRect(x, top, Math.max(2, barW), plot);
    }
  }
}
