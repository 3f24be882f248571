// Checkpoints of one run (docs/runs.md): the package's run() in the worker (the order, the
// pairing by stem, every verdict and figure are the core's), shown as a timeline over the files —
// each slot's update-to-weight ratio (or rms(u) without parameters or a learning rate), the
// one-step pairs' gradient rms per slot, the broken elements of each pair (a pair too far apart
// to tell marked apart) — one line per consecutive pair that opens to its per-slot table, and the
// first file where something breaks. A click on a slot (chart or table) opens that file at that
// slot; the run card stays. A Trainer output folder's run pairs each checkpoint-N folder's
// optimizer with its model and sets each recovered learning rate beside the one logged.
import { positiveNumber } from '/js/index.js';
import { el, button, testid, canvasIn } from '../dom.js';
import { count, sci, plural } from '../format.js';
import { css, log, decades, logAxis, axisTitle } from '../parts/log-axis.js';
import { lrInput } from '../parts/lr-input.js';

const PAD = { left: 64, right: 44, top: 12, bottom: 24 };
const PANELS = [
  { key: 'health', title: (mode) => (mode === 'ratio' ? 'update / weight' : 'rms(u)'), weight: 2 },
  { key: 'gradient', title: () => 'rms(g), k = 1', weight: 1.5 },
  { key: 'broken', title: () => 'broken', weight: 1 },
];
const GAP = 26;

/** A pair's state: 'continuous', 'cannot-tell' (continuous null: too far apart) or 'broken'. */
const stateOf = (pair) => (pair.continuous === null ? 'cannot-tell' : pair.continuous ? 'continuous' : 'broken');
const STATE_CLASS = { continuous: 'good', 'cannot-tell': 'unknown', broken: 'bad' };

export class RunView {
  constructor(ctx) {
    this.ctx = ctx;
    this.files = null;   // [{name, source}] of the run, as dropped or picked
    this.trainer = null;   // a Trainer output folder's checkpoints (indices into files), or null
    this.answer = null;
    this.lr = null;
    this.selected = -1;
    this.at = -1;   // the run's file open in the other cards
  }

  mount(root) {
    this.card = testid(el('section', 'card run-card'), 'run');
    this.card.id = 'run-card';
    this.card.hidden = true;
    root.append(this.card);
    this.resize = new ResizeObserver(() => this.draw());
  }

  get store() {
    return this.ctx.store;
  }

  // ---- the view interface -----------------------------------------------------------------------

  /** A run was dropped or picked: compute it (the learning rate is an example's, if any). */
  onRun({ files, trainer = null }) {
    this.files = files;
    this.trainer = trainer;
    this.lr = this.store.lr;
    this.answer = null;
    this.selected = -1;
    this.at = -1;
    this.build();
    this.compute();
  }

  /** Another file opened (one of the run's, by a click here, or any other): the card stays; the
   *  run's file that is open is marked. */
  onFiles() {
    if (!this.answer) return;
    const primary = this.store.primary;
    this.at = primary ? this.answer.order.findIndex((k) => this.files[k].source === primary.source) : -1;
    this.draw();
  }

  onSelect({ slot }) {
    this.selected = slot;
    if (!this.answer) return;
    for (const tr of this.card.querySelectorAll('tr[data-slot]')) tr.classList.toggle('selected', Number(tr.dataset.slot) === slot);
    this.draw();
  }

  onLabels() {
    if (this.answer) this.render();
  }

  // ---- computing ----------------------------------------------------------------------------------

  build() {
    const card = this.card;
    card.hidden = false;
    card.replaceChildren();
    const head = el('div', 'card-head');
    head.append(el('h2', '', 'Checkpoints of one run'));
    const tools = el('div', 'tools');
    const { label: lab, input } = lrInput({ id: 'run-lr', ariaLabel: 'learning rate of the run', lr: this.lr, onChange: () => this.lrChanged() });
    this.lrInput = input;
    this.cancelButton = button('Cancel', { testid: 'run-cancel', onClick: () => this.ctx.rpc.cancel() });
    this.cancelButton.hidden = true;
    tools.append(lab, this.cancelButton, button('Close', { testid: 'run-close', onClick: () => this.close() }));
    head.append(tools);
    card.append(head);
    this.stateLine = testid(el('p', 'meta'), 'run-state');
    this.body = el('div', 'run-body');
    card.append(this.stateLine, this.body);
  }

