// The moment entries card: one row per optimizer-state entry, in file order, with the statistics
// once they exist ("click row" until then), Compute all statistics, and under the table the
// selected slot's statistics panel (its moments, and its parameter's values when a model-state
// file is open), fetched through the statistics store.
import { el, button, testid } from '../dom.js';
import { count, sci } from '../format.js';
import { VirtualTable } from '../parts/vtable.js';
import { renderEntryDetail, renderTensorDetail, updateProgress } from '../parts/stats-panel.js';
import { entryActions } from '../parts/exports.js';

export class EntriesView {
  constructor(ctx) {
    this.ctx = ctx;
    this.store = ctx.store;
    this.stats = ctx.stats;
    this.token = 0;
  }

  mount(root) {
    this.card = el('section', 'card');
    this.card.id = 'entries-card';
    this.card.hidden = true;
    const head = el('div', 'card-head');
    const title = el('h2', '', 'Moment entries ');
    this.countEl = el('span', 'count');
    this.countEl.id = 'entry-count';
    title.append(this.countEl);
    const hint = el('span', 'scroll-hint');
    hint.hidden = true;
    const tools = el('div', 'tools');
    this.scanButton = button('Compute all statistics', { testid: 'scan', onClick: () => this.stats.scan('optimizer') });
    this.scanButton.id = 'scan';
    tools.append(this.scanButton);
    head.append(title, hint, tools);
    const box = el('div', 'vtable');
    box.id = 'entries';
    this.detail = testid(el('div', 'entry-detail'), 'entry-detail');
    this.detail.id = 'entry-detail';
    this.detail.hidden = true;
    this.card.append(head, box, this.detail);
    root.append(this.card);

    const cols = () => this.store.optimizer.cols;
    const field = (k, f) => this.stats.ofEntry(k, f);
    this.table = new VirtualTable(box, {
      rowTestId: 'entry-row',
      label: 'moment entries',
      hintEl: hint,
      onSelect: (k) => this.store.select(cols().entryId(k), 'entries'),
      columns: [
        { label: 'slot', width: '64px', min: 56, num: true, cell: (k) => ({ text: count(cols().entry(k).id) }) },
        { label: 'name', width: 'minmax(230px, 2fr)', min: 230, fit: 'name', cell: (k) => ({ text: this.store.label(cols().entryId(k)) }) },
        { label: 'step', width: '72px', min: 64, num: true, cell: (k) => ({ text: count(cols().entry(k).step) }) },
        { label: 'elements', width: '100px', min: 96, num: true, cell: (k) => ({ text: count(cols().entry(k).count) }) },
        { label: 'offset', width: '128px', min: 120, num: true, cell: (k) => ({ text: count(cols().entry(k).offset) }) },
        { label: 'm mean', width: '84px', min: 80, num: true, cell: (k) => ({ text: field(k, 'mMean') === null ? '' : sci(field(k, 'mMean')) }) },
        { label: 'm rms', width: '84px', min: 80, num: true, cell: (k) => (field(k, 'mRms') === null ? { text: 'click row', cls: 'frozen', title: 'click the row to compute its statistics, or Compute all statistics' } : { text: sci(field(k, 'mRms')) }) },
        { label: 'v mean', width: '84px', min: 80, num: true, cell: (k) => ({ text: sci(field(k, 'vMean')) }) },
        { label: 'health', width: '120px', min: 100, cell: (k) => {
          const u = field(k, 'unhealthy');
          if (u === null) return { text: '' };
          if (!u) return { text: 'ok' };
          const parts = [];
          if (field(k, 'nan')) parts.push(`${count(field(k, 'nan'))} NaN`);
          if (field(k, 'inf')) parts.push(`${count(field(k, 'inf'))} inf`);
          if (field(k, 'negative')) parts.push(`${count(field(k, 'negative'))} v<0`);
          return { text: parts.join(', '), cls: 'unhealthy' };
        } },
      ],
    });
  }

