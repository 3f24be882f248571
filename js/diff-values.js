// What two optimizer checkpoints of one layout hold beyond it, as diff's differences: each slot's
// step, the random counter, and each slot's moments by their first differing element (bit for
// bit). Every value is the core's: the steps and counter from its reports, the moments read
// through it one slot at a time (memory: the largest slot's moments, both files).

const bitsOf = (a) => (a.BYTES_PER_ELEMENT === 8 ? new BigUint64Array(a.buffer, a.byteOffset, a.length) : new Uint32Array(a.buffer, a.byteOffset, a.length));
const shown = (x, a) => (Number.isFinite(x) ? String(Number(x.toPrecision(a.BYTES_PER_ELEMENT === 8 ? 17 : 9))) : String(x));

/** The first index where a and b differ bit for bit, or -1. */
function firstDifference(a, b) {
  const x = bitsOf(a), y = bitsOf(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return i;
  return x.length === y.length ? -1 : n;
}

/**
 * The value differences of two open, valid optimizer checkpoints `a` and `b` (Checkpoint
 * objects) of one layout (diff calls it when no slot's layout differs): [{slot, message}], slot
 * null for the file's own fields.
 */
export async function valueDifferences(a, b) {
  if (a.kind !== 'optimizer' || b.kind !== 'optimizer') return [];
  const ra = a.report, rb = b.report;
  const out = [];
  // one kept and one not is the layout's difference ("random counter: kept vs none")
  if (ra.hasRandomCounter && rb.hasRandomCounter && String(ra.randomCounter) !== String(rb.randomCounter)) {
    out.push({ slot: null, message: `random counter: ${ra.randomCounter} vs ${rb.randomCounter}` });
  }
  const theirs = new Map(rb.entries.map((e) => [String(e.id), e]));
  const sameDtype = a.summary.dtype === b.summary.dtype;
  for (const e of ra.entries) {
    const f = theirs.get(String(e.id));
    if (!f || String(e.count) !== String(f.count)) continue;
    if (String(e.step) !== String(f.step)) out.push({ slot: Number(e.id), message: `parameter ${e.id}: step ${e.step} vs ${f.step}` });
    if (!sameDtype) continue;
    let x, y;
    try {
      x = await a.entry(e.id);
      y = await b.entry(e.id);
    } catch (err) {
      if (!(err instanceof RangeError)) throw err;
      out.push({ slot: Number(e.id), message: `parameter ${e.id}: moments not compared: ${err.message}` });
      continue;
    }
    for (const which of ['m', 'v']) {
      const i = firstDifference(x[which], y[which]);
      if (i >= 0) out.push({ slot: Number(e.id), message: `parameter ${e.id}: ${which}[${i}] ${shown(x[which][i], x[which])} vs ${shown(y[which][i], y[which])}` });
    }
  }
  return out;
}