  close() {
    this.files = null;
    this.answer = null;
    this.card.hidden = true;
    this.card.replaceChildren();
    this.resize.disconnect();
  }

  showState(text, bad = false) {
    this.stateLine.textContent = text;
    this.stateLine.classList.toggle('bad', bad);
  }

  lrChanged() {
    const text = this.lrInput.value.trim();
    const v = positiveNumber(text);
    if (text && Number.isNaN(v)) {
      this.showState(`The learning rate must be a positive number, not ${JSON.stringify(text)}.`, true);
      return;
    }
    this.lr = text ? v : null;
    this.compute();
  }

  async compute() {
    const files = this.files;
    const token = (this.token = {});
    this.cancelButton.hidden = false;
    this.showState('Reading the run…');
    const started = performance.now();
    try {
      const answer = await this.ctx.rpc.request('run', { files, lr: this.lr, trainer: this.trainer }, {
        onProgress: ({ phase, done, total }) => {
          if (this.token !== token) return;
          this.showState(phase === 'health'
            ? `Health of each file… ${done} of ${total}`
            : `Continuity of each pair… ${total ? Math.floor((100 * done) / total) : 0}%`);
        },
      });
      if (this.token !== token) return;
      this.answer = answer;
      // a Trainer run's slots are named by its models
      if (answer.slots && !this.store.labelsPinned) this.store.setLabels(answer.slots, { source: null });
      this.ms = Math.round(performance.now() - started);
      const notices = answer.unused.map((u) => ({ name: files[u.index].name, text: u.text }));
      // beside the drop's own (set when the drop was sorted, before the run came back)
      if (notices.length) this.store.setNotices([...this.store.notices, ...notices]);
      this.onFiles();
      this.render();
    } catch (err) {
      if (this.token !== token) return;
      this.answer = null;
      this.body.replaceChildren();
      this.showState(err.name === 'AbortError' ? 'Run cancelled.' : `The run could not be read: ${err.message}`, err.name !== 'AbortError');
    } finally {
      if (this.token === token) this.cancelButton.hidden = true;
    }
  }

  // ---- showing ------------------------------------------------------------------------------------

  name(i) {
    return this.answer.result.files[i].path ?? `file ${i}`;
  }

  slotName(s) {
    const label = this.store.label(s);
    return `slot ${s}${label ? ` ${label}` : ''}`;
  }

  /** Open file i of the run (with its model-state file) at slot s: the other cards show it. */
  async openAt(i, s) {
    const { order, states, kinds } = this.answer;
    const list = [this.files[order[i]]];
    if (states[i] !== null) list.push(this.files[states[i]]);
    // a Trainer folder's optimizer with the kind its training_args.bin gave it
    await this.ctx.openFiles(list.map(({ name, source }) => ({ name, source })), { kind: kinds?.[i] ?? null });
    if (s >= 0) this.store.select(s, 'run');
  }

