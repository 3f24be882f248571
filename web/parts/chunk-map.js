// A chunk map: where a distributed checkpoint's tensor lies, drawn as its chunks over its global
// shape (docs/distributed.md), each box coloured by the rank whose file holds it. A 2-D tensor
// is rows × columns; a 1-D tensor a bar; a 0-d tensor one square; a tensor of more dims is drawn
// over its first two (the caption says so). The boxes are the core's chunks (offsets, sizes,
// file, rank), drawn as they are: nothing here checks them.

import { el, testid } from '../dom.js';

const SVG_NS = 'http://www.w3.org/2000/svg';

/** One colour a rank, cycling past the tenth; a file of no rank is grey. */
export const RANK_COLOURS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#86bc86'];
export const NO_RANK_COLOUR = '#9a9a9a';
export const rankColour = (rank) => (rank === null || rank === undefined ? NO_RANK_COLOUR : RANK_COLOURS[Number(rank) % RANK_COLOURS.length]);

/** The map's width in CSS pixels, and its height's bounds. */
const WIDTH = 160, MIN_HEIGHT = 14, MAX_HEIGHT = 96;

/**
 * The boxes of a tensor of global `shape` split in `chunks`, in the map's pixels:
 * {width, height, caption, boxes: [{x, y, w, h, chunk}]}. Rows are dim 0 and columns dim 1 (a
 * 1-D tensor: one row; a 0-d tensor: one cell); a chunk's box is its offsets and sizes there.
 */
export function chunkBoxes(shape, chunks) {
  const dims = shape.map(Number);
  const rows = dims.length >= 2 ? dims[0] : 1;
  const cols = dims.length >= 2 ? dims[1] : dims.length === 1 ? dims[0] : 1;
  const height = dims.length < 2 || rows === 0 || cols === 0 ? MIN_HEIGHT : Math.round(Math.min(MAX_HEIGHT, Math.max(MIN_HEIGHT, (WIDTH * rows) / cols)));
  const sx = cols ? WIDTH / cols : 0, sy = rows ? height / rows : 0;
  const boxes = [];
  for (const chunk of chunks) {
    const o = chunk.offsets.map(Number), s = chunk.sizes.map(Number);
    const [r0, rn, c0, cn] = dims.length >= 2 ? [o[0], s[0], o[1], s[1]] : dims.length === 1 ? [0, 1, o[0], s[0]] : [0, 1, 0, 1];
    boxes.push({ x: c0 * sx, y: r0 * sy, w: cn * sx, h: rn * sy, chunk });
  }
  const caption = dims.length === 0 ? 'one value' : dims.length === 1 ? `${dims[0]} elements` : `${rows} rows × ${cols} columns${dims.length > 2 ? ` (dims 0 and 1 of ${dims.length})` : ''}`;
  return { width: WIDTH, height, caption, boxes };
}

const svg = (tag, attrs = {}) => {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
};

/** What a chunk is, for its tooltip. */
function chunkTitle(c) {
  const where = `offsets [${c.offsets.join(', ')}], sizes [${c.sizes.join(', ')}]`;
  const rank = c.rank === null || c.rank === undefined ? 'no rank' : `rank ${c.rank}`;
  if (c.file === null) return `${where}: no storage entry`;
  return `${where}: ${c.file}, ${rank}, ${Number(c.length).toLocaleString('en-US')} bytes at byte ${Number(c.offset).toLocaleString('en-US')}`;
}

/** The chunk map of one tensor: an SVG of its chunks (data-testid chunk-map, a rect a chunk,
 *  each with data-rank), and its caption. */
export function chunkMap(shape, chunks) {
  const { width, height, caption, boxes } = chunkBoxes(shape, chunks);
  const box = testid(el('figure', 'chunk-map'), 'chunk-map');
  const pic = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img' });
  pic.setAttribute('aria-label', `${boxes.length === 1 ? 'one chunk' : `${boxes.length} chunks`} over ${caption}`);
  pic.append(svg('rect', { x: 0, y: 0, width, height, class: 'chunk-map-ground' }));
  for (const b of boxes) {
    const r = svg('rect', { x: b.x, y: b.y, width: b.w, height: b.h, fill: rankColour(b.chunk.rank), class: 'chunk' });
    r.setAttribute('data-rank', b.chunk.rank === null || b.chunk.rank === undefined ? '' : String(b.chunk.rank));
    const t = svg('title');
    t.textContent = chunkTitle(b.chunk);
    r.append(t);
    pic.append(r);
  }
  box.append(pic, el('figcaption', '', caption));
  return box;
}

/** The legend of the ranks' colours (data-testid chunk-legend, an item a rank). */
export function chunkLegend(ranks) {
  const box = testid(el('ul', 'chunk-legend'), 'chunk-legend');
  for (const r of ranks) {
    const li = testid(el('li'), 'chunk-legend-item');
    const swatch = el('span', 'swatch');
    swatch.style.background = rankColour(r);
    li.append(swatch, r === null ? 'no rank' : `rank ${r}`);
    box.append(li);
  }
  return box;
}
