// Training health: the package's health pass (Adam's next step per slot per unit learning rate
// u = m̂/(√v̂+ε), the parameter's own figures from the state file, the update-to-weight ratio at
// the learning rate given, elements never updated, moments no gradient history can produce).
// A chart of log10 ratio per slot in module order, the band of the pass shaded (the core's
// ratioBand: ratio flags, warnings, fire outside it), marks coloured by the flags' severity (the
// core's: a failure, or a warning); without a state file (or a learning rate) the chart
// shows rms(u), which needs no parameters. Rows list the figures, flagged slots first. Hover a
// slot for its figures; click to select it in the table and the map. Slots narrower than a pixel
// are aggregated per pixel column (the range of values and the worst flag).
import { positiveNumber } from '/js/index.js';
import { $, el, button, testid, canvasIn } from '../dom.js';
import { count, sci, plural, ranOn } from '../format.js';
import { VirtualTable } from '../parts/vtable.js';
import { lrInput } from '../parts/lr-input.js';
import { css, decades, yOf, logAxis, axisTitle } from '../parts/log-axis.js';

/** Whether the pass read the checkpoint's own parameters (a DCP folder's model part): the
 *  ratio then needs only a learning rate. */
const ownParams = (r) => r.slots.some((x) => x.param);

const PAD = { left: 52, right: 12, top: 12, bottom: 26 };
const LANE = 22;
const FLAGS_IN_VIEW = 8;   // up to this many flags the list has no scroll of its own   // the lane under the plot for slots with no value (frozen)
const AUTO_ELEMENTS = 2 * 1024 * 1024;    // run by itself up to this many moment elements (a pass of ~0.1 s that
                                          // must not hold up the first click on an entry)
const AUTO_SLOTS = 100000;                 // and this many slots (the result is one object per slot)

const FLAG_TEXT = {
  inconsistent: () => 'moments inconsistent',
  momentsNonFinite: () => 'NaN/inf in moments',
  negativeV: () => 'negative v',
  parameterNonFinite: () => 'NaN/inf in parameter',
  ratioHigh: (band) => `ratio above ${bound(band[1])}`,
  ratioLow: (band) => `ratio below ${bound(band[0])}`,
};

/** A bound of the ratio band as the core's flag texts write it (1e-2, 2.5e-4). */
const bound = (x) => (x === 0 ? '0' : x.toExponential().replace('e+', 'e'));
const flagText = (f, band) => FLAG_TEXT[f]?.(band) ?? f;

// A slot's worst flag, as the core grades them (run() sets it): 3 a failure, 2 a warning, 0 none.
const severity = (s) => s.worst ?? 0;
const SEVERITY = { failure: 3, warning: 2 };

export class HealthView {
  constructor({ store, rpc, stats }) {
    this.store = store;
    this.rpc = rpc;
    this.stats = stats;
    this.lr = null;
    this.band = null;   // the ratio band typed, [low, high], or null: the core's default
    this.result = null;
    this.running = false;
    this.shown = null;
  }

  mount(root) {
    this.card = el('section', 'card');
    this.card.id = 'health-card';
    this.card.hidden = true;
    root.append(this.card);
    this.resize = new ResizeObserver(() => this.draw());
  }

  get opt() {
    return this.store.optimizer;
  }

  // ---- the view interface -----------------------------------------------------------------------

  /** Other files: the learning rate is the example's, or none (another run's is not theirs); a
   *  model-state file added to the same checkpoint keeps the one typed. */
  onFiles() {
    if (this.opt !== this.shown) this.lr = this.store.lr;
    this.shown = this.opt;
    this.reset();
  }

  onSelect({ slot, from }) {
    this.select(slot, from);
  }

  onLabels() {
    this.render();
  }

  onPair() {
    this.pairChanged();
  }

  pick(slot) {
    this.store.select(slot, 'health');
  }