  render() {
    const { result, series } = this.answer;
    const body = this.body;
    body.replaceChildren();
    this.mode = series.some((x) => x && x.ratio.some((r) => !Number.isNaN(r))) ? 'ratio' : 'rms';
    const states = result.files.filter((f) => f.state !== null).length;
    const folders = this.trainer?.some((c) => c.accelerate) ? 'checkpoint_K' : 'checkpoint-N';
    const with_ = this.trainer ? `each ${folders} folder's optimizer with its model` : states ? `${count(states)} with the model-state file of the same stem` : 'no model-state files';
    this.showState(`${plural(result.files.length, 'checkpoint')} in run order (${with_}), ${plural(result.pairs.length, 'consecutive pair')}, in ${this.ms} ms.`);

    // The verdict: the first file where something breaks, and why (the core's texts).
    const first = testid(el('div', `verdict ${result.first === null ? 'loads' : 'fails'}`), 'run-first');
    first.dataset.first = result.first === null ? '' : String(result.first);
    const failures = (f) => f.health.flags - f.health.warnings;   // warnings (the ratio band's) do not break a run
    const weak = result.cannotTell ?? 0;
    const apart = `${plural(weak, 'pair')} of ${result.pairs.length} cannot tell (too far apart)`;
    first.dataset.cannotTell = String(weak);
    if (result.first === null && !weak) first.append(el('strong', '', 'One run: every pair continuous, no file flagged.'));
    else if (result.first === null) {
      first.classList.replace('loads', 'unknown');
      first.append(el('strong', '', `Nothing breaks, but ${apart}: not shown to be one run.`));
    } else {
      const i = result.first, f = result.files[i];
      const pair = result.pairs.find((p) => p.b === i && !p.continuous);
      const why = !f.ok && f.error ? `invalid: ${f.error.message}`
        : pair ? pair.verdict
        : f.health && failures(f) ? `${plural(failures(f), 'health flag')} (open it for the health card)`
        : 'it does not continue the file before';
      first.append(el('strong', '', `Something breaks at file ${i} (${this.name(i)}): `), el('span', 'first-why', why));
      first.append(' ', button('Open it', { cls: 'link', onClick: () => this.openAt(i, pair?.slots.find((s) => s.message)?.slot ?? -1) }));
      if (weak) first.append(el('span', 'first-weak', ` Besides, ${apart}.`));
    }
    body.append(first);

    // The files.
    const files = el('table', 'run-files');
    const fh = el('tr');
    for (const h of ['file', 'step', 'flags', 'warnings', this.mode === 'ratio' ? 'median ratio' : '', 'state', 'name']) fh.append(el('th', '', h));
    files.append(fh);
    result.files.forEach((f, i) => {
      const tr = testid(el('tr', i === result.first ? 'bad' : ''), 'run-file');
      tr.dataset.index = String(i);
      // the flags as the run's JSON counts them: every flag, and how many of them are warnings
      tr.append(el('td', 'num', i), el('td', 'num', count(f.step)), el('td', 'num', f.health ? count(f.health.flags) : 'invalid'),
        el('td', 'num', f.health ? count(f.health.warnings) : ''),
        el('td', 'num', f.health?.ratio === null || f.health?.ratio === undefined ? '' : sci(f.health.ratio)), el('td', '', f.state ?? ''));
      const td = el('td');
      td.append(button(this.name(i), { cls: 'link', onClick: () => this.openAt(i, this.selected) }));
      tr.append(td);
      files.append(tr);
    });
    body.append(files);

    // The chart.
    this.caption = testid(el('p', 'meta map-status'), 'run-caption');
    this.caption.textContent = 'Each line is a slot over the files. Hover for its figures; click to open that file at that slot.';
    this.chartBox = testid(el('div', 'run-chart health-chart'), 'run-chart');
    this.chartBox.dataset.mode = this.mode;
    this.chartBox.dataset.files = String(result.files.length);
    this.chartBox.dataset.broken = result.pairs.map((p) => this.broken(p)).join(',');
    this.chartBox.dataset.pairs = result.pairs.map(stateOf).join(',');
    this.canvas = el('canvas');
    this.canvas.setAttribute('role', 'img');
    this.canvas.setAttribute('aria-label', 'the run over its files: per slot the update size, the gradient rms of one-step pairs, the broken elements per pair (a pair that cannot tell marked ?)');
    this.chartBox.append(this.canvas);
    body.append(this.caption, this.chartBox);
    this.bindChart();
    this.resize.disconnect();
    this.resize.observe(this.chartBox);

    // The recovered learning rate, offered when none is set.
    const lrs = result.pairs.flatMap((p) => p.slots.map((s) => s.lr)).filter((x) => typeof x === 'number' && x > 0);
    if (this.lr === null && lrs.length) {
      const last = lrs[lrs.length - 1];
      const p = el('p', 'meta');
      p.append(`The one-step pairs with model-state files recovered the learning rate (last: ${sci(last, 4)}). `,
        button('Use it for the ratios', { cls: 'link', testid: 'run-use-lr', onClick: () => {
          this.lrInput.value = String(Number(last.toPrecision(4)));
          this.lrChanged();
        } }));
      body.append(p);
    }

    // One line per consecutive pair, each opening to its slots.
    const list = testid(el('div', 'run-pairs'), 'run-pairs');
    for (const pair of result.pairs) list.append(this.pairRow(pair));
    body.append(list);
    this.draw();
  }

