// The parameters table: one row per slot (a virtual table: a million slots stay a few dozen DOM
// rows), its filters (trainable, frozen, tied, broken, NaN / unhealthy), the search box, sorting,
// the count, the selection line (the selected slot's full name and facts) and the hint that
// columns out of view can be scrolled to. Statistics columns fill in as statistics arrive; the
// "NaN / unhealthy" filter asks for them (it never counts slots whose statistics do not exist).
import { el, button, testid } from '../dom.js';
import { count, sci, plural } from '../format.js';
import { VirtualTable } from '../parts/vtable.js';
import { groupColor } from '../parts/map-canvas.js';

export class ParamsView {
  constructor({ store, stats }) {
    this.store = store;
    this.stats = stats;
    this.filter = 'all';
    this.search = '';
    this.sort = null;
  }

  mount(root) {
    this.card = el('section', 'card');
    this.card.id = 'params-card';
    this.card.hidden = true;
    const head = el('div', 'card-head');
    const title = el('h2', '', 'Parameters ');
    this.countEl = testid(el('span', 'count'), 'param-count');
    title.append(this.countEl);
    this.filters = el('div', 'filters');
    this.filters.setAttribute('role', 'group');
    this.filters.setAttribute('aria-label', 'Filter slots');
    const filter = (key, text, title) => {
      const b = button(text, { title, onClick: () => this.cols && this.setFilter(key) });
      b.dataset.filter = key;
      b.setAttribute('aria-pressed', String(key === 'all'));
      this.filters.append(b);
      return b;
    };
    filter('all', 'All');
    filter('trainable', 'Trainable');
    filter('frozen', 'Frozen');
    filter('aliases', 'Tied');
    this.brokenFilter = filter('broken', 'Broken ties');
    this.brokenFilter.hidden = true;
    filter('unhealthy', 'NaN / unhealthy', 'Needs statistics: computes them when they are not there yet');
    this.searchBox = el('input');
    this.searchBox.type = 'search';
    this.searchBox.placeholder = 'Filter by name or shape';
    this.searchBox.setAttribute('aria-label', 'Filter by name or shape');
    this.searchBox.addEventListener('input', () => {
      this.search = this.searchBox.value;
      if (this.cols) this.refresh();
    });
    head.append(title, this.filters, this.searchBox);
    const meta = el('div', 'table-meta');
    this.selectionLine = testid(el('p', 'selection'), 'selection');
    this.selectionLine.setAttribute('aria-live', 'polite');
    const hint = testid(el('span', 'scroll-hint'), 'scroll-hint');
    hint.hidden = true;
    meta.append(this.selectionLine, hint);
    const box = el('div', 'vtable');
    box.id = 'params';
    this.card.append(head, meta, box);
    root.append(this.card);
    this.table = new VirtualTable(box, {
      columns: this.columns(false),
      rowTestId: 'param-row',
      label: 'parameter slots',
      onSelect: (i) => this.store.select(i, 'table'),
      onSort: (sort) => {
        this.sort = sort;
        this.refresh();
      },
      hintEl: hint,
    });
  }

  // ---- the view interface -----------------------------------------------------------------------

  onFiles() {
    const cols = this.cols;
    this.card.hidden = !cols;
    if (!cols) {
      this.shown = null;
      this.clear();
      return;
    }
    this.brokenFilter.hidden = !cols.sharing?.broken.length;
    if (this.shown === cols) this.updateColumns();   // a model-state file came: the θ column
    else this.reset();
    this.shown = cols;
  }

  onSelect({ slot, from }) {
    const cols = this.cols;
    if (!cols || slot >= cols.n) return;
    if (from === 'table') this.showSelection(slot);
    else this.select(slot);
  }

  onLabels() {
    if (!this.cols) return;
    this.render();
    this.refresh();
    if (this.store.selected >= 0) this.showSelection(this.store.selected);
  }

  onStats() {
    if (!this.cols) return;
    // the rows change only when a filter or the order depends on statistics (a pass over every slot)
    if (this.filter === 'unhealthy' || ['mRms', 'vMean', 'pRms'].includes(this.sort?.key)) this.refresh();
    else this.render();
  }

  onHover({ slot }) {
    if (this.cols) this.table.setHighlight(slot >= 0 ? this.cols.groupMembers(slot) : null);
  }

  // ---- the table ----------------------------------------------------------------------------------

  /** The optimizer checkpoint's columns, when its schema was read. */
  get cols() {
    return this.store.optimizer?.summary.schema ? this.store.optimizer.cols : null;
  }

  label(i) {
    return this.store.label(i);
  }