  /** A new file (or pair): the card's controls; the pass runs by itself for small files. */
  reset() {
    this.table?.setOrder(new Int32Array(0));
    this.result = null;
    this.selected = -1;
    const opt = this.opt;
    // With a model-state file the health of training is the point: near the top; without one, a
    // view of the moments among the others, after the tables.
    this.card.classList.toggle('late', !this.store.stateFile);
    this.card.hidden = !opt?.summary.ok || !opt.cols.entryTotal;
    if (this.card.hidden) return;
    this.build();
    let elements = 0;
    for (let k = 0; k < opt.cols.entryTotal; k++) elements += opt.cols.entryCount(k);
    this.elements = elements;
    if (elements <= AUTO_ELEMENTS && opt.cols.n <= AUTO_SLOTS && (!this.store.stateFile || this.store.stateFile.summary.ok)) this.run();
    else this.showState(`Not run yet: the pass reads every moment${this.store.stateFile ? ' and parameter' : ''} (${count(elements)} elements in ${plural(opt.cols.n, 'slot')}).`);
  }

  /** The state file came, or the pair verdict arrived: run again with the parameters. */
  pairChanged() {
    if (!this.card.hidden && this.result && !this.result.withState && this.stateOf(this.opt)) this.run();
  }

  /** The parameters' file: the open model-state file, unless the optimizer is a DeepSpeed
   *  checkpoint (its fp32 master weights are its parameters; a model beside it is the new model
   *  it is paired with, docs/deepspeed.md). */
  stateOf(opt) {
    const st = this.store.stateFile;
    return st?.summary.ok && !opt?.summary.deepspeed ? st : null;
  }

  build() {
    const card = this.card;
    card.replaceChildren();
    const head = el('div', 'card-head');
    head.append(el('h2', '', 'Training health'));
    const controls = el('div', 'health-controls');
    const { label: lab, input } = lrInput({ id: 'lr-input', ariaLabel: 'learning rate', lr: this.lr, onChange: () => this.lrChanged() });
    this.lrInput = input;
    // the ratio warnings' band (the CLI's --ratio-band): two numbers; the core says what a band is
    const bandLab = el('label', 'meta', 'ratio band ');
    this.bandInput = testid(el('input'), 'ratio-band-input');
    this.bandInput.type = 'text';
    this.bandInput.placeholder = '1e-5, 1e-2';
    this.bandInput.size = 10;
    this.bandInput.value = this.band === null ? '' : this.band.join(', ');
    this.bandInput.setAttribute('aria-label', 'ratio band: low, high');
    this.bandInput.title = 'update-to-weight ratios outside it are flagged, as warnings (default 1e-5, 1e-2)';
    this.bandInput.addEventListener('change', () => this.bandChanged());
    this.bandInput.addEventListener('keydown', (e) => e.key === 'Enter' && this.bandChanged());
    bandLab.append(this.bandInput);
    this.runButton = button('Run the health pass', { testid: 'health-run', onClick: () => this.run() });
    // a pass over a large file takes a while: Cancel replaces the worker, the files stay open
    this.cancelButton = button('Cancel', { testid: 'health-cancel', onClick: () => this.rpc.cancel() });
    this.cancelButton.hidden = !this.running;
    controls.append(lab, bandLab, this.runButton, this.cancelButton);
    head.append(controls);
    card.append(head);
    this.stateLine = testid(el('p', 'meta'), 'health-state');
    card.append(this.stateLine);
    this.caption = testid(el('p', 'meta map-status'), 'health-caption');
    card.append(this.caption);
    this.chartBox = testid(el('div', 'health-chart'), 'health-chart');
    this.canvas = el('canvas');
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute('role', 'img');
    this.chartBox.append(this.canvas);
    card.append(this.chartBox);
    this.flagsBox = el('div', 'health-flags');
    card.append(this.flagsBox);
    const hint = el('span', 'scroll-hint');
    hint.hidden = true;
    const meta = el('div', 'table-meta');
    meta.append(el('span', 'meta', 'Per slot, flagged slots first:'), hint);
    card.append(meta);
    const tableBox = el('div', 'vtable');
    card.append(tableBox);
    this.table = new VirtualTable(tableBox, {
      rowTestId: 'health-row',
      label: 'training health per slot',
      hintEl: hint,
      onSelect: (i) => this.pick(i),
      columns: this.columns(),
    });
    this.bindChart();
    this.resize.disconnect();   // one observer, on the chart of the last build
    this.resize.observe(this.chartBox);
  }