  /** The broken elements of a pair: the sum over its slots; null when no element was compared
   *  (another configuration or layout, an invalid file, a step back: the verdict says which). */
  broken(pair) {
    const judged = pair.slots.filter((s) => s.broken !== null);
    if (!judged.length) return pair.continuous ? 0 : null;
    return judged.reduce((n, s) => n + Number(s.broken), 0);
  }

  /** A pair's one line: its state and verdict, or its worst slot, its power and the slots whose
   *  learning rate came back; its slot table is built when it is first opened. */
  pairRow(pair) {
    const state = stateOf(pair);
    const row = testid(el('details', `run-pair ${STATE_CLASS[state]}`), 'run-pair');
    row.dataset.continuous = String(pair.continuous);
    row.dataset.state = state;
    const sum = el('summary');
    // how many slots cannot tell: said with a verdict of cannot tell, and among the figures
    const weak = `${pair.slotsCannotTell} of ${plural(pair.slots.length, 'slot')} cannot tell`;
    const said = state === 'continuous' ? 'continuous' : state === 'cannot-tell' ? `cannot tell: ${pair.verdict}; ${weak}` : `NOT continuous: ${pair.verdict}`;
    sum.append(el('strong', '', `${pair.a} → ${pair.b}`), ` ${this.name(pair.a)} → ${this.name(pair.b)}: `,
      testid(el('span', STATE_CLASS[state], said), 'run-pair-verdict'));
    if (state === 'continuous') {
      const parts = [];
      const worst = pair.slots.reduce((w, s) => (s.worst !== null && (w === null || s.worst > w.worst) ? s : w), null);
      if (worst) parts.push(`worst ${sci(worst.worst, 4)} at ${this.slotName(worst.slot)}`);
      if (pair.power !== null) parts.push(`power ${sci(pair.power, 3)}`);
      if (pair.slotsCannotTell) parts.push(weak);
      const lrs = pair.slots.filter((s) => s.lr !== null).length;
      if (lrs) parts.push(`lr on ${plural(lrs, 'slot')}`);
      if (parts.length) sum.append(testid(el('span', 'meta', ` (${parts.join(', ')})`), 'run-pair-figures'));
    }
    // a Trainer run: the recovered rate beside the one trainer_state.json logged (the core's verdict)
    const logged = pair.loggedLr;
    if (logged && logged.agrees !== null) {
      // the slots' recovered rates as printed: one figure, or the lowest to the highest
      const shown = [...new Set(pair.slots.filter((s) => s.lr !== null).sort((x, y) => x.lr - y.lr).map((s) => sci(s.lr, 4)))];
      const recovered = shown.length > 1 ? `${shown[0]} to ${shown[shown.length - 1]}` : shown[0];
      sum.append(testid(el('span', logged.agrees ? 'meta' : 'bad', ` lr ${recovered} ${logged.agrees ? 'agrees with' : 'DIFFERS from'} the one logged at step ${count(logged.step)}: ${sci(logged.learningRate, 4)}`), 'run-pair-logged'));
    }
    row.append(sum);
    if (!pair.slots.length) return row;
    // the table of a pair of many slots costs its rows: made when the pair opens
    row.addEventListener('toggle', () => {
      if (row.open && !row.querySelector('.run-slots-box')) row.append(this.slotTable(pair));
    });
    return row;
  }

