// A model-state file's tensors (TLSF32B / TLPF32B): one row per tensor with its name (the slot
// names), shape, value count, offset and, once computed, its values' statistics; Compute all
// statistics; with the model-state file alone, the selected tensor's statistics panel (with an
// optimizer checkpoint, a row selects that slot everywhere and the entries card shows it).
import { el, button } from '../dom.js';
import { count, sci, plural } from '../format.js';
import { VirtualTable } from '../parts/vtable.js';
import { renderTensorDetail, updateProgress } from '../parts/stats-panel.js';

export class TensorsView {
  constructor(ctx) {
    this.ctx = ctx;
    this.store = ctx.store;
    this.stats = ctx.stats;
    this.token = 0;
  }

  mount(root) {
    this.card = el('section', 'card');
    this.card.id = 'tensors-card';
    this.card.hidden = true;
    const head = el('div', 'card-head');
    const title = el('h2', '', 'Model-state tensors ');
    this.countEl = el('span', 'count');
    this.countEl.id = 'tensor-count';
    title.append(this.countEl);
    const hint = el('span', 'scroll-hint');
    hint.hidden = true;
    const tools = el('div', 'tools');
    this.scanButton = button('Compute all statistics', { testid: 'scan-tensors', onClick: () => this.stats.scan('state') });
    this.scanButton.id = 'scan-tensors';
    tools.append(this.scanButton);
    head.append(title, hint, tools);
    const box = el('div', 'vtable');
    box.id = 'tensors';
    this.detail = el('div', 'entry-detail');
    this.detail.id = 'tensor-detail';
    this.detail.hidden = true;
    this.card.append(head, box, this.detail);
    root.append(this.card);

    const cols = () => this.store.stateFile.cols;
    const field = (i, f) => this.stats.ofTensor(i, f);
    this.table = new VirtualTable(box, {
      rowTestId: 'tensor-row',
      label: 'tensors of the model-state file',
      onSelect: (i) => this.store.select(i, 'tensors'),
      hintEl: hint,
      columns: [
        { label: 'tensor', width: '64px', min: 56, num: true, cell: (i) => ({ text: String(i) }) },
        // the names given, else the file's own (a family that stores names: the report's tensors)
        { label: 'name', width: 'minmax(230px, 2.4fr)', min: 230, fit: 'name', cell: (i) => ({ text: this.store.label(i) || (this.store.stateFile.summary.tensors?.[i]?.name ?? '') }) },
        { label: 'shape', width: 'minmax(96px, 1fr)', min: 96, mono: true, cell: (i) => ({ text: cols().shapeText(i) }) },
        { label: 'values', width: '96px', min: 90, num: true, cell: (i) => ({ text: count(cols().tensor(i).count) }) },
        { label: 'offset', width: '110px', min: 100, num: true, cell: (i) => ({ text: count(cols().tensor(i).dataOffset) }) },
        { label: 'mean', width: '84px', min: 80, num: true, cell: (i) => ({ text: sci(field(i, 'mean')) }) },
        { label: 'rms', width: '84px', min: 80, num: true, cell: (i) => (field(i, 'rms') === null ? { text: 'click row', cls: 'frozen', title: 'click the row to compute its statistics, or Compute all statistics' } : { text: sci(field(i, 'rms')) }) },
        { label: 'min', width: '84px', min: 80, num: true, cell: (i) => ({ text: sci(field(i, 'min')) }) },
        { label: 'max', width: '84px', min: 80, num: true, cell: (i) => ({ text: sci(field(i, 'max')) }) },
        { label: 'NaN / inf', width: '96px', min: 90, cell: (i) => {
          const nan = field(i, 'nan'), inf = field(i, 'inf');
          if (nan === null) return { text: '' };
          return nan || inf ? { text: `${count(nan)} NaN, ${count(inf)} inf`, cls: 'unhealthy' } : { text: 'none' };
        } },
      ],
    });
  }

  get cols() {
    return this.store.stateFile?.cols.tensorTotal ? this.store.stateFile.cols : null;
  }

  // ---- the view interface -----------------------------------------------------------------------

  onFiles() {
    this.token++;
    this.detail.hidden = true;
    const c = this.cols;
    this.card.hidden = !c;
    this.table.selected = -1;
    if (!c) {
      this.table.setOrder(new Int32Array(0));
      return;
    }
    const order = new Int32Array(c.tensorTotal);
    for (let i = 0; i < order.length; i++) order[i] = i;
    this.table.setOrder(order);
    const declared = c.summary.tensorCount;
    this.countEl.textContent = declared !== null && Number(declared) !== c.tensorTotal ? `${count(c.tensorTotal)} of ${count(declared)} read` : plural(c.tensorTotal, 'tensor');
  }

  onSelect({ slot, from }) {
    const c = this.cols;
    if (!c || slot >= c.tensorTotal) return;
    if (from !== 'tensors') this.table.select(slot);
    if (!this.store.optimizer) this.showTensor(slot);
  }

  onLabels() {
    if (this.cols) this.table.render(true);
  }

  onStats() {
    if (!this.cols) return;
    this.scanButton.disabled = this.stats.scanning;
    this.table.render(true);
  }

  /** The statistics panel of tensor i. */
  async showTensor(i) {
    const st = this.store.stateFile;
    const token = ++this.token;
    const box = this.detail;
    const base = { index: i, label: this.store.label(i), tensor: st.cols.tensor(i), shape: st.cols.shapeText(i), onCancel: () => this.ctx.rpc.cancel() };
    const draw = (extra) => {
      if (token !== this.token || (extra.progress && updateProgress(box, extra.progress))) return;
      renderTensorDetail(box, { ...base, ...extra });
    };
    const have = this.stats.get('state', i);
    draw({ stats: have });
    if (have) return;
    try {
      draw({ stats: await this.stats.fetch(st, i, (progress) => draw({ progress })) });
    } catch (err) {
      draw({ error: err.name === 'AbortError' ? 'cancelled' : err.message });
    }
  }
}
