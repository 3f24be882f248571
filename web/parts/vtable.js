// A virtual table: only the rows in view are in the DOM, so a million slots scroll smoothly.
// Rows are data indices in a display order (filtered and sorted by the caller); cells come from
// each column's cell(index) -> {text, cls?, title?, swatch?}. A column with `fit: 'middle'`
// is shortened in the middle to its width; `fit: 'name'` (dotted parameter names) drops whole
// segments first, sparing indices and the last two ("…12.…q_proj.weight"), so names that share a
// prefix stay distinguishable; the full text is on hover. When columns do not fit, the table
// scrolls sideways and says so (`hint`: how many columns are out of view, a button to reach them).
import { el } from '../dom.js';

let measureCtx = null;
function textWidth(text, font) {
  measureCtx ??= document.createElement('canvas').getContext('2d');
  measureCtx.font = font;
  return measureCtx.measureText(text).width;
}

/** `text` shortened in the middle to fit `width` pixels in `font`. */
export function fitMiddle(text, width, font) {
  if (!text || textWidth(text, font) <= width) return text;
  let lo = 0, hi = text.length;
  while (lo < hi) {   // the most characters kept that still fit
    const mid = (lo + hi + 1) >> 1;
    const keep = mid;
    const cut = text.slice(0, Math.ceil(keep * 0.4)) + '…' + text.slice(text.length - Math.floor(keep * 0.6));
    if (textWidth(cut, font) <= width) lo = mid;
    else hi = mid - 1;
  }
  return text.slice(0, Math.ceil(lo * 0.4)) + '…' + text.slice(text.length - Math.floor(lo * 0.6));
}

/** A dotted parameter name shortened to `width`: whole segments give way first, from the left,
 *  sparing indices (block numbers) and the last two segments ("q_proj.weight"), so that names
 *  sharing a long prefix stay distinct ("…12.…q_proj.weight"); then the middle. */
export function fitName(text, width, font) {
  if (!text || textWidth(text, font) <= width) return text;
  const parts = text.split('.');
  if (parts.length > 2) {
    const dropped = new Array(parts.length).fill(false);
    const candidates = [];
    for (let k = 0; k < parts.length - 2; k++) if (!/^\d+$/.test(parts[k])) candidates.push(k);
    const render = () => {
      let out = '';
      for (let k = 0; k < parts.length; k++) {
        if (dropped[k]) {
          if (!out.endsWith('…')) out += '…';
        } else out += parts[k] + (k < parts.length - 1 ? '.' : '');
      }
      return out;
    };
    for (const k of candidates) {
      dropped[k] = true;
      const short = render();
      if (textWidth(short, font) <= width) return short;
    }
    return fitMiddle(render(), width, font);
  }
  return fitMiddle(text, width, font);
}

export class VirtualTable {
  constructor(container, { columns, rowHeight = 28, rowTestId, onSelect, onSort, label, hintEl }) {
    this.container = container;
    this.rowHeight = rowHeight;
    this.rowTestId = rowTestId;
    this.onSelect = onSelect;
    this.onSort = onSort;
    this.hintEl = hintEl;
    this.order = new Int32Array(0);
    this.selected = -1;
    this.highlight = null;   // a Set of data indices shown as a group
    this.sort = null;
    container.tabIndex = 0;
    container.setAttribute('role', 'grid');
    if (label) container.setAttribute('aria-label', label);
    container.addEventListener('scroll', () => {
      this.render();
      this.updateHint();
    }, { passive: true });
    container.addEventListener('keydown', (e) => this.key(e));
    new ResizeObserver(() => {
      this.render(true);
      this.updateHint();
    }).observe(container);
    this.setColumns(columns);
  }

  setColumns(columns) {
    this.columns = columns;
    this.template = columns.map((c) => c.width ?? '1fr').join(' ');
    this.minWidth = columns.reduce((a, c) => a + (c.min ?? 80), 0) + 10 * columns.length + 20;
    this.head = el('div', 'head');
    this.head.style.gridTemplateColumns = this.template;
    this.head.style.minWidth = `${this.minWidth}px`;
    this.head.setAttribute('role', 'row');
    for (const c of columns) {
      const b = el('button', c.num ? 'num' : '');
      b.type = 'button';
      b.textContent = c.label;
      b.setAttribute('role', 'columnheader');
      if (c.title) b.title = c.title;
      if (c.sortKey) b.addEventListener('click', () => this.toggleSort(c.sortKey));
      else b.disabled = true;
      b.dataset.key = c.sortKey ?? '';
      this.head.append(b);
    }
    this.rows = el('div', 'rows');
    this.rows.style.minWidth = `${this.minWidth}px`;
    this.container.replaceChildren(this.head, this.rows);
    this.setOrder(new Int32Array(0));   // the caller sets the rows of the new columns
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
    this.container.style.height = `${Math.min(420, 34 + 16 + Math.max(2, order.length) * this.rowHeight)}px`;
    this.render(true);
  }

