// The moment entries card: one row per optimizer-state entry, in file order, with the statistics
// once they exist ("click row" until then), Compute all statistics, and under the table the
// selected slot's statistics panel (its moments, and its parameter's values when a model-state
// file is open), fetched through the statistics store.
import { el, button, testid } from '../dom.js';
import { count, sci } from '../format.js';
import { VirtualTable } from '../parts/vtable.js';
import { renderEntryDetail, renderTensorDetail, updateProgress } from '../parts/stats-panel.js';
import { entryActions } from '../parts/exports.js';

const TRUNCATED = 1;   // the core's code for a file that ends early (docs/diagnostics.md: codes are never renumbered)

/** The entry the file ends inside, from the core's error: {slot (null: cut in its id field),
 *  offset, message, hint}; null when the file is not cut inside its entries. */
export function cutEntry(summary) {
  const e = summary.error;
  const start = summary.offsets?.entries;
  if (e?.code !== TRUNCATED || e.subject !== 'file' || start === null || start === undefined || e.offset === null) return null;
  if (Number(e.offset) < Number(start)) return null;   // cut in the header, the schema or the tags
  return { slot: e.slot === null ? null : Number(e.slot), offset: e.offset, message: e.message, hint: e.hint };
}

export class EntriesView {
  constructor(ctx) {
    this.ctx = ctx;
    this.store = ctx.store;
    this.stats = ctx.stats;
    this.token = 0;
    this.cut = null;   // cutEntry() of the open file
    this.cutRow = -1;   // its row in the table (after the entries read), -1 none
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
    // the cut entry's row (k === this.cutRow): its slot and "cut", nothing else is known
    const cutCells = {
      slot: () => ({ text: this.cut.slot === null ? '—' : count(this.cut.slot) }),
      name: () => {   // the mark where every width shows it (the health column may be scrolled off)
        const label = this.cut.slot === null ? '' : this.store.label(this.cut.slot);
        return { text: `${label ? `${label}: ` : ''}entry cut short`, cls: 'unhealthy', title: this.cut.hint ?? this.cut.message };
      },
      health: () => ({ text: 'cut', cls: 'unhealthy', title: this.cut.hint ?? this.cut.message }),
    };
    const columns = [
      { label: 'slot', width: '64px', min: 56, num: true, cell: (k) => ({ text: String(cols().entry(k).id) }) },   // an index, as in every table
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
    ];
    this.table = new VirtualTable(box, {
      rowTestId: 'entry-row',
      label: 'moment entries',
      hintEl: hint,
      onSelect: (k) => {
        if (k !== this.cutRow) this.store.select(cols().entryId(k), 'entries');
        else if (this.cut.slot !== null) this.store.select(this.cut.slot, 'entries');
      },
      columns: columns.map((c) => ({ ...c, cell: (k) => (k === this.cutRow ? cutCells[c.label]?.() ?? { text: '' } : c.cell(k)) })),
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
    this.cut = cutEntry(c.summary);
    this.cutRow = this.cut ? c.entryTotal : -1;
    const order = new Int32Array(c.entryTotal + (this.cut ? 1 : 0));
    for (let k = 0; k < order.length; k++) order[k] = k;
    this.table.setOrder(order);
    const declared = c.summary.entryCount;
    this.countEl.textContent = `${count(c.entryTotal)}${declared !== null && Number(declared) !== c.entryTotal ? ` of ${count(declared)} declared` : ''}`;
    this.card.hidden = !c.entryTotal && declared === null && !this.cut;
  }

  onSelect({ slot, from }) {
    const c = this.cols;
    if (!c || slot >= c.n) return;
    const k = c.entryFor(slot);
    const row = k >= 0 ? k : this.cutOf(slot) ? this.cutRow : -1;
    if (row >= 0 && from !== 'entries') this.table.select(row);
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

  /** Whether slot i's moments are in the cut entry: its own, or (tied) its owner's. */
  cutOf(i) {
    const c = this.cols;
    if (!this.cut || this.cut.slot === null || !c) return false;
    return i === this.cut.slot || (!c.broken(i) && c.repAt(i) === this.cut.slot);
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
      const cut = this.cutOf(slot) ? this.cut : null;
      const owner = cut && slot !== cut.slot ? `slot ${cut.slot}'s entry, whose moments it shares,` : 'its entry';
      const why = cols.trainable(slot) === false ? 'frozen, no optimizer state'
        : cols.broken(slot) ? 'its tie is broken: no optimizer state can be read for it'
          : cut ? `${owner} is cut short: the file ends in its field at byte ${count(cut.offset)}`
            : this.cut ? 'no optimizer state entry read before the file ends' : 'no optimizer state entry';
      box.replaceChildren(el('h3', '', `Slot ${slot}${store.label(slot) ? ` (${store.label(slot)})` : ''}: ${why}`));
      if (cut) box.append(testid(el('p', 'cut-said', cut.hint ?? cut.message), 'entry-cut'));
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