  get cols() {
    return this.store.optimizer?.summary.schema ? this.store.optimizer.cols : null;
  }

  // ---- the view interface -----------------------------------------------------------------------

  onFiles() {
    this.token++;   // a panel still computing is for files no longer open
    this.detail.hidden = true;
    const c = this.cols;
    this.table.selected = -1;
    if (!c) {
      this.card.hidden = true;
      this.table.setOrder(new Int32Array(0));
      return;
    }
    const order = new Int32Array(c.entryTotal);
    for (let k = 0; k < order.length; k++) order[k] = k;
    this.table.setOrder(order);
    const declared = c.summary.entryCount;
    this.countEl.textContent = `${count(c.entryTotal)}${declared !== null && Number(declared) !== c.entryTotal ? ` of ${count(declared)} declared` : ''}`;
    this.card.hidden = !c.entryTotal && declared === null;
  }

  onSelect({ slot, from }) {
    const c = this.cols;
    if (!c || slot >= c.n) return;
    const k = c.entryFor(slot);
    if (k >= 0 && from !== 'entries') this.table.select(k);
    this.showSlot(slot);
  }

  onLabels() {
    if (this.cols) this.table.render(true);
  }

  onStats() {
    if (!this.cols) return;
    this.scanButton.disabled = this.stats.scanning;
    this.table.render(true);
  }

  // ---- the statistics panel -----------------------------------------------------------------------

  /** The panel of slot `slot`: its entry's moments (a tied slot: its owner's) and, with a
   *  model-state file, its parameter's values. */
  async showSlot(slot) {
    const { store, stats } = this;
    const opt = store.optimizer, st = store.stateFile;
    const token = ++this.token;
    const box = this.detail;
    const cols = opt.cols;
    const k = cols.entryFor(slot);
    const cancel = () => this.ctx.rpc.cancel().then(() => this.ctx.status('Statistics cancelled.'));
    const hasParam = st && slot < st.cols.tensorTotal;
    let param = hasParam ? stats.get('state', slot) ?? undefined : st ? undefined : null;
    if (k < 0) {
      box.hidden = false;
      const why = cols.trainable(slot) === false ? 'frozen, no optimizer state'
        : cols.broken(slot) ? 'its tie is broken: no optimizer state can be read for it' : 'no optimizer state entry';
      box.replaceChildren(el('h3', '', `Slot ${slot}${store.label(slot) ? ` (${store.label(slot)})` : ''}: ${why}`));
      if (hasParam) {
        const panel = box.appendChild(el('div', 'moment-wrap'));
        const draw = (s) => renderTensorDetail(panel, { index: slot, label: store.label(slot), tensor: st.cols.tensor(slot), shape: st.cols.shapeText(slot), stats: s });
        draw(param);
        if (!param) {
          const p = await stats.fetch(st, slot).catch(() => null);
          if (token === this.token && p) draw(p);
        }
      }
      return;
    }
    const entry = cols.entry(k);
    const owner = Number(entry.id);
    const base = { slot, entry, label: store.label(slot), ownerLabel: store.label(owner), config: opt.summary.config, onCancel: cancel };
    let s = stats.get('optimizer', slot) ?? stats.get('optimizer', owner);
    const draw = (extra = {}) => {
      if (token !== this.token) return;
      if (extra.progress && updateProgress(box, extra.progress)) return;
      renderEntryDetail(box, { ...base, stats: s, param, actions: s ? entryActions(this.ctx, slot) : null, ...extra });
    };
    draw();
    try {
      if (!s) {
        s = await stats.fetch(opt, owner, (progress) => draw({ progress }));
        draw();
      }
      if (param === undefined) {
        param = await stats.fetch(st, slot);
        draw();
      }
    } catch (err) {
      draw({ error: err.name === 'AbortError' ? 'cancelled' : err.message });
    }
  }
}
