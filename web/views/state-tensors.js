// A model-state file's tensors (TLSF32B / TLPF32B): one row per tensor with its name (the
// slot names), shape, value count, offset and, once computed, its values' statistics.
import { $ } from '../dom.js';
import { count, sci, plural } from '../format.js';
import { VirtualTable } from './vtable.js';

export class TensorsView {
  constructor(store, { stats, onSelect }) {
    this.store = store;
    this.stats = stats;
    const cols = () => this.store.stateFile.cols;
    const field = (i, f) => this.stats.ofTensor(i, f);
    this.table = new VirtualTable($('tensors'), {
      rowTestId: 'tensor-row',
      label: 'tensors of the model-state file',
      onSelect: (i) => onSelect(i),
      hintEl: $('tensors-hint'),
      columns: [
        { label: 'tensor', width: '64px', min: 56, num: true, cell: (i) => ({ text: String(i) }) },
        { label: 'name', width: 'minmax(230px, 2.4fr)', min: 230, fit: 'name', cell: (i) => ({ text: this.store.label(i) }) },
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

  reset() {
    const c = this.store.stateFile.cols;
    const order = new Int32Array(c.tensorTotal);
    for (let i = 0; i < order.length; i++) order[i] = i;
    this.table.selected = -1;
    this.table.setOrder(order);
    const declared = c.summary.tensorCount;
    $('tensor-count').textContent = declared !== null && Number(declared) !== c.tensorTotal ? `${count(c.tensorTotal)} of ${count(declared)} read` : plural(c.tensorTotal, 'tensor');
  }

  /** No file (or none of this kind): no rows. */
  clear() {
    this.table.selected = -1;
    this.table.setOrder(new Int32Array(0));
  }

  select(i) {
    this.table.select(i);
  }

  render() {
    this.table.render(true);
  }
}
