// Columns for the terminal: a table's cells padded, shortened or left out to fit a width, and
// numbers written one notation per column. Shared by the CLI's texts (text.js, deepspeed-text.js).
import { terminalLine, displayWidth, middleEllipsis, wrapLine } from '../terminal.js';

/** A table's rows, header and right-aligned set without the columns `gone`. */
function without(rows, header, right, gone) {
  const keep = (_, j) => !gone.has(j);
  const moved = (j) => j - [...gone].filter((g) => g < j).length;
  return { rows: rows.map((r) => r.filter(keep)), header: header.filter(keep), right: new Set([...right].filter((j) => !gone.has(j)).map(moved)) };
}

/** The narrowest a shortened name or path column gets; with less room it is left out. */
const MIN_CELL = 10;

const padEnd = (c, w) => c + ' '.repeat(Math.max(0, w - displayWidth(c)));
const padStart = (c, w) => ' '.repeat(Math.max(0, w - displayWidth(c))) + c;

/**
 * Lines of columns padded to their widest cell; the columns in `right` are right-aligned.
 * `fit` ({width, shrink, key, what, shown, short, optional, shorten}): lines wider than `width`
 * first take the short headers `short` ({column: header}) and leave out the `optional` columns
 * that are empty in every row (never `shrink` or `key`), then shorten column `shrink` (names,
 * paths) to the room left with `shorten(cell, room)` (default shortName: a name by its last
 * blocks), or leave it out when less than MIN_CELL is left; each cell shortened or left out is
 * then listed in full below the table, by its row's `key` column, once per output (`shown`: the
 * keys already listed in full above).
 */
export function table(rows, header, right, fit = null) {
  // escaped first (a name may hold control characters), so the widths are what is shown
  rows = rows.map((r) => r.map((c) => terminalLine(c)));
  const widthsOf = (rs, hs) => {
    const widths = hs.map((h) => displayWidth(h));
    for (const r of rs) r.forEach((c, k) => (widths[k] = Math.max(widths[k], displayWidth(c))));
    return widths;
  };
  let widths = widthsOf(rows, header);
  const total = (ws) => ws.reduce((a, b) => a + b, 0) + 2 * (ws.length - 1);
  const full = [];   // [key, cell] of every cell not shown whole
  if (fit && total(widths) > fit.width) {
    header = header.map((h, j) => fit.short?.[j] ?? h);
    const empty = new Set((fit.optional ?? []).filter((j) => rows.every((r) => r[j] === '')));
    if (empty.size) {
      ({ rows, header, right } = without(rows, header, right, empty));
      // the shortened and key columns move left past the ones left out
      const moved = (j) => j - [...empty].filter((g) => g < j).length;
      fit = { ...fit, shrink: moved(fit.shrink), key: moved(fit.key) };
    }
    widths = widthsOf(rows, header);
  }
  let under = '';   // the prefix every name shown shares, said once above the table
  if (fit && total(widths) > fit.width) {
    const k = fit.shrink;
    const whole = rows.map((r) => r[k]);
    under = commonPrefix(whole);
    if (under) {
      rows = rows.map((r) => r.map((c, j) => (j === k && c !== '' ? c.slice(under.length) : c)));
      widths = widthsOf(rows, header);
    }
    const room = fit.width - (total(widths) - widths[k]);
    const cut = (c) => displayWidth(c) > room;
    rows.forEach((r, i) => { if (room < MIN_CELL ? r[k] !== '' : cut(r[k])) full.push([r[fit.key], whole[i]]); });
    if (room < MIN_CELL) {
      // no name shown: no prefix to say above them (each is listed in full below)
      ({ rows, header, right } = without(rows, header, right, new Set([k])));
      under = '';
    } else {
      const shorten = fit.shorten ?? shortName;
      rows = rows.map((r) => r.map((c, j) => (j === k ? shorten(c, room) : c)));
    }
    widths = widthsOf(rows, header);
  }
  const line = (r) => r.map((c, k) => (right.has(k) ? padStart(String(c), widths[k]) : padEnd(String(c), widths[k]))).join('  ').trimEnd();
  const out = under ? [...wrapLine(`${fit.what} under ${under}`, fit.width), line(header)] : [line(header)];
  for (const r of rows) out.push(line(r));   // a loop: no spreading a million lines
  const missing = full.filter(([key]) => !fit.shown?.has(key));
  if (missing.length) {
    out.push('', `${fit.what} in full (shortened above or left out for room):`);
    const kw = missing.reduce((w, [key]) => Math.max(w, displayWidth(key)), 0);   // no spread: a million rows
    for (const [key, cell] of missing) {
      // one too long for the line: the key, then the cell whole on a line of its own
      for (const l of wrapLine(`  ${padStart(key, kw)}  ${cell}`, fit.width, ' '.repeat(kw + 4))) out.push(l);
      fit.shown?.add(key);
    }
  }
  return out;
}