  columns() {
    const s = (i) => this.result.bySlot[i];
    const label = (i) => this.store.label(i);
    return [
      { label: 'slot', width: '60px', min: 56, num: true, cell: (i) => ({ text: String(i) }) },
      { label: 'name', width: 'minmax(230px, 2fr)', min: 230, fit: 'name', cell: (i) => ({ text: label(i) }) },
      { label: 'flags', width: 'minmax(150px, 1.4fr)', min: 150, cell: (i) => {
        const x = s(i);
        const text = x.flags.map((f) => flagText(f, this.result.ratioBand)).join(', ');
        // a frozen slot's parameters can still be flagged; warnings only: the warning colour
        if (x.flags.length) return { text: x.trainable ? text : `frozen; ${text}`, cls: severity(x) >= SEVERITY.failure ? 'unhealthy' : 'warn-line', title: text };
        return x.trainable ? { text: 'ok' } : { text: 'frozen', cls: 'frozen' };
      } },
      { label: 'ratio', width: '84px', min: 80, num: true, title: 'lr · rms(u) / rms(θ)', cell: (i) => ({ text: sci(s(i).ratio) }) },
      { label: 'rms(u)', width: '84px', min: 80, num: true, title: 'the next step per unit learning rate, rms', cell: (i) => ({ text: sci(s(i).update?.rms) }) },
      { label: 'max|u|', width: '84px', min: 80, num: true, cell: (i) => ({ text: sci(s(i).update?.maxAbs) }) },
      { label: 'rms(θ)', width: '84px', min: 80, num: true, cell: (i) => ({ text: sci(s(i).param?.rms) }) },
      { label: 'v = 0', width: '84px', min: 80, num: true, title: 'elements with v = 0', cell: (i) => ({ text: s(i).trainable ? count(s(i).neverUpdated) : '' }) },
      { label: '|m| > c√v', width: '90px', min: 86, num: true, title: 'inconsistent: elements with |m| beyond what any gradient history gives', cell: (i) => {
        const n = s(i).inconsistent;
        return { text: s(i).trainable ? count(n) : '', cls: n ? 'unhealthy' : '' };
      } },
      { label: 'NaN/inf θ', width: '90px', min: 86, num: true, cell: (i) => {
        const p = s(i).param;
        const n = p ? Number(p.nan) + Number(p.inf) : null;
        return { text: n === null ? '' : count(n), cls: n ? 'unhealthy' : '' };
      } },
    ];
  }

  lrChanged() {
    const text = this.lrInput.value.trim();
    this.inputError = null;
    if (!text) this.lr = null;
    else {
      const v = positiveNumber(text);
      if (Number.isNaN(v)) {
        // stays said until an input (this one or the ratio band) changes: a pass still running
        // (for the last valid rate) draws its chart but does not overwrite it, and none is
        // started for this input
        this.inputError = `The learning rate must be a positive number, not ${JSON.stringify(text)}.`;
        this.again = false;
        this.showState(this.inputError, true);
        return;
      }
      this.lr = v;
    }
    this.run();
  }

