// The moment entries table: one row per optimizer-state entry, in file order, with the
// statistics once they exist ("click for statistics" until then).
import { $ } from '../dom.js';
import { count, sci } from '../format.js';
import { VirtualTable } from './vtable.js';

export class EntriesView {
  constructor(store, { stats, onSelect }) {
    this.store = store;
    this.stats = stats;
    const cols = () => this.store.optimizer.cols;
    const field = (k, f) => this.stats.ofEntry(k, f);
    this.table = new VirtualTable($('entries'), {
      rowTestId: 'entry-row',
      label: 'moment entries',
      hintEl: $('entries-hint'),
      onSelect: (k) => onSelect(k),
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

  reset() {
    const c = this.store.optimizer.cols;
    const order = new Int32Array(c.entryTotal);
    for (let k = 0; k < order.length; k++) order[k] = k;
    this.table.selected = -1;
    this.table.setOrder(order);
    const declared = c.summary.entryCount;
    $('entry-count').textContent = `${count(c.entryTotal)}${declared !== null && Number(declared) !== c.entryTotal ? ` of ${count(declared)} declared` : ''}`;
    $('entries-card').hidden = !c.entryTotal && declared === null;
  }

  /** No file (or none of this kind): no rows. */
  clear() {
    this.table.selected = -1;
    this.table.setOrder(new Int32Array(0));
  }

  select(k) {
    this.table.select(k);
  }

  render() {
    this.table.render(true);
  }
}