  /** A pair's per-slot table. */
  slotTable(pair) {
    const table = el('table', 'run-slots');
    const head = el('tr');
    for (const h of ['slot', 'name', 'steps', 'k', 'broken', 'first broken', 'worst', 'power', 'rms(g)', 'max|g|', 'lr', 'residual']) head.append(el('th', '', h));
    table.append(head);
    for (const s of pair.slots) {
      const tr = testid(el('tr', s.message ? 'bad' : s.cannotTell ? 'unknown' : ''), 'run-slot');
      tr.dataset.slot = String(s.slot);
      tr.classList.toggle('selected', s.slot === this.selected);
      tr.tabIndex = 0;
      tr.title = s.message ?? s.cannotTell ?? `open ${this.name(pair.b)} at slot ${s.slot}`;
      const cells = [s.slot, this.store.label(s.slot), `${count(s.stepA)}→${count(s.stepB)}`, count(s.k), s.broken === null ? '' : count(s.broken),
        s.firstBroken === null ? '' : count(s.firstBroken), s.worst === null ? '' : sci(s.worst, 4),
        s.power === null ? '' : sci(s.power, 3), sci(s.gradient?.rms), sci(s.gradient?.maxAbs), s.lr === null ? '' : sci(s.lr, 4), s.lrResidual === null ? '' : sci(s.lrResidual)];
      cells.forEach((c, k) => tr.append(el('td', k === 1 ? 'name' : 'num', c)));
      const go = () => this.openAt(pair.b, s.slot);
      tr.addEventListener('click', go);
      tr.addEventListener('keydown', (e) => e.key === 'Enter' && go());
      table.append(tr);
      if (s.message || s.cannotTell) {
        const msg = el('tr', `${s.message ? 'bad' : 'unknown'} message`);
        const td = el('td', '', s.message ?? s.cannotTell);
        td.colSpan = 12;
        msg.append(td);
        table.append(msg);
      }
    }
    const box = el('div', 'run-slots-box');
    box.append(table);
    return box;
  }

  // ---- the chart ----------------------------------------------------------------------------------

  /** Per panel: the points [{x (file index), v (log10), slot}] and the value range. */
  points() {
    const { result, series } = this.answer;
    const health = [], gradient = [], broken = [];
    series.forEach((x, i) => {
      if (!x) return;
      const arr = this.mode === 'ratio' ? x.ratio : x.rms;
      for (let s = 0; s < arr.length; s++) {
        const v = log(arr[s]);
        if (v !== null) health.push({ x: i, v, slot: s });
      }
    });
    for (const p of result.pairs) {
      for (const s of p.slots) {
        const v = s.k === 1 ? log(s.gradient?.rms) : null;
        if (v !== null) gradient.push({ x: p.b, v, slot: s.slot });
      }
      const n = this.broken(p);
      broken.push({ x: (p.a + p.b) / 2, n, pair: p });
    }
    return { health, gradient, broken };
  }

  bindChart() {
    const at = (e) => this.hit(e.offsetX, e.offsetY);
    this.canvas.addEventListener('pointermove', (e) => {
      const h = at(e);
      this.hover = h;
      this.caption.textContent = h ? this.describe(h) : 'Each line is a slot over the files. Hover for its figures; click to open that file at that slot.';
      this.draw();
    });
    this.canvas.addEventListener('pointerleave', () => {
      this.hover = null;
      this.draw();
    });
    this.canvas.addEventListener('click', (e) => {
      const h = at(e);
      if (h) this.openAt(h.file, h.slot ?? this.selected);
    });
  }