  /** The band typed: empty for the default, else two numbers (the core refuses a band that is
   *  none, in its words: the pass fails with them). */
  bandChanged() {
    const text = this.bandInput.value.trim();
    this.inputError = null;
    if (!text) this.band = null;
    else {
      const parts = text.split(/[\s,]+/).filter(Boolean);
      const numbers = parts.map(Number);
      if (parts.length !== 2 || numbers.some((x) => !Number.isFinite(x))) {
        this.inputError = `The ratio band is two numbers, low and high (e.g. 1e-5, 1e-2), not ${JSON.stringify(text)}.`;
        this.again = false;
        this.showState(this.inputError, true);
        return;
      }
      this.band = numbers;
    }
    this.run();
  }

  showState(text, bad = false) {
    this.stateLine.textContent = text;
    this.stateLine.classList.toggle('bad', bad);
  }

  async run() {
    const opt = this.opt;
    if (!opt) return;
    if (this.running) {
      this.again = true;   // the learning rate changed meanwhile: run once more after this one
      return;
    }
    const st = this.stateOf(opt);
    this.running = true;
    this.runButton.disabled = true;
    this.cancelButton.hidden = false;
    this.showState('Running the health pass…');
    const started = performance.now();
    try {
      const r = await this.rpc.request('health', { lr: this.lr, ratioBand: this.band, withState: !!st }, {
        onProgress: ({ done, total }) => this.inputError || this.showState(`Running the health pass… ${total ? Math.floor((100 * done) / total) : 0}%`),
      });
      if (this.opt !== opt) return;
      r.withState = !!st;
      r.bySlot = new Array(opt.cols.n);
      for (const s of r.slots) r.bySlot[s.slot] = s;
      for (const f of r.flags) {
        const s = r.bySlot[f.slot];
        if (s) s.worst = Math.max(s.worst ?? 0, SEVERITY[f.severity] ?? 3);
      }
      this.result = r;
      this.runButton.textContent = 'Run again';
      this.ms = Math.round(performance.now() - started);
      this.render();
      // the pass read every moment: for a small file the moments' statistics (the tables' m and
      // v columns) come right after it, by the core's statistics pass
      if (this.elements <= AUTO_ELEMENTS && !this.stats.scanned && !this.stats.scanning) this.stats.scan('optimizer', { quiet: true });
    } catch (err) {
      this.showState(err.name === 'AbortError' ? 'Health pass cancelled.' : `The health pass failed: ${err.message}`, err.name !== 'AbortError');
    } finally {
      this.store.emit('io');   // the pass read payloads: the headers' byte counts grew
      this.running = false;
      if (this.runButton) this.runButton.disabled = false;
      if (this.cancelButton) this.cancelButton.hidden = true;
      if (this.again) {
        this.again = false;
        this.run();
      }
    }
  }

  /** The quantity the chart draws for slot s: log10 ratio, else log10 rms(u); null for none. */
  value(s) {
    const x = this.mode === 'ratio' ? s.ratio : s.update?.rms;
    // an infinite ratio (a zero weight) stays a value here, where log() has none
    return typeof x === 'number' && x > 0 ? Math.log10(x) : null;
  }

