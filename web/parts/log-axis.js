// A log10 value axis on a canvas, as the health chart and the run's timeline draw it: the range
// in whole decades, the y of a value, the decade grid with its labels at a legible density, and
// the axis title turned along the left edge. Values come as log10 already (null: none).
import { decade } from '../format.js';

/** A CSS custom property of the page, else `fallback`. */
export function css(name, fallback) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

/** log10 x of a positive finite number, else null. */
export const log = (x) => (typeof x === 'number' && x > 0 && Number.isFinite(x) ? Math.log10(x) : null);

/** The decades [lo, hi] (lo < hi, whole numbers) that hold `lo` and `hi` (log10 values); null
 *  when they are not finite (no value). */
export function decades(lo, hi) {
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return null;
  const a = Math.floor(lo);
  return { lo: a, hi: Math.max(a + 1, Math.ceil(hi)) };
}

/** y(v) of the range {lo, hi} between the pixels top and bottom: the pixel of the log10 value v. */
export const yOf = ({ lo, hi }, top, bottom) => (v) => bottom - ((v - lo) / (hi - lo)) * (bottom - top);

/**
 * Draw the decade grid of the range {lo, hi} between the pixels top and bottom, from x = left to
 * x = right, a label left of `left` on every decade at least `spacing` pixels apart. Returns
 * y(v): the pixel of the log10 value v.
 */
export function logAxis(g, { lo, hi }, { top, bottom, left, right, spacing = 18, text, line }) {
  const y = yOf({ lo, hi }, top, bottom);
  g.fillStyle = text;
  g.strokeStyle = line;
  g.textAlign = 'right';
  const every = Math.max(1, Math.ceil((hi - lo) / Math.max(1, (bottom - top) / spacing)));
  for (let d = lo; d <= hi; d += every) {
    g.fillText(decade(d), left - 6, y(d) + 4);
    g.beginPath();
    g.moveTo(left, y(d) + 0.5);
    g.lineTo(right, y(d) + 0.5);
    g.stroke();
  }
  g.textAlign = 'left';
  return y;
}

/** The axis title, turned a quarter, centred on y between top and bottom at x. */
export function axisTitle(g, title, x, top, bottom, color) {
  g.save();
  g.fillStyle = color;
  g.translate(x, (top + bottom) / 2);
  g.rotate(-Math.PI / 2);
  g.textAlign = 'center';
  g.fillText(title, 0, 0);
  g.restore();
}
