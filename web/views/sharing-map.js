// The sharing map, drawn: slots in module order along a baseline, each tied slot linked to its
// representative by an arc, groups coloured, frozen slots hollow and grey. Hovering a slot
// highlights its group; clicking selects it. A canvas keeps 10,000+ slots cheap to draw; when
// slots are narrower than a pixel they are aggregated per pixel column, and the view zooms
// (wheel, +/−) and pans (drag) down to single slots.
//
// For tests and assistive tech the container carries data-slot-count, data-link-count,
// data-group-count and (up to 500 links) data-links="alias>representative,…".

export function groupColor(owner) {
  const hue = (owner * 137.508) % 360;   // the golden angle spreads neighbouring groups apart
  return `hsl(${hue.toFixed(1)} 70% 50%)`;
}

export class SharingMap {
  constructor(container, { onHover, onSelect }) {
    this.container = container;
    this.onHover = onHover;
    this.onSelect = onSelect;
    this.canvas = document.createElement('canvas');
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute('role', 'img');
    container.replaceChildren(this.canvas);
    this.zoom = 1;
    this.offset = 0;   // in slots: the first slot at the left edge
    this.hover = -1;
    this.selected = -1;
    new ResizeObserver(() => this.draw()).observe(container);
    this.bindEvents();
  }

  /** reps: Float64Array of representative?(i), -1 for none; flags: Int8Array, 1 trainable,
   *  0 frozen, -1 not read. Typed arrays keep a million slots cheap. */
  setData({ reps, flags }) {
    const n = reps.length;
    this.n = n;
    this.reps = reps;
    this.flags = flags;
    // Slots whose storage is shared (an alias, or an owner with aliases), and the ties.
    this.tied = new Uint8Array(n);
    let links = 0, groups = 0;
    const sample = [];
    for (let i = 0; i < n; i++) {
      const r = reps[i];
      if (r >= 0 && r !== i) {
        links++;
        if (!this.tied[r]) groups++;
        this.tied[r] = this.tied[i] = 1;
        if (sample.length <= 500) sample.push(`${i}>${r}`);
      }
    }
    this.linkCount = links;
    this.groupCount = groups;
    this.groupCache = null;
    const d = this.container.dataset;
    d.slotCount = String(n);
    d.linkCount = String(links);
    d.groupCount = String(groups);
    d.links = links <= 500 ? sample.join(',') : '';
    this.canvas.setAttribute('aria-label', `${n} slots, ${links} tied to an earlier slot, in ${groups} shared groups`);
    this.zoom = 1;
    this.offset = 0;
    this.hover = this.selected = -1;
    this.draw();
  }

  isTied(i) {
    return this.tied[i] === 1;
  }

  /** The slots sharing storage with slot i (its group), or just i: one scan, cached. */
  groupOf(i) {
    if (i < 0 || i >= this.n) return new Set();
    const r = this.reps[i];
    const owner = r < 0 ? i : r;
    if (this.groupCache?.owner === owner) return this.groupCache.members;
    const members = new Set([i]);
    if (this.tied[owner]) for (let j = owner; j < this.n; j++) if (this.reps[j] === owner) members.add(j);
    this.groupCache = { owner, members };
    return members;
  }

  get visibleSlots() {
    return this.n / this.zoom;
  }

  x(i) {
    const w = this.width - 2 * PAD;
    return PAD + ((i + 0.5 - this.offset) / this.visibleSlots) * w;
  }

  slotAt(px) {
    const w = this.width - 2 * PAD;
    const i = Math.floor(this.offset + ((px - PAD) / w) * this.visibleSlots);
    return i >= 0 && i < this.n ? i : -1;
  }

  clampOffset() {
    this.offset = Math.min(Math.max(0, this.offset), Math.max(0, this.n - this.visibleSlots));
  }