  render() {
    const r = this.result;
    if (!r || this.card.hidden) return;
    // the ratio where the pass gave one: a state file's parameters, or the checkpoint's own
    // (DeepSpeed's fp32 master weights), at a learning rate typed or stored
    this.mode = r.lr !== null && r.lr !== undefined && r.slots.some((x) => x.ratio !== null && x.ratio !== undefined) ? 'ratio' : 'rms';
    const flagged = new Set(r.flags.map((f) => f.slot));
    const what = this.mode === 'ratio'
      ? `update-to-weight ratio at ${r.lrFrom === 'file' ? 'the optimizer\'s param groups\' ' : ''}lr ${r.lr} (log scale; ratio warnings fire outside ${bound(r.ratioBand[0])}…${bound(r.ratioBand[1])}, the shaded band)`
      : `rms of the next step per unit learning rate, rms(u) (log scale)${r.withState || ownParams(r) ? '; enter the learning rate to see the update-to-weight ratio' : '; add the model-state file and the learning rate to see the update-to-weight ratio'}`;
    if (this.inputError) this.showState(this.inputError, true);
    else this.showState(`${plural(r.slots.length, 'slot')} in ${this.ms} ms${ranOn(r.server)}: ${flagged.size ? `${plural(flagged.size, 'slot')} flagged` : 'no slot flagged'}${r.pairs === false ? ' (the files do not pair: see above)' : ''}. The chart shows the ${what}.`);
    this.chartBox.dataset.mode = this.mode;
    this.chartBox.dataset.slotCount = String(r.slots.length);
    this.chartBox.dataset.flagged = [...flagged].join(',');
    this.chartBox.dataset.ratioBand = r.ratioBand.join(',');
    this.caption.textContent = 'Hover a slot for its figures; click to select it.';
    // Flag messages (the core's), slots named.
    this.flagsBox.replaceChildren();
    if (r.flags.length) {
      this.flagsBox.append(el('p', 'meta', `${plural(r.flags.length, 'flag')} on ${plural(flagged.size, 'slot')}${r.flags.length > FLAGS_IN_VIEW ? ' (the list scrolls)' : ''}:`));
      // a few flags are all in view; a long list scrolls (and says so)
      const ul = el('ul', `flag-list${r.flags.length > FLAGS_IN_VIEW ? ' many' : ''}`);
      for (const f of r.flags.slice(0, 200)) {
        const warning = f.severity === 'warning';
        const li = testid(el('li', warning ? 'warn-line' : 'unhealthy-line'), 'health-flag');
        li.dataset.severity = f.severity;
        const name = this.store.label(f.slot);
        li.append(`${warning ? 'warning' : 'flag'}: `, button(`slot ${f.slot}${name ? ` ${name}` : ''}`, { cls: 'link', onClick: () => this.pick(f.slot) }), `: ${f.message}`);
        ul.append(li);
      }
      if (r.flags.length > 200) ul.append(el('li', 'meta', `… and ${r.flags.length - 200} more`));
      this.flagsBox.append(ul);
    }
    // Rows: flagged first (most severe first), then module order.
    const order = Int32Array.from(r.slots.map((s) => s.slot));
    const sev = new Int8Array(r.bySlot.length);
    for (const s of r.slots) sev[s.slot] = severity(s);
    order.sort((a, b) => sev[b] - sev[a] || a - b);
    this.table.setOrder(order);
    this.draw();
  }

  select(slot, from) {
    this.selected = slot;
    if (!this.result || this.card.hidden) return;
    if (from !== 'health-table') this.table.select(slot);
    this.draw();
  }

  x(i) {
    const w = this.width - PAD.left - PAD.right;
    return PAD.left + ((i + 0.5) / this.result.slots.length) * w;
  }

  slotAt(px) {
    const n = this.result?.slots.length ?? 0;
    const w = this.width - PAD.left - PAD.right;
    const i = Math.floor(((px - PAD.left) / w) * n);
    return i >= 0 && i < n ? this.result.slots[i].slot : -1;
  }

