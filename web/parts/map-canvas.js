// The sharing map, drawn: slots in module order along a baseline; each tie an arc from the
// owner to the slot that shares its storage, drawn above everything. Only tied groups are
// coloured (one hue per group); untied trainable slots share one neutral colour, frozen slots
// are hollow and grey, and a slot the sharing-map rule rejects is red, its arc dashed red. Slot
// indices (and names, when loaded) label the axis at a legible density. When slots are narrower
// than two pixels they are aggregated per pixel column; the view zooms (wheel, +/−) and pans
// (drag) down to single slots. The caption is HTML beside the canvas, never drawn over arcs.
//
// For tests and assistive tech the container carries data-slot-count, data-link-count,
// data-group-count, data-broken-count and (up to 500 each) data-links="alias>owner,…",
// data-broken-links, data-axis-labels and data-names (the names drawn: "slot:text" a line each).
import { canvasIn } from '../dom.js';
import { fitName } from './vtable.js';

const PAD = 14;

/** The colour of tied group g (its index among groups, in slot order). */
export function groupColor(g) {
  const hue = (200 + g * 137.508) % 360;   // the golden angle spreads neighbouring groups apart
  return `hsl(${hue.toFixed(1)} 68% 48%)`;
}

function css(name, fallback) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
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
    this.n = 0;
    this.zoom = 1;
    this.offset = 0;   // in slots: the first slot at the left edge
    this.hover = -1;
    this.selected = -1;
    this.labels = null;
    new ResizeObserver(() => this.draw()).observe(container);
    this.bindEvents();
  }

  /** cols: the file's FileColumns (reps, flags, sharing). */
  setData(cols, labels = null) {
    this.cols = cols;
    this.n = cols.n;
    this.sharing = cols.sharing;
    const n = this.n, sh = this.sharing;
    this.reps = new Float64Array(n);
    for (let i = 0; i < n; i++) this.reps[i] = cols.repAt(i);
    this.flags = cols.c.flags;
    const links = [], broken = [];
    for (let i = 0; i < n && (links.length <= 500 || broken.length <= 500); i++) {
      const r = this.reps[i];
      if (sh.tied[i] === 2) broken.push(`${i}>${r < 0 ? 'none' : r}`);
      else if (r >= 0 && r !== i && sh.tied[i] === 1) links.push(`${i}>${r}`);
    }
    const d = this.container.dataset;
    d.slotCount = String(n);
    d.linkCount = String(sh.links);
    d.groupCount = String(sh.groups);
    d.brokenCount = String(sh.broken.length);
    d.links = sh.links <= 500 ? links.join(',') : '';
    d.brokenLinks = sh.broken.length <= 500 ? broken.join(',') : '';
    this.canvas.setAttribute('aria-label', `${n} slots, ${sh.links} tied to an earlier slot in ${sh.groups} shared groups${sh.broken.length ? `, ${sh.broken.length} rejected by the sharing-map rule` : ''}`);
    this.zoom = 1;
    this.offset = 0;
    this.hover = this.selected = -1;
    this.setLabels(labels);
  }

  setLabels(labels) {
    this.labels = labels && labels.length ? labels : null;
    this.container.classList.toggle('with-names', !!this.labels);
    this.container.classList.toggle('no-ties', !this.sharing?.links && !this.sharing?.broken.length);
    this.draw();
  }

  isTied(i) {
    return this.sharing?.tied[i] === 1;
  }

  isBroken(i) {
    return this.sharing?.tied[i] === 2;
  }

  /** The slots sharing storage with slot i (its group), or just i. */
  groupOf(i) {
    return this.cols ? this.cols.groupMembers(i) : new Set();
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

  resetZoom() {
    this.zoom = 1;
    this.offset = 0;
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
    c.addEventListener('dblclick', () => this.resetZoom());
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
    const c = canvasIn(this.canvas, this.container);
    if (!c) return;
    const { g } = c;
    this.width = c.width;
    this.height = c.height;
    if (!this.n) return;
    const fg = css('--fg', '#222'), muted = css('--muted', '#666'), frozen = css('--frozen', '#999');
    const neutral = css('--neutral', '#8a9bb4'), bad = css('--bad', '#b3261e'), line = css('--line', '#ddd');
    const first = Math.max(0, Math.floor(this.offset)), last = Math.min(this.n, Math.ceil(this.offset + this.visibleSlots));
    const slotPx = (this.width - 2 * PAD) / this.visibleSlots;
    const names = this.labels ? (slotPx >= 64 ? 22 : 78) : 0;   // level names need one line, rotated ones more
    const base = this.height - 36 - names;   // the marks hang below the baseline, labels below them
    const markH = 12;
    const focus = this.groupOf(this.hover >= 0 ? this.hover : this.selected);
    const sh = this.sharing;
    const colorOf = (i) => (sh.tied[i] === 2 ? bad : this.flags[i] !== 1 ? frozen : sh.group[i] >= 0 ? groupColor(sh.group[i]) : neutral);

    // 1. Slot marks: one per slot when they are wide enough, else aggregated per pixel column.
    if (slotPx >= 2) {
      const w = Math.max(1, Math.min(slotPx - (slotPx > 4 ? 2 : 1), 16));
      for (let i = first; i < last; i++) {
        const x = this.x(i);
        if (i >= this.flags.length) {   // trainability not read: a dashed outline, neither frozen nor trainable
          g.strokeStyle = muted;
          g.lineWidth = 1;
          g.setLineDash([2, 2]);
          g.strokeRect(x - w / 2 + 0.5, base + 2.5, Math.max(1, w - 1), markH - 1);
          g.setLineDash([]);
        } else if (this.flags[i] !== 1 && sh.tied[i] !== 2) {
          g.strokeStyle = frozen;
          g.lineWidth = 1;
          g.strokeRect(x - w / 2 + 0.5, base + 2.5, Math.max(1, w - 1), markH - 1);
        } else {
          g.fillStyle = colorOf(i);
          g.fillRect(x - w / 2, base + 2, w, markH);
        }
        if (focus.has(i) || i === this.selected) {
          g.fillStyle = fg;
          g.fillRect(x - w / 2, base + markH + 4, w, 3);
        }
      }
    } else {
      for (let px = PAD; px < this.width - PAD; px++) {
        const a = this.slotAt(px);
        if (a < 0) continue;
        const b = Math.min(this.n - 1, Math.max(a, this.slotAt(px + 1) - 1));
        let nFrozen = 0, total = 0, tiedGroup = -1, anyBroken = false;
        for (let i = a; i <= b; i++, total++) {
          if (sh.tied[i] === 2) anyBroken = true;
          else if (i < this.flags.length && this.flags[i] !== 1) nFrozen++;
          else if (tiedGroup < 0 && sh.group[i] >= 0) tiedGroup = sh.group[i];
        }
        const hFrozen = (markH * nFrozen) / Math.max(1, total);
        g.fillStyle = frozen;
        g.fillRect(px, base + 2 + markH - hFrozen, 1, hFrozen);
        g.fillStyle = anyBroken ? bad : tiedGroup >= 0 ? groupColor(tiedGroup) : neutral;
        g.fillRect(px, base + 2, 1, markH - hFrozen);
        if (anyBroken) {
          g.fillStyle = bad;
          g.fillRect(px, base + markH + 4, 1, 3);
        }
      }
    }

    // 2. Axis: slot indices. Tied and broken slots are labelled first (in their colour), then
    //    every `step` slots (1, 2, 5, 10, …) where there is room. No label overlaps another or
    //    leaves the canvas: one at an edge moves inward, its tick stays under its slot.
    g.font = '11px system-ui, sans-serif';
    g.textBaseline = 'alphabetic';
    g.textAlign = 'left';
    const taken = new Uint8Array(Math.ceil(this.width) + 2);   // pixel columns holding a label
    const placed = [];
    const place = (text, x) => {
      const w = Math.ceil(g.measureText(text).width);
      const left = Math.round(Math.min(this.width - w - 1, Math.max(1, x - w / 2)));
      const from = Math.max(0, left - 3), to = Math.min(taken.length - 1, left + w + 3);   // 6 px between labels
      for (let p = from; p <= to; p++) if (taken[p]) return null;
      taken.fill(1, from, to + 1);
      return { left, right: left + w };
    };
    const indexLabel = (i, color) => {
      const at = place(String(i), this.x(i));
      if (!at) return;
      g.fillStyle = color;
      g.fillRect(this.x(i) - 0.5, base + markH + 8, 1, 3);
      g.fillText(String(i), at.left, base + markH + 22);
      if (placed.length < 500) placed.push(`${i}:${at.left}-${at.right}`);
    };
    const tiedInView = [];
    for (let i = first; i < last; i++) if (sh.tied[i]) tiedInView.push(i);
    for (const i of tiedInView) indexLabel(i, sh.tied[i] === 2 ? bad : sh.group[i] >= 0 ? groupColor(sh.group[i]) : fg);
    const step = this.tickStep(slotPx, g.measureText(String(last - 1)).width + 10);
    for (let i = Math.ceil(first / step) * step; i < last; i += step) indexLabel(i, muted);
    this.container.dataset.axisLabels = placed.join(',');   // for tests: slot:left-right in CSS px
    this.container.dataset.canvasWidth = String(Math.floor(this.width));

    // 3. Names, when loaded: level under each slot when there is room, else slanted, tied slots
    //    first, then every k-th slot, 24 px apart so that slanted lines stay clear of each other;
    //    shortened to fit. A slanted name runs down to the right; one the right edge would cut
    //    (the last slots: often a tied head) runs down to the left, ending under its slot, and
    //    keeps the names whose lines would cross it away.
    const drawn = [];   // for tests: slot:the text drawn
    if (this.labels) {
      g.font = '10.5px system-ui, sans-serif';
      const font = g.font;
      const level = slotPx >= 64;
      const angle = Math.PI / 5, cos = Math.cos(angle);
      const nameTaken = new Uint8Array(Math.ceil(this.width) + 2);
      const gap = level ? slotPx / 2 - 2 : 12;   // half the room each side: a level name per slot
      const claim = (a, b) => {
        const from = Math.max(0, Math.round(a)), to = Math.min(nameTaken.length - 1, Math.round(b));
        for (let p = from; p <= to; p++) if (nameTaken[p]) return false;
        nameTaken.fill(1, from, to + 1);
        return true;
      };
      const nameAt = (i) => {
        const name = this.labels[i];
        if (!name) return;
        const x = this.x(i);
        let text = null;
        g.save();
        g.fillStyle = i === this.selected || focus.has(i) ? fg : muted;
        if (level) {
          if (claim(x - gap, x + gap)) {
            g.textAlign = 'center';
            text = fitName(name, slotPx - 8, font);
            g.fillText(text, x, base + markH + 38);
          }
        } else {
          const longest = (names - 6) / Math.sin(angle);
          const want = Math.min(longest, g.measureText(name).width);
          const right = Math.min(longest, (this.width - x) / cos), left = Math.min(longest, (x - 3) / cos);
          const flip = right < want && left > right;
          const room = flip ? left : right;
          const span = Math.min(room, want) * cos;   // how far across the line reaches
          // a line down to the left crosses any line down to the right that starts within
          // twice its reach
          if (room >= 24 && (flip ? claim(x - 2 * span - gap, x + gap) : claim(x - gap, x + gap))) {
            text = fitName(name, room, font);
            if (flip) {
              g.translate(x + 3, base + markH + 30);
              g.rotate(-angle);
              g.textAlign = 'right';
            } else {
              g.translate(x - 3, base + markH + 30);
              g.rotate(angle);
            }
            g.fillText(text, 0, 0);
          }
        }
        g.restore();
        if (text !== null && drawn.length < 500) drawn.push(`${i}:${text}`);
      };
      for (const i of tiedInView) nameAt(i);
      const every = level ? 1 : Math.max(1, Math.ceil(24 / slotPx));
      for (let i = Math.ceil(first / every) * every; i < last; i += every) nameAt(i);
      g.textAlign = 'left';
    }
    this.container.dataset.names = drawn.join('\n');

    // 4. Ties above everything: ordinary arcs, then broken ones (dashed red), then the focused group.
    const maxH = base - 8;
    const seen = slotPx < 1 ? new Set() : null;
    const arc = (a, r, color, emphasis) => {
      const x1 = this.x(r), x2 = this.x(a);
      if (seen && !emphasis) {
        const key = Math.round(x1) * 65536 + Math.round(x2);
        if (seen.has(key)) return;
        seen.add(key);
      }
      const h = Math.min(maxH, Math.max(10, Math.abs(x2 - x1) * 0.5));
      g.strokeStyle = color;
      g.beginPath();
      g.moveTo(x1, base);
      g.bezierCurveTo(x1, base - h * 1.33, x2, base - h * 1.33, x2, base);
      g.stroke();
    };
    g.globalAlpha = focus.size > 1 ? 0.25 : Math.max(0.3, Math.min(0.9, 12 / Math.sqrt(sh.links + 1)));
    g.lineWidth = 1.5;
    for (let a = first; a < this.n; a++) {   // an alias follows its owner: only a >= first can reach the view
      const r = this.reps[a];
      if (sh.tied[a] !== 1 || r < 0 || r === a || r >= last || focus.has(a)) continue;
      arc(a, r, groupColor(sh.group[a]), false);
    }
    g.globalAlpha = 1;
    g.lineWidth = 2;
    g.setLineDash([5, 3]);
    for (const a of sh.broken) {
      const r = this.reps[a];
      if (r < 0 || r >= this.n || r === a) continue;
      if (Math.max(a, r) < first || Math.min(a, r) >= last) continue;
      arc(a, r, bad, true);
    }
    g.setLineDash([]);
    g.lineWidth = 2.5;
    for (const a of focus) {
      const r = this.reps[a];
      if (sh.tied[a] === 1 && r >= 0 && r !== a) arc(a, r, groupColor(sh.group[a]), true);
    }
    if (this.zoom > 1) {
      const z = `×${this.zoom.toFixed(1)}: slots ${first}–${Math.max(first, last - 1)}`;
      g.fillStyle = muted;
      g.fillText(z, this.width - PAD - g.measureText(z).width, 12);
    }
  }

  /** Slot-index labels every step slots (1, 2, 5, 10, 20, 50, …) at least `minPx` apart. */
  tickStep(slotPx, minPx) {
    for (let e = 1; e < 1e12; e *= 10) {
      for (const m of [1, 2, 5]) if (m * e * slotPx >= minPx) return m * e;
    }
    return 1e12;
  }
}