  columns(withParam) {
    const cols = () => this.cols;
    const stat = (i, field) => this.stats.ofSlot(i, field);
    const list = [
      { label: 'slot', width: '64px', min: 56, num: true, sortKey: 'slot', cell: (i) => ({ text: String(i) }) },
      { label: 'name', width: 'minmax(230px, 2.4fr)', min: 230, fit: 'name', sortKey: 'name', cell: (i) => ({ text: this.label(i) }) },
      { label: 'shape', width: 'minmax(96px, 1fr)', min: 96, mono: true, sortKey: 'rank', cell: (i) => ({ text: cols().shapeText(i) }) },
      { label: 'size', width: '92px', min: 92, num: true, sortKey: 'size', cell: (i) => ({ text: count(cols().size(i)) }) },
      { label: 'trainable', width: '76px', min: 76, cell: (i) => {
        const g = cols().trainable(i);
        return g === undefined ? { text: '?' } : g ? { text: 'yes' } : { text: 'frozen', cls: 'frozen' };
      } },
      { label: 'shares storage', width: 'minmax(150px, 1.3fr)', min: 150, cell: (i) => this.repCell(i) },
      { label: 'step', width: '72px', min: 64, num: true, sortKey: 'step', cell: (i) => {
        const k = cols().entryFor(i);
        return { text: k < 0 ? '' : count(cols().entry(k).step) };
      } },
      { label: 'm rms', width: '84px', min: 80, num: true, sortKey: 'mRms', title: 'root mean square of the first moment', cell: (i) => ({ text: sci(stat(i, 'mRms')) }) },
      { label: 'v mean', width: '84px', min: 80, num: true, sortKey: 'vMean', title: 'mean of the second moment', cell: (i) => ({ text: sci(stat(i, 'vMean')) }) },
      { label: 'health', width: '110px', min: 100, cell: (i) => this.healthCell(i) },
    ];
    if (withParam) {
      list.push({ label: 'θ rms', width: '84px', min: 80, num: true, sortKey: 'pRms', title: 'root mean square of the parameter (model-state file)', cell: (i) => ({ text: sci(this.stats.paramOfSlot(i, 'rms')) }) });
    }
    return list;
  }

  repCell(i) {
    const c = this.cols;
    const r = c.rep(i);
    if (r === undefined) return { text: '?', title: 'not read (the file broke before the sharing map)' };
    const name = (j) => (this.label(j) ? ` ${this.label(j)}` : '');
    if (c.broken(i)) return { text: `broken → ${r === null ? 'none' : r}${r !== null && Number(r) < c.n ? name(Number(r)) : ''}`, cls: 'unhealthy', title: 'the sharing-map rule rejects this slot' };
    if (r === null) return { text: c.trainable(i) ? 'none' : 'frozen', cls: 'frozen' };
    const g = c.sharing.group[i];
    if (r === i) return g >= 0 ? { text: 'owner', swatch: groupColor(g), title: 'other slots share this slot\'s storage and optimizer history' } : { text: '—', cls: 'frozen', title: 'its own storage: not tied' };
    return { text: `→ ${r}${name(Number(r))}`, swatch: groupColor(g), title: `shares slot ${r}'s storage and optimizer history` };
  }

  healthCell(i) {
    const u = this.stats.ofSlot(i, 'unhealthy');
    if (u === null || u === undefined) return { text: '' };
    if (!u) return { text: 'ok' };
    const parts = [];
    const nan = this.stats.ofSlot(i, 'nan'), inf = this.stats.ofSlot(i, 'inf'), neg = this.stats.ofSlot(i, 'negative');
    if (nan) parts.push(`${count(nan)} NaN`);
    if (inf) parts.push(`${count(inf)} inf`);
    if (neg) parts.push(`${count(neg)} v<0`);
    return { text: parts.join(', ') || `${count(u)} unhealthy`, cls: 'unhealthy', title: 'NaN, infinity or a negative second moment' };
  }

  /** A new file: columns, filters and sort reset. */
  reset() {
    this.filter = 'all';
    this.search = '';
    this.sort = null;
    this.searchBox.value = '';
    for (const b of this.filters.children) b.setAttribute('aria-pressed', String(b.dataset.filter === 'all'));
    this.table.setColumns(this.columns(!!this.store.stateFile));
    this.table.selected = -1;
    this.table.highlight = null;
    this.table.clearSort();
    this.refresh();
    this.showSelection(-1);
  }

  /** The state file came or went: the θ column with it. */
  updateColumns() {
    this.table.setColumns(this.columns(!!this.store.stateFile));
    this.refresh();
  }

  setFilter(filter) {
    this.filter = filter;
    for (const x of this.filters.children) x.setAttribute('aria-pressed', String(x.dataset.filter === filter));
    if (filter === 'unhealthy' && !this.stats.scanned && !this.stats.scanning) this.stats.scan('optimizer');
    this.refresh();
  }

