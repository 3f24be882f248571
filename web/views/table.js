// A virtual table: only the rows in view are in the DOM, so a million slots scroll smoothly.
// Rows are data indices in a display order (filtered and sorted by the caller); cells come
// from each column's cell(index) -> {text, cls?, title?, swatch?}.

export class VirtualTable {
  constructor(container, { columns, rowHeight = 28, rowTestId, onSelect, onSort, label }) {
    this.container = container;
    this.columns = columns;
    this.rowHeight = rowHeight;
    this.rowTestId = rowTestId;
    this.onSelect = onSelect;
    this.onSort = onSort;
    this.order = new Int32Array(0);
    this.selected = -1;
    this.highlight = null;   // a Set of data indices shown as a group
    this.sort = null;
    container.replaceChildren();
    container.tabIndex = 0;
    container.setAttribute('role', 'grid');
    if (label) container.setAttribute('aria-label', label);
    const template = columns.map((c) => c.width ?? '1fr').join(' ');
    this.head = el('div', 'head');
    this.head.style.gridTemplateColumns = template;
    this.head.setAttribute('role', 'row');
    for (const c of columns) {
      const b = el('button', c.num ? 'num' : '');
      b.type = 'button';
      b.textContent = c.label;
      b.setAttribute('role', 'columnheader');
      if (c.sortKey) b.addEventListener('click', () => this.toggleSort(c.sortKey));
      else b.disabled = true;
      b.dataset.key = c.sortKey ?? '';
      this.head.append(b);
    }
    this.rows = el('div', 'rows');
    container.append(this.head, this.rows);
    this.template = template;
    container.addEventListener('scroll', () => this.render(), { passive: true });
    container.addEventListener('keydown', (e) => this.key(e));
    new ResizeObserver(() => this.render()).observe(container);
  }

  toggleSort(key) {
    const dir = this.sort?.key === key && this.sort.dir === 1 ? -1 : 1;
    this.sort = { key, dir };
    for (const b of this.head.children) {
      b.setAttribute('aria-sort', b.dataset.key === key ? (dir === 1 ? 'ascending' : 'descending') : 'none');
    }
    this.onSort?.(this.sort);
  }

  clearSort() {
    this.sort = null;
    for (const b of this.head.children) b.removeAttribute('aria-sort');
  }

  setOrder(order) {
    this.order = order;
    this.rows.style.height = `${order.length * this.rowHeight}px`;
    // Short tables shrink to their rows; long ones scroll inside a fixed height.
    this.container.style.height = `${Math.min(420, 34 + Math.max(3, order.length) * this.rowHeight)}px`;
    this.render(true);
  }

  viewIndexOf(dataIndex) {
    // Linear, but only on selection: a million-entry scan is a few milliseconds.
    return this.order.indexOf(dataIndex);
  }

  select(dataIndex, { scroll = true, notify = false } = {}) {
    this.selected = dataIndex;
    if (scroll) {
      const v = this.viewIndexOf(dataIndex);
      if (v >= 0) {
        const top = v * this.rowHeight, h = this.container.clientHeight - 32;
        if (top < this.container.scrollTop || top + this.rowHeight > this.container.scrollTop + h) {
          this.container.scrollTop = Math.max(0, top - h / 2);
        }
      }
    }
    this.render(true);
    if (notify) this.onSelect?.(dataIndex);
  }

  setHighlight(set) {
    this.highlight = set;
    this.render(true);
  }

  key(e) {
    if (!this.order.length) return;
    const v = Math.max(0, this.viewIndexOf(this.selected));
    const page = Math.max(1, Math.floor((this.container.clientHeight - 32) / this.rowHeight) - 1);
    const moves = { ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page, Home: -Infinity, End: Infinity };
    if (!(e.key in moves)) return;
    e.preventDefault();
    const next = Math.min(this.order.length - 1, Math.max(0, this.selected < 0 ? 0 : v + moves[e.key]));
    this.select(this.order[next], { notify: true });
  }

  render(force = false) {
    const h = this.rowHeight;
    const top = this.container.scrollTop;
    const first = Math.max(0, Math.floor(top / h) - 5);
    const last = Math.min(this.order.length, Math.ceil((top + this.container.clientHeight) / h) + 5);
    if (!force && first === this.first && last === this.last) return;
    this.first = first;
    this.last = last;
    const frag = document.createDocumentFragment();
    for (let v = first; v < last; v++) {
      const index = this.order[v];
      const row = el('div', 'row');
      row.style.top = `${v * h}px`;
      row.style.gridTemplateColumns = this.template;
      row.setAttribute('role', 'row');
      row.dataset.testid = this.rowTestId;
      row.setAttribute('data-testid', this.rowTestId);
      row.dataset.index = String(index);
      if (index === this.selected) row.classList.add('selected');
      else if (this.highlight?.has(index)) row.classList.add('group');
      for (const c of this.columns) {
        const cell = c.cell(index);
        const span = el('span', [c.num ? 'num' : '', c.mono ? 'mono' : '', cell.cls ?? ''].join(' ').trim());
        span.setAttribute('role', 'gridcell');
        if (cell.swatch) {
          const sw = el('i', 'swatch');
          sw.style.background = cell.swatch;
          span.append(sw);
        }
        span.append(cell.text);
        if (cell.title) span.title = cell.title;
        row.append(span);
      }
      row.addEventListener('click', () => this.select(index, { scroll: false, notify: true }));
      frag.append(row);
    }
    this.rows.replaceChildren(frag);
  }
}

export function el(tag, cls = '', text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