/** The longest start every non-empty cell shares, ending at a '.' or '/' (a module or a
 *  folder), and leaving something of each; '' for fewer than two cells. */
export function commonPrefix(cells) {
  let prefix = null, count = 0;
  for (const c of cells) {
    if (c === '') continue;
    count++;
    if (prefix === null) { prefix = c; continue; }
    let i = 0;
    while (i < prefix.length && i < c.length && prefix[i] === c[i]) i++;
    prefix = prefix.slice(0, i);
    if (!prefix) return '';
  }
  if (count < 2 || prefix === null) return '';
  // whole segments only, and never a whole cell
  let end = Math.max(prefix.lastIndexOf('.'), prefix.lastIndexOf('/')) + 1;
  for (const c of cells) if (c !== '' && c.length <= end) return '';
  return prefix.slice(0, end);
}

/**
 * A name shortened to `room` columns from the left, where names repeat one another, keeping
 * its last block number (a segment of digits: `h.11.attn.c_attn.weight` → `…11.attn.c_attn.weight`,
 * then `…11.…c_attn.weight`); a name with no number keeps its end (`…c_attn.weight`).
 */
export function shortName(text, room) {
  if (displayWidth(text) <= room) return text;
  // the longest end of t within w columns, from a segment's start when one fits
  const tail = (t, w, segments = true) => {
    const chars = [...t];
    let i = chars.length;
    while (i > 0 && displayWidth(chars.slice(i - 1).join('')) <= w) i--;
    const end = chars.slice(i).join('');
    const dot = end.indexOf('.');
    return segments && i > 0 && chars[i - 1] !== '.' && dot >= 0 && dot < end.length - 1 ? end.slice(dot + 1) : end;
  };
  if (room < 2) return middleEllipsis(text, room);
  const segments = text.split('.');
  let j = -1;
  for (let s = 0; s < segments.length - 1; s++) if (/^[0-9]+$/.test(segments[s])) j = s;
  const left = `…${tail(text, room - 1)}`;
  if (j < 0) return left;
  const block = segments.slice(j).join('.');   // from the number to the end
  if (displayWidth(block) + 1 <= room) return left;   // the number is in what is kept
  const number = `…${segments[j]}.…`;
  const rest = segments.slice(j + 1).join('.');
  if (displayWidth(number) + 4 > room) return middleEllipsis(text, room);
  return `${number}${tail(rest, room - displayWidth(number), false)}`;
}

/** One number column, one format: 4 significant digits, exponent form outside [1e-3, 1e5). */
export function num(x, notation = readsFixed(x) ? 'fixed' : 'exponent') {
  if (x === null || x === undefined) return '';
  if (typeof x !== 'number') return String(x);   // "NaN", "Infinity", a decimal string
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  return notation === 'fixed' ? String(Number(x.toPrecision(4))) : x.toExponential(3).replace(/\.?0+e/, 'e');
}

/** Does x read well without an exponent (|x| in [1e-3, 1e5), or one that has no digits to place)? */
function readsFixed(x) {
  if (typeof x !== 'number' || x === 0 || !Number.isFinite(x)) return true;
  const a = Math.abs(x);
  return a >= 1e-3 && a < 1e5;
}

/** The cells of columns `cols` of `rows` (numbers, null, or text) as num() writes them, one
 *  notation per column: fixed when every number of the column reads well fixed, else every one
 *  with its exponent, so that a column of ratios near 1e-3 reads 1.176e-3 above 8.407e-4, not
 *  0.001176 (NumPy prints an array the same way). In place; returns rows. */
export function numColumns(rows, cols) {
  for (const k of cols) {
    const notation = rows.every((r) => readsFixed(r[k])) ? 'fixed' : 'exponent';
    for (const r of rows) r[k] = num(r[k], notation);
  }
  return rows;
}