  passes(i) {
    const c = this.cols;
    switch (this.filter) {
      case 'trainable': return c.trainable(i) === true;
      case 'frozen': return c.trainable(i) === false;
      case 'aliases': return c.sharing?.tied[i] === 1;
      case 'broken': return c.broken(i);
      case 'unhealthy': return Number(this.stats.ofSlot(i, 'unhealthy') ?? 0) > 0;
      default: return true;
    }
  }

  sortKey(i, key) {
    const c = this.cols;
    switch (key) {
      case 'name': return this.label(i);
      case 'rank': return c.rank(i) * 1e12 + Number(c.shape(i)[0] ?? 0);
      case 'size': return c.sizeApprox(i);
      case 'step': {
        const k = this.cols.entryFor(i);
        return k < 0 ? -1 : c.entryStep(k);
      }
      case 'pRms': return Number(this.stats.paramOfSlot(i, 'rms') ?? -1);
      default: return Number(this.stats.ofSlot(i, key) ?? -1);
    }
  }

  refresh() {
    const c = this.cols;
    if (!c) return;
    const n = c.n;
    const q = this.search.trim().toLowerCase();
    const statsMissing = this.filter === 'unhealthy' && !this.stats.scanned;
    let order;
    if (this.filter === 'all' && !q) {
      order = new Int32Array(n);
      for (let i = 0; i < n; i++) order[i] = i;
    } else {
      const out = new Int32Array(n);
      let m = 0;
      for (let i = 0; i < n; i++) {
        if (!statsMissing && !this.passes(i)) continue;
        if (statsMissing) continue;
        if (q && !this.label(i).toLowerCase().includes(q) && !c.shapeText(i).includes(q)) continue;
        out[m++] = i;
      }
      order = out.slice(0, m);
    }
    if (this.sort && this.sort.key !== 'slot') {
      const { key, dir } = this.sort;
      if (key === 'name') {
        const names = new Array(n);
        for (const i of order) names[i] = this.label(i);
        order.sort((a, b) => (names[a] < names[b] ? -1 : names[a] > names[b] ? 1 : a - b) * dir);
      } else {
        const keys = new Float64Array(n);
        for (const i of order) keys[i] = this.sortKey(i, key);
        order.sort((a, b) => (keys[a] - keys[b] || a - b) * dir);
      }
    } else if (this.sort?.dir === -1) order.reverse();
    this.table.setOrder(order);
    const countEl = this.countEl;
    countEl.replaceChildren();
    if (statsMissing) {
      countEl.append(this.stats.scanning
        ? 'statistics are being computed…'
        : 'statistics not computed yet: ', this.stats.scanning ? '' : button('Compute statistics', { cls: 'link', testid: 'compute-stats', onClick: () => this.stats.scan('optimizer') }));
      countEl.dataset.state = 'no-stats';
    } else {
      countEl.textContent = order.length === n ? plural(n, 'slot') : `${count(order.length)} of ${plural(n, 'slot')}`;
      delete countEl.dataset.state;
    }
  }

  /** No file (or none of this kind): no rows. */
  clear() {
    this.table.selected = -1;
    this.table.setOrder(new Int32Array(0));
  }

  select(i) {
    this.table.select(i);
    this.showSelection(i);
  }

  /** The selection line: the full name and the facts of the selected slot. */
  showSelection(i) {
    const line = this.selectionLine;
    const c = this.cols;
    if (!c || i < 0 || i >= c.n) {
      line.textContent = 'Select a slot (click a row or a mark in the map; arrow keys move) to see its full name and statistics.';
      line.classList.remove('has');
      return;
    }
    line.classList.add('has');
    const t = c.trainable(i);
    const r = c.rep(i);
    const parts = [`slot ${i}`];
    if (this.label(i)) parts.push(this.label(i));
    parts.push(c.shapeText(i), `${count(c.size(i))} elements`, t === undefined ? 'trainability not read' : t ? 'trainable' : 'frozen');
    if (c.broken(i)) parts.push(`broken tie to ${r === null ? 'nothing' : `slot ${r}`}`);
    else if (r !== null && r !== undefined && r !== i) parts.push(`shares slot ${r}${this.label(Number(r)) ? ` (${this.label(Number(r))})` : ''}`);
    line.replaceChildren(testid(el('strong', '', parts.slice(0, this.label(i) ? 2 : 1).join(' ')), 'selection-name'), ` · ${parts.slice(this.label(i) ? 2 : 1).join(' · ')}`);
  }

  render() {
    this.table.render(true);
  }
}