  describe(h) {
    const name = this.name(h.file);
    if (h.slot === undefined) return `file ${h.file} (${name}): click to open it${this.selected >= 0 ? ` at ${this.slotName(this.selected)}` : ''}`;
    return `${this.slotName(h.slot)} at file ${h.file} (${name}): ${h.what} ${sci(10 ** h.v)}`;
  }

  /** The nearest point under the pointer: {file, slot?, v, what}, or the file column. */
  hit(px, py) {
    if (!this.layout) return null;
    const { xOf, panels, n } = this.layout;
    const file = Math.max(0, Math.min(n - 1, Math.round(((px - PAD.left) / Math.max(1, this.width - PAD.left - PAD.right)) * Math.max(1, n - 1))));
    if (px < PAD.left - 8) return null;
    for (const p of panels) {
      if (py < p.top || py > p.bottom || p.key === 'broken') continue;
      let best = null, dist = 12;
      for (const q of p.points) {
        const d = Math.hypot(xOf(q.x) - px, p.y(q.v) - py);
        if (d < dist) {
          dist = d;
          best = { file: q.x, slot: q.slot, v: q.v, what: p.key === 'gradient' ? 'rms(g)' : p.title };
        }
      }
      if (best) return best;
    }
    return { file };
  }

  draw() {
    if (!this.answer || !this.canvas || this.card.hidden) return;
    const c = canvasIn(this.canvas, this.chartBox);
    if (!c) return;
    const { g } = c;
    this.width = c.width;
    const muted = css('--muted', '#666'), line = css('--line', '#ddd'), good = css('--good', '#1b7a3a'), bad = css('--bad', '#b3261e');
    const fg = css('--fg', '#222'), accent = css('--accent', '#2456c8'), warn = css('--warn', '#8a5a00');
    const n = this.answer.result.files.length;
    const xOf = (i) => PAD.left + (n > 1 ? (i / (n - 1)) : 0.5) * (c.width - PAD.left - PAD.right);
    const pts = this.points();
    const total = PANELS.reduce((a, p) => a + p.weight, 0);
    const avail = c.height - PAD.top - PAD.bottom - GAP * (PANELS.length - 1);
    let top = PAD.top;
    const panels = PANELS.map((p) => {
      const h = (avail * p.weight) / total;
      const panel = { key: p.key, title: p.title(this.mode), top, bottom: top + h, points: pts[p.key] ?? [] };
      top += h + GAP;
      return panel;
    });
    this.layout = { xOf, panels, n };
    g.font = '11px system-ui, sans-serif';
    // file columns: the open one marked
    for (let i = 0; i < n; i++) {
      g.strokeStyle = i === this.at ? accent : line;
      g.lineWidth = i === this.at ? 2 : 1;
      g.beginPath();
      g.moveTo(xOf(i) + 0.5, PAD.top);
      g.lineTo(xOf(i) + 0.5, c.height - PAD.bottom);
      g.stroke();
    }
    g.lineWidth = 1;
    const first = this.answer.result.first;
    if (first !== null) {
      g.fillStyle = bad;
      g.globalAlpha = 0.12;
      g.fillRect(xOf(first) - 6, PAD.top, 12, c.height - PAD.top - PAD.bottom);
      g.globalAlpha = 1;
    }
    for (const p of panels) {
      if (p.key === 'broken') this.drawBroken(g, p, { xOf, muted, good, bad, line, warn });
      else this.drawLines(g, p, { xOf, muted, line, fg, accent });
      axisTitle(g, p.title, 12, p.top, p.bottom, muted);
    }
    // x axis: the files' steps
    g.fillStyle = muted;
    g.textAlign = 'center';
    const labelW = 60, every = Math.max(1, Math.ceil((labelW * n) / Math.max(1, c.width - PAD.left - PAD.right)));
    // file i and its largest step (a restarted optimizer's steps go back: the name's number does not)
    for (let i = 0; i < n; i += every) g.fillText(`${i}: step ${this.answer.result.files[i].step ?? '?'}`, xOf(i), c.height - 8);
    g.textAlign = 'left';
  }