  bindChart() {
    this.canvas.addEventListener('pointermove', (e) => {
      const i = this.slotAt(e.offsetX);
      if (i === this.hover) return;
      this.hover = i;
      this.describe(i);
      this.draw();
    });
    this.canvas.addEventListener('pointerleave', () => {
      this.hover = -1;
      this.caption.textContent = 'Hover a slot for its figures; click to select it.';
      this.draw();
    });
    this.canvas.addEventListener('click', (e) => {
      const i = this.slotAt(e.offsetX);
      if (i >= 0) this.pick(i);
    });
    this.canvas.addEventListener('keydown', (e) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
      if (!step || !this.result) return;
      e.preventDefault();
      const n = this.result.slots.length;
      const i = Math.min(n - 1, Math.max(0, (this.selected < 0 ? -step : this.selected) + step));
      this.pick(i);
      this.describe(i);
    });
  }

  describe(i) {
    if (i < 0 || !this.result) return;
    const s = this.result.bySlot[i];
    const name = this.store.label(i);
    const parts = [`slot ${i}${name ? ` ${name}` : ''}`];
    if (!s.trainable) parts.push('frozen: no update');
    else {
      if (s.ratio !== null) parts.push(`ratio ${sci(s.ratio)}`);
      if (s.update) parts.push(`rms(u) ${sci(s.update.rms)}, max|u| ${sci(s.update.maxAbs)}`);
      if (s.param) parts.push(`rms(θ) ${sci(s.param.rms)}`);
      if (Number(s.neverUpdated)) parts.push(`${count(s.neverUpdated)} never updated`);
      if (Number(s.inconsistent)) parts.push(`${count(s.inconsistent)} inconsistent`);
      parts.push(s.flags.length ? s.flags.map((f) => flagText(f, this.result.ratioBand)).join(', ') : 'no flag');
    }
    this.caption.textContent = parts.join(' · ');
  }

  draw() {
    const r = this.result;
    if (!r || !this.canvas || this.card.hidden) return;
    const c = canvasIn(this.canvas, this.chartBox);
    if (!c) return;
    const { g } = c;
    this.width = c.width;
    this.height = c.height;
    const muted = css('--muted', '#666'), line = css('--line', '#ddd'), band = css('--band', '#e3f1e6');
    const good = css('--good', '#1b7a3a'), warn = css('--warn', '#8a5a00'), bad = css('--bad', '#b3261e'), frozen = css('--frozen', '#999'), fg = css('--fg', '#222');
    const slots = r.slots, n = slots.length;
    // The value range: the band always in view for ratios; decades padded.
    let lo = Infinity, hi = -Infinity;
    for (const s of slots) {
      const v = this.value(s);
      if (v === null) continue;
      lo = Math.min(lo, v);
      hi = Math.max(hi, v);
    }
    // the band of the pass; a lower bound of 0 (no ratioLow) shades to the bottom
    const bandLo = r.ratioBand[0] > 0 ? Math.log10(r.ratioBand[0]) : null, bandHi = Math.log10(r.ratioBand[1]);
    if (this.mode === 'ratio') {
      if (bandLo !== null) lo = Math.min(lo, bandLo - 0.5);
      hi = Math.max(hi, bandHi + 0.5);
      lo = Math.min(lo, hi - 1);
    }
    const range = decades(lo, hi) ?? { lo: -3, hi: 0 };
    // Slots with no value (frozen: no update; or no finite one) are not on the value scale: they
    // get a lane of their own under the plot, hollow grey for frozen, in their flag's colour else.
    const none = slots.filter((s) => this.value(s) === null);
    const lane = none.length ? LANE : 0;
    const top = PAD.top, bottom = this.height - PAD.bottom - lane;
    this.chartBox.dataset.frozen = none.filter((s) => !s.trainable).slice(0, 500).map((s) => s.slot).join(',');
    const y = yOf(range, top, bottom);
    // Band and grid.
    if (this.mode === 'ratio') {
      g.fillStyle = band;
      g.fillRect(PAD.left, y(bandHi), this.width - PAD.left - PAD.right, y(bandLo ?? range.lo) - y(bandHi));
      g.strokeStyle = good;
      g.setLineDash([4, 3]);
      g.beginPath();
      g.moveTo(PAD.left, y(-3));
      g.lineTo(this.width - PAD.right, y(-3));
      g.stroke();
      g.setLineDash([]);
    }
    g.font = '11px system-ui, sans-serif';
    logAxis(g, range, { top, bottom, left: PAD.left, right: this.width - PAD.right, spacing: 22, text: muted, line });
    const colorOf = (sev) => (sev >= 3 ? bad : sev >= 2 ? warn : good);
    const slotPx = (this.width - PAD.left - PAD.right) / n;
    if (slotPx >= 3) {
      const w = Math.max(2, Math.min(slotPx - 1, 10));
      slots.forEach((s, k) => {
        const x = this.x(k);
        const v = this.value(s);
        if (v === null) {   // nothing to plot (frozen, or no finite update): a mark in the lane
          const m = Math.min(w, 8);
          if (!s.trainable) {   // red when flagged: a NaN in a frozen parameter
            g.strokeStyle = s.flags.length ? colorOf(severity(s)) : frozen;
            g.strokeRect(x - m / 2 + 0.5, bottom + lane / 2 - m / 2 + 2.5, m - 1, m - 1);
          } else {
            g.fillStyle = s.flags.length ? colorOf(severity(s)) : frozen;
            g.fillRect(x - m / 2, bottom + lane / 2 - m / 2 + 2, m, m);
          }
          return;
        }
        g.fillStyle = colorOf(severity(s));
        g.beginPath();
        g.arc(x, y(v), Math.min(w / 2 + 1, 4.5), 0, 2 * Math.PI);
        g.fill();
        if (s.slot === this.selected || s.slot === this.hover) {
          g.strokeStyle = fg;
          g.lineWidth = 1.5;
          g.beginPath();
          g.arc(x, y(v), 7, 0, 2 * Math.PI);
          g.stroke();
          g.lineWidth = 1;
        }
      });
    } else {
      // Per pixel column: the range of values and the worst flag among its slots.
      const w = this.width - PAD.left - PAD.right;
      for (let px = 0; px < w; px++) {
        const a = Math.floor((px / w) * n), b = Math.max(a, Math.floor(((px + 1) / w) * n) - 1);
        let vmin = Infinity, vmax = -Infinity, sev = 0, noValue = false;
        for (let k = a; k <= b && k < n; k++) {
          const v = this.value(slots[k]);
          sev = Math.max(sev, severity(slots[k]));
          if (v === null) {
            noValue = true;
            continue;
          }
          vmin = Math.min(vmin, v);
          vmax = Math.max(vmax, v);
        }
        if (noValue) {
          g.fillStyle = frozen;
          g.fillRect(PAD.left + px, bottom + lane / 2 - 1, 1, 6);
        }
        if (!Number.isFinite(vmin)) continue;
        g.fillStyle = colorOf(sev);
        g.fillRect(PAD.left + px, y(vmax) - 1, 1, Math.max(2, y(vmin) - y(vmax) + 2));
      }
      if (this.selected >= 0 && this.selected < n) {
        g.fillStyle = fg;
        g.fillRect(this.x(this.selected) - 0.5, top, 1, bottom - top);
      }
    }
    // Axis: slot indices.
    g.fillStyle = muted;
    g.textAlign = 'center';
    const labelW = g.measureText(String(n - 1)).width + 12;
    // labels every 1, 2, 5, 10, … slots, at least labelW apart; none when the chart has no room
    // (a box narrower than its padding: a negative slot width must not loop for ever)
    let step = n;
    for (let e = 1; e <= n && slotPx > 0; e *= 10) {
      const fit = [1, 2, 5].map((m) => m * e).find((x) => x * slotPx >= labelW);
      if (fit !== undefined) {
        step = fit;
        break;
      }
    }
    if (slotPx <= 0) step = Infinity;
    for (let k = 0; k < n; k += step) g.fillText(String(slots[k].slot), this.x(k), this.height - 8);
    g.textAlign = 'left';
    axisTitle(g, this.mode === 'ratio' ? 'update / weight' : 'rms(u)', 12, top, bottom, muted);
    if (lane) {   // the lane's name, in the axis's gutter
      g.fillStyle = muted;
      g.font = '10px system-ui, sans-serif';
      g.textAlign = 'right';
      g.textBaseline = 'middle';
      g.fillText(none.every((s) => !s.trainable) ? 'frozen' : 'no value', PAD.left - 6, bottom + lane / 2 + 2);
      g.textAlign = 'left';
      g.textBaseline = 'alphabetic';
    }
  }
}