  zoomAt(factor, px) {
    if (!this.n) return;
    const w = this.width - 2 * PAD;
    const anchor = this.offset + ((px - PAD) / w) * this.visibleSlots;
    this.zoom = Math.min(Math.max(1, this.zoom * factor), Math.max(1, this.n / 8));
    this.offset = anchor - ((px - PAD) / w) * this.visibleSlots;
    this.clampOffset();
    this.draw();
  }

  setSelected(i, { reveal = true } = {}) {
    this.selected = i;
    if (reveal && i >= 0 && (i < this.offset || i >= this.offset + this.visibleSlots)) {
      this.offset = i - this.visibleSlots / 2;
      this.clampOffset();
    }
    this.draw();
  }

  bindEvents() {
    const c = this.canvas;
    let drag = null;
    c.addEventListener('pointermove', (e) => {
      const px = e.offsetX;
      if (drag) {
        const w = this.width - 2 * PAD;
        this.offset = drag.offset - ((px - drag.x) / w) * this.visibleSlots;
        drag.moved ||= Math.abs(px - drag.x) > 3;
        this.clampOffset();
        this.draw();
        return;
      }
      const i = this.slotAt(px);
      if (i !== this.hover) {
        this.hover = i;
        this.draw();
        this.onHover?.(i);
      }
    });
    c.addEventListener('pointerleave', () => {
      this.hover = -1;
      this.draw();
      this.onHover?.(-1);
    });
    c.addEventListener('pointerdown', (e) => {
      drag = { x: e.offsetX, offset: this.offset, moved: false };
      c.setPointerCapture(e.pointerId);
    });
    c.addEventListener('pointerup', (e) => {
      const wasDrag = drag?.moved;
      drag = null;
      if (!wasDrag) {
        const i = this.slotAt(e.offsetX);
        if (i >= 0) {
          this.setSelected(i, { reveal: false });
          this.onSelect?.(i);
        }
      }
    });
    c.addEventListener('wheel', (e) => {
      e.preventDefault();
      this.zoomAt(e.deltaY < 0 ? 1.25 : 0.8, e.offsetX);
    }, { passive: false });
    c.addEventListener('dblclick', () => {
      this.zoom = 1;
      this.offset = 0;
      this.draw();
    });
    c.addEventListener('keydown', (e) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
      if (step && this.n) {
        e.preventDefault();
        const i = Math.min(this.n - 1, Math.max(0, (this.selected < 0 ? -step : this.selected) + step));
        this.setSelected(i);
        this.onSelect?.(i);
        this.onHover?.(i);
      } else if (e.key === '+' || e.key === '=') this.zoomAt(1.5, this.width / 2);
      else if (e.key === '-') this.zoomAt(1 / 1.5, this.width / 2);
    });
  }

  draw() {
    const dpr = window.devicePixelRatio || 1;
    const rect = this.container.getBoundingClientRect();
    this.width = rect.width;
    this.height = rect.height;
    if (!this.width || !this.height) return;
    this.canvas.width = Math.round(this.width * dpr);
    this.canvas.height = Math.round(this.height * dpr);
    const g = this.canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    const style = getComputedStyle(document.documentElement);
    const fg = style.getPropertyValue('--fg').trim() || '#222';
    const muted = style.getPropertyValue('--frozen').trim() || '#999';
    const accent = style.getPropertyValue('--accent').trim() || '#2358c5';
    g.clearRect(0, 0, this.width, this.height);
    if (!this.n) return;
    const base = this.height - 34;
    const first = Math.max(0, Math.floor(this.offset)), last = Math.min(this.n, Math.ceil(this.offset + this.visibleSlots));
    const slotPx = (this.width - 2 * PAD) / this.visibleSlots;
    const focus = this.groupOf(this.hover >= 0 ? this.hover : this.selected);
    let focusOwner = -1;   // a loop, not Math.min(...): a group can hold a million slots
    for (const i of focus) if (focusOwner < 0 || i < focusOwner) focusOwner = i;

    // Arcs: every tie whose ends are not both off to one side of the view. When slots are
    // narrower than a pixel, ties that land on the same pair of pixel columns are one arc.
    const maxH = base - 10;
    const seen = slotPx < 1 ? new Set() : null;
    const arc = (a, r, emphasis) => {
      const x1 = this.x(r), x2 = this.x(a);
      if (seen && !emphasis) {
        const key = Math.round(x1) * 65536 + Math.round(x2);
        if (seen.has(key)) return;
        seen.add(key);
      }
      const h = Math.min(maxH, Math.max(8, (x2 - x1) * 0.5));
      g.strokeStyle = groupColor(r);
      g.beginPath();
      g.moveTo(x1, base);
      g.bezierCurveTo(x1, base - h * 1.33, x2, base - h * 1.33, x2, base);
      g.stroke();
    };
    g.globalAlpha = focus.size ? 0.12 : Math.max(0.15, Math.min(0.8, 60 / Math.sqrt(this.linkCount + 1) / 6));
    g.lineWidth = 1;
    for (let a = first; a < this.n; a++) {   /* an alias follows its representative */
      const r = this.reps[a];
      if (r < 0 || r === a || r >= last || focus.has(a)) continue;
      arc(a, r, false);
    }
    g.globalAlpha = 1;
    g.lineWidth = 2;
    for (const a of focus) {
      const r = this.reps[a];
      if (r >= 0 && r !== a) arc(a, r, true);
    }

    // Slot marks: one per slot when they are wide enough, else aggregated per pixel column.
    const markH = 12;
    if (slotPx >= 2) {
      for (let i = first; i < last; i++) {
        const x = this.x(i), w = Math.max(1, Math.min(slotPx - 1, 14));
        const r = this.reps[i];
        const trainable = this.flags[i] === 1;
        if (!trainable) {
          g.strokeStyle = muted;
          g.lineWidth = 1;
          g.strokeRect(x - w / 2 + 0.5, base + 2.5, w - 1, markH - 1);
        } else {
          g.fillStyle = groupColor(r < 0 ? i : r);
          g.fillRect(x - w / 2, base + 2, w, markH);
        }
        if (focus.has(i) || i === this.selected) {
          g.fillStyle = fg;
          g.fillRect(x - w / 2, base + markH + 4, w, 3);
        }
      }
    } else {
      for (let px = PAD; px < this.width - PAD; px++) {
        const a = this.slotAt(px), b = this.slotAt(px + 1);
        if (a < 0) continue;
        let frozen = 0, tied = 0, total = 0;
        for (let i = a; i <= (b < 0 ? this.n - 1 : b) && i < this.n; i++, total++) {
          if (this.flags[i] !== 1) frozen++;
          else if (this.tied[i]) tied++;
        }
        g.fillStyle = muted;
        g.fillRect(px, base + 2, 1, (markH * frozen) / Math.max(1, total));
        g.fillStyle = accent;   /* trainable share of the column */
        g.fillRect(px, base + 2 + (markH * frozen) / Math.max(1, total), 1, (markH * (total - frozen)) / Math.max(1, total));
        if (tied) {   // a tick under columns that hold tied slots
          g.fillStyle = fg;
          g.fillRect(px, base + markH + 4, 1, 3);
        }
      }
    }

    // Axis labels: the visible slot range.
    g.fillStyle = muted;
    g.font = '11px system-ui, sans-serif';
    g.textBaseline = 'alphabetic';
    g.fillText(`slot ${first}`, PAD, this.height - 4);
    const right = `slot ${Math.max(first, last - 1)}${this.zoom > 1 ? `  (×${this.zoom.toFixed(1)})` : ''}`;
    g.fillText(right, this.width - PAD - g.measureText(right).width, this.height - 4);
    if (focusOwner >= 0 && focus.size > 1) {
      const text = `group of slot ${focusOwner}: ${focus.size} slots share one optimizer history`;
      g.fillStyle = fg;
      g.fillText(text, Math.max(PAD, (this.width - g.measureText(text).width) / 2), 14);
    }
  }
}

const PAD = 12;