  /** One line per slot over the files (a one-step pair's gradient: dots at B). */
  drawLines(g, p, { xOf, muted, line, fg, accent }) {
    let lo = Infinity, hi = -Infinity;
    for (const q of p.points) {
      lo = Math.min(lo, q.v);
      hi = Math.max(hi, q.v);
    }
    if (!Number.isFinite(lo)) {
      g.fillStyle = muted;
      g.fillText(p.key === 'gradient' ? 'no one-step pair: the gradient comes back from k = 1 pairs only' : 'no figure', PAD.left + 6, (p.top + p.bottom) / 2);
      p.y = () => NaN;
      return;
    }
    p.y = logAxis(g, decades(lo, hi), { top: p.top, bottom: p.bottom, left: PAD.left, right: this.width - PAD.right, spacing: 18, text: muted, line });
    const bySlot = new Map();
    for (const q of p.points) {
      if (!bySlot.has(q.slot)) bySlot.set(q.slot, []);
      bySlot.get(q.slot).push(q);
    }
    const hot = this.hover?.slot ?? -1;
    const pass = (highlight) => {
      for (const [slot, list] of bySlot) {
        const on = slot === this.selected || slot === hot;
        if (on !== highlight) continue;
        g.strokeStyle = on ? (slot === this.selected ? accent : fg) : muted;
        g.fillStyle = g.strokeStyle;
        g.globalAlpha = on ? 1 : 0.45;
        g.lineWidth = on ? 2 : 1;
        if (p.key === 'health' && list.length > 1) {
          g.beginPath();
          list.forEach((q, k) => (k ? g.lineTo(xOf(q.x), p.y(q.v)) : g.moveTo(xOf(q.x), p.y(q.v))));
          g.stroke();
        }
        for (const q of list) {
          g.beginPath();
          g.arc(xOf(q.x), p.y(q.v), on ? 3.5 : 2.2, 0, 2 * Math.PI);
          g.fill();
        }
      }
    };
    pass(false);
    pass(true);
    g.globalAlpha = 1;
    g.lineWidth = 1;
  }

  /** Per pair: its broken elements (log scale), green 0 when continuous, red when not; a pair
   *  that cannot tell a dashed amber box with ?, apart from both. */
  drawBroken(g, p, { xOf, muted, good, bad, line, warn }) {
    const max = p.points.reduce((m, q) => Math.max(m, q.n ?? 0), 0);
    const h = p.bottom - p.top;
    const scale = (n) => (max > 0 ? (Math.log10(1 + n) / Math.log10(1 + max)) * h : 0);
    g.strokeStyle = line;
    g.beginPath();
    g.moveTo(PAD.left, p.bottom + 0.5);
    g.lineTo(this.width - PAD.right, p.bottom + 0.5);
    g.stroke();
    g.textAlign = 'center';
    for (const q of p.points) {
      const x = xOf(q.x);
      if (q.pair.continuous === null) {
        g.strokeStyle = warn;
        g.setLineDash([3, 2]);
        g.strokeRect(x - 6.5, p.bottom - h * 0.5, 13, h * 0.5);
        g.setLineDash([]);
        g.fillStyle = warn;
        g.fillText('?', x, p.bottom - h * 0.25 + 4);
        g.fillText('cannot tell', x, p.top + 10);
        continue;
      }
      const ok = q.pair.continuous;
      g.fillStyle = ok ? good : bad;
      if (q.n === null) g.fillText('✕', x, p.bottom - 4);   // not compared: the pair's verdict says why
      else if (q.n > 0) g.fillRect(x - 6, p.bottom - Math.max(3, scale(q.n)), 12, Math.max(3, scale(q.n)));
      else g.fillRect(x - 6, p.bottom - 2, 12, 2);
      g.fillStyle = ok ? muted : bad;
      g.fillText(q.n === null ? 'not compared' : count(q.n), x, p.top + 10);
    }
    g.textAlign = 'left';
  }
}