  viewIndexOf(dataIndex) {
    return this.order.indexOf(dataIndex);   // only on selection: a few ms for a million rows
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
    if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
      e.preventDefault();
      this.container.scrollLeft += (e.key === 'ArrowRight' ? 1 : -1) * 120;
      return;
    }
    if (!(e.key in moves)) return;
    e.preventDefault();
    const next = Math.min(this.order.length - 1, Math.max(0, this.selected < 0 ? 0 : v + moves[e.key]));
    this.select(this.order[next], { notify: true });
  }

  /** Columns cut off on the right (or left): the container gets an edge shadow, and hintEl
   *  says how many with buttons that scroll to them. */
  updateHint() {
    const box = this.container.getBoundingClientRect();
    let right = 0, left = 0;
    for (const b of this.head.children) {
      const r = b.getBoundingClientRect();
      if (r.right > box.right - 2) right++;
      else if (r.left < box.left + 2) left++;
    }
    this.container.classList.toggle('clipped-right', right > 0);
    this.container.classList.toggle('clipped-left', left > 0);
    const hint = this.hintEl;
    if (!hint) return;
    hint.replaceChildren();
    hint.hidden = !right && !left;
    const button = (text, dir, title) => {
      const b = el('button', 'link', text);
      b.type = 'button';
      b.title = title;
      b.addEventListener('click', () => this.scrollToEnd(dir));
      return b;
    };
    const plural = (k, one) => `${k} ${one}${k === 1 ? '' : 's'}`;
    if (left) hint.append(button(`← ${plural(left, 'column')}`, -1, 'Scroll the table back'));
    if (right) {
      const b = button(`${plural(right, 'more column')} →`, 1, 'The table scrolls sideways (Shift+wheel, or ←/→ with the table focused)');
      b.setAttribute('data-testid', 'more-columns');
      hint.append(b);
    }
  }

  scrollToEnd(dir = 1) {
    this.container.scrollBy({ left: dir * this.container.clientWidth * 0.8, behavior: 'instant' });
  }

  render(force = false) {
    const h = this.rowHeight;
    const top = this.container.scrollTop;
    const first = Math.max(0, Math.floor(top / h) - 5);
    const last = Math.min(this.order.length, Math.ceil((top + this.container.clientHeight) / h) + 5);
    if (!force && first === this.first && last === this.last) return;
    this.first = first;
    this.last = last;
    // Widths of the columns that shorten their text, measured once per render.
    const fits = this.columns.map((c, k) => (c.fit ? this.head.children[k]?.getBoundingClientRect().width ?? 0 : 0));
    const font = fits.some((w) => w) ? getComputedStyle(this.container).font : '';
    const frag = document.createDocumentFragment();
    for (let v = first; v < last; v++) {
      const index = this.order[v];
      const row = el('div', 'row');
      row.style.top = `${v * h}px`;
      row.style.gridTemplateColumns = this.template;
      row.setAttribute('role', 'row');
      row.setAttribute('data-testid', this.rowTestId);
      row.dataset.index = String(index);
      if (index === this.selected) row.classList.add('selected');
      else if (this.highlight?.has(index)) row.classList.add('group');
      this.columns.forEach((c, k) => {
        const cell = c.cell(index);
        const span = el('span', [c.num ? 'num' : '', c.mono ? 'mono' : '', cell.cls ?? ''].join(' ').trim());
        span.setAttribute('role', 'gridcell');
        if (cell.swatch) {
          const sw = el('i', 'swatch');
          sw.style.background = cell.swatch;
          span.append(sw);
        }
        const fit = c.fit === 'name' ? fitName : fitMiddle;
        const text = fits[k] > 0 ? fit(cell.text, (fits[k] - (cell.swatch ? 18 : 2)) * (cell.cls === 'unhealthy' ? 0.9 : 1), font) : cell.text;
        span.append(text);
        if (cell.title || text !== cell.text) span.title = cell.title || cell.text;
        if (c.fit) span.dataset.full = cell.text;
        row.append(span);
      });
      row.addEventListener('click', () => this.select(index, { scroll: false, notify: true }));
      frag.append(row);
    }
    this.rows.replaceChildren(frag);
  }
}
